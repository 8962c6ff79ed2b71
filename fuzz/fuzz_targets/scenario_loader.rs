//! The scenario file loader: any text is a scenario or an error that names the file and, when
//! the text has lines, a line in it. No panic, no hang.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    // `file:` references are read from an empty directory: the loader's checks, not the disk's.
    let dir = std::env::temp_dir().join("tollgate-fuzz-scenarios");
    let _ = std::fs::create_dir_all(&dir);
    if let Err(e) = e2e::scenario::load::parse("fuzzed.yaml", text, Path::new(&dir)) {
        let shown = e.to_string();
        assert!(
            shown.starts_with("fuzzed.yaml:"),
            "an error without its file: {shown}"
        );
        assert!(
            !e.message.trim().is_empty(),
            "an error without a message: {shown}"
        );
        // YAML breaks lines at `\r` too.
        let lines = text.replace("\r\n", "\n").matches(['\n', '\r']).count() as u64 + 1;
        assert!(
            e.line <= lines + 1,
            "line {} of a {lines}-line file: {shown}",
            e.line
        );
    }
});
