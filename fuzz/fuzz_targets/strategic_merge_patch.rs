//! Strategic merge patch on built-in kinds (the target's `apiVersion` and `kind` choose the patch
//! strategies): no panic, refusals are 4xx or one of upstream's unclassified 500s, and an empty
//! patch changes nothing.
//!
//! Input: the target object, a line `---`, the patch.
#![no_main]

use fake_apiserver::semantics::patch::{PatchKind, apply_patch};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tollgate_fuzz::{DELIBERATE_SERVER_ERRORS, halves};

fuzz_target!(|input: &[u8]| {
    let Some((target, patch)) = halves(input) else {
        return;
    };
    let Ok(target) = serde_json::from_slice::<Value>(target) else {
        return;
    };
    let kind = target["kind"].as_str().unwrap_or("Pod");
    let api_version = target["apiVersion"].as_str().unwrap_or("v1");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let patched = apply_patch(PatchKind::StrategicMerge, group, kind, &target, patch);
    match patched {
        Ok(patched) => assert!(patched.is_object(), "a patched object is an object"),
        Err(e) if e.code == 500 => assert!(
            DELIBERATE_SERVER_ERRORS
                .iter()
                .any(|m| e.message.starts_with(m)),
            "a 500 upstream would not give: {}",
            e.message
        ),
        Err(e) => assert!(
            (400..500).contains(&e.code),
            "refused with {}: {}",
            e.code,
            e.message
        ),
    }
    if target.is_object() {
        let unchanged = apply_patch(PatchKind::StrategicMerge, group, kind, &target, b"{}");
        assert_eq!(unchanged.ok().as_ref(), Some(&target), "an empty patch");
    }
});
