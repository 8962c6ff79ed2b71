//! JSON merge patch (RFC 7386) on any JSON document: no panic, refusals are 4xx, and a patch
//! applied twice changes nothing the second time (merge patches are idempotent).
//!
//! Input: the target document, a line `---`, the patch.
#![no_main]

use fake_apiserver::semantics::patch::{PatchKind, apply_patch};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tollgate_fuzz::halves;

fuzz_target!(|input: &[u8]| {
    let Some((target, patch)) = halves(input) else {
        return;
    };
    let Ok(target) = serde_json::from_slice::<Value>(target) else {
        return;
    };
    match apply_patch(PatchKind::Merge, "", "ConfigMap", &target, patch) {
        Ok(once) => {
            assert!(once.is_object(), "a patched object is an object");
            let twice = apply_patch(PatchKind::Merge, "", "ConfigMap", &once, patch)
                .expect("a patch that applied once applies again");
            assert_eq!(once, twice, "a merge patch applied twice");
        }
        Err(e) => assert!(
            (400..500).contains(&e.code),
            "refused with {}: {}",
            e.code,
            e.message
        ),
    }
});
