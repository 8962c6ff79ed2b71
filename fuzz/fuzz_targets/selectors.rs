//! Label and field selectors as a client writes them in `?labelSelector=` and `?fieldSelector=`:
//! parsing never panics, a selector that parses matches without panicking, and one the parser
//! refuses is a 400 `Status` through the server.
#![no_main]

use fake_apiserver::semantics::selectors::{FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tollgate_fuzz::{Request, plain_server, runtime, send_checked};

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let labelled = json!({
        "metadata": {"name": "a", "namespace": "default", "labels": {"app": "web", "tier": "1", "k8s.io/x": ""}},
        "spec": {"nodeName": "n1", "hostNetwork": true},
        "status": {"phase": "Running"}
    });
    let label = LabelSelector::parse(text);
    if let Ok(selector) = &label {
        selector.matches(&labelled);
        selector.matches(&json!({}));
        // Parsing is deterministic and sorted: the same text, the same selector.
        assert_eq!(label, LabelSelector::parse(text));
    }
    let field = FieldSelector::parse(text);
    if let Ok(selector) = &field {
        selector.matches(&labelled);
        selector.matches_builtin(&labelled);
        selector.matches_builtin(&json!({}));
    }
    // Through the server: a refused selector is a 400 Status naming it.
    let encoded: String = url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
    runtime().block_on(async {
        let server = plain_server();
        for (param, parsed) in [
            ("labelSelector", label.is_ok()),
            ("fieldSelector", field.is_ok()),
        ] {
            let target = format!("/api/v1/namespaces/default/pods?{param}={encoded}");
            let req = Request::new("GET", &target, "", Vec::new());
            let answer = send_checked(&server, &req).await.expect("a valid request");
            if !parsed {
                assert_eq!(answer.code, 400, "{param}={text:?}: {}", answer.json());
            }
        }
    });
});
