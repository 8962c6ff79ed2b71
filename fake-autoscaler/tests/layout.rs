//! The engine keeps every broken variant's deviation in `engine/broken.rs`: a variant named
//! anywhere else in the engine would be a deviation a reader of that file cannot see.

use std::path::Path;

#[test]
fn broken_variants_are_named_only_in_the_engines_hooks() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut offenders = vec![];
    for entry in std::fs::read_dir(&engine).expect("src/engine") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // The hooks themselves, and the tests that play every variant (`tests.rs`, `tests/`).
        if matches!(file, "broken.rs" | "tests.rs") || path.is_dir() {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        for (i, line) in text.lines().enumerate() {
            if line.contains("Broken::") {
                offenders.push(format!("{file}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "broken variants named outside engine/broken.rs:\n{}",
        offenders.join("\n")
    );
}
