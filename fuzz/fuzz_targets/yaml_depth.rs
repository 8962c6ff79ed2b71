//! The linear pre-read of YAML bodies for flow nesting: no panic, the line it names is in the
//! text, a lower limit finds at least what a higher one does, and a body it lets through is read
//! by serde_yaml within the fuzzer's time limit (no quadratic blow-up).
#![no_main]

use fake_apiserver::semantics::yaml_depth::{MAX_DEPTH, read, too_deep};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let lines = input.split(|b| *b == b'\n').count();
    for limit in [0, 1, 4, MAX_DEPTH] {
        if let Some(line) = too_deep(input, limit) {
            assert!((1..=lines).contains(&line), "line {line} of {lines}");
            if limit > 0 {
                assert!(
                    too_deep(input, limit - 1).is_some(),
                    "deeper than {limit}, not than {}",
                    limit - 1
                );
            }
        }
    }
    let _ = read(input, |e| e.to_string());
});
