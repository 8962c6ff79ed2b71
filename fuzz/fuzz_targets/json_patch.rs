//! JSON patch (RFC 6902) as kube-apiserver applies it: no panic, refusals are 4xx, a patch that
//! applied still applies with a `test` of every field of its result appended, and the target
//! is never changed.
//!
//! Input: the target document, a line `---`, the patch.
#![no_main]

use fake_apiserver::semantics::patch::{PatchKind, apply_patch};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tollgate_fuzz::halves;

fuzz_target!(|input: &[u8]| {
    let Some((target, patch)) = halves(input) else {
        return;
    };
    let Ok(target) = serde_json::from_slice::<Value>(target) else {
        return;
    };
    let before = target.clone();
    match apply_patch(PatchKind::Json, "", "ConfigMap", &target, patch) {
        Ok(patched) => {
            assert!(patched.is_object(), "a patched object is an object");
            // A patch followed by a `test` of each top-level field of its result always holds.
            if let (Ok(Value::Array(mut ops)), Some(fields)) =
                (serde_json::from_slice::<Value>(patch), patched.as_object())
            {
                for (key, value) in fields {
                    let path = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
                    ops.push(json!({"op": "test", "path": path, "value": value}));
                }
                let tested = serde_json::to_vec(&ops).expect("JSON serialises");
                let again = apply_patch(PatchKind::Json, "", "ConfigMap", &target, &tested);
                assert_eq!(again.ok().as_ref(), Some(&patched), "a test of the result");
            }
        }
        Err(e) => assert!(
            (400..500).contains(&e.code),
            "refused with {}: {}",
            e.code,
            e.message
        ),
    }
    assert_eq!(target, before);
});
