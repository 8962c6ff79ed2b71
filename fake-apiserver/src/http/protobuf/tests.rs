use serde_json::json;

use super::schema::{SCHEMA, Schema};
use super::*;

#[test]
fn the_table_loads_with_every_kind_it_names() {
    let schema = match &*SCHEMA {
        Ok(s) => s,
        Err(e) => panic!("go_protobuf.json does not load: {e}"),
    };
    for (api_version, kind) in [
        ("v1", "Pod"),
        ("v1", "Status"),
        ("v1", "ConfigMapList"),
        ("batch/v1", "Job"),
        ("apps/v1", "Deployment"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
        ),
        ("meta.k8s.io/v1", "PartialObjectMetadataList"),
        ("v1", "DeleteOptions"),
    ] {
        assert!(
            schema.kind(api_version, kind).is_some(),
            "{api_version}/{kind}"
        );
    }
    // Tables have no protobuf form, nor do custom resources.
    assert!(schema.kind("meta.k8s.io/v1", "Table").is_none());
    assert!(schema.kind("kueue.x-k8s.io/v1beta2", "Workload").is_none());
}

/// What kube-apiserver v1.37 answers to a protobuf GET of a ConfigMap named `a` (read off the
/// reference control plane): every value field of ObjectMeta is written, empty or not, and a
/// set time is its seconds and a zero nanos.
#[test]
fn a_configmap_is_written_with_the_bytes_of_the_real_server() {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "a", "namespace": "default",
            "uid": "a29e95d4-cd09-4702-ae5c-a3c08c4cfe89",
            "resourceVersion": "212",
            "creationTimestamp": "2026-12-03T14:12:12Z"
        }
    });
    let want = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x49\x0a\x47\x0a\x01a\x12\x00\x1a\x07default\x22\x00\x2a\x24a29e95d4-cd09-4702-ae5c-a3c08c4cfe89\x32\x03212\x38\x00\x42\x08\x08\xbc\xf1\xc5\xd8\x06\x10\x00\x1a\x00\x22\x00";
    let got = document(&cm)
        .expect("a ConfigMap has a protobuf form")
        .expect("it encodes");
    assert_eq!(hex(&got), hex(want));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// A Pod with the shapes that need care: labels (a map, written sorted), a volume (inlined in
/// JSON, a message of its own in protobuf), quantities, an IntOrString, managed fields
/// (`fieldsV1` is raw JSON bytes), a pointer set to zero and a MicroTime-free time.
fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "p", "namespace": "ns",
            "labels": {"z": "1", "a": "2"},
            "creationTimestamp": "2026-12-03T14:12:12Z",
            "managedFields": [{
                "manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2026-12-03T14:12:12Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}, "f:z": {}}}}
            }]
        },
        "spec": {
            "containers": [{
                "name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}},
                "readinessProbe": {"httpGet": {"port": "http", "path": "/"}},
                "ports": [{"containerPort": 8080, "protocol": "TCP"}]
            }],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Mi"}}],
            "terminationGracePeriodSeconds": 0
        },
        "status": {"phase": "Pending"}
    })
}

#[test]
fn a_pod_reads_back_as_the_json_it_was_written_from() {
    let bytes = document(&pod()).unwrap().unwrap();
    let back = decode(&bytes, ("v1", "Pod")).expect("it decodes");
    assert_eq!(back, pod());
}

#[test]
fn a_zero_pointer_is_written_and_a_zero_value_is_not_read_back() {
    // terminationGracePeriodSeconds is a *int64 set to 0: present after the round trip; the
    // probe's periodSeconds is a value int32 whose zero Go cannot tell from absent.
    let mut with_zero = pod();
    with_zero["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = json!(0);
    let back = decode(&document(&with_zero).unwrap().unwrap(), ("v1", "Pod")).unwrap();
    assert_eq!(back["spec"]["terminationGracePeriodSeconds"], json!(0));
    assert!(
        back["spec"]["containers"][0]["readinessProbe"]
            .get("periodSeconds")
            .is_none()
    );
}

#[test]
fn a_body_without_an_envelope_or_cut_short_is_refused_in_the_decoders_words() {
    let e = decode(b"hello", ("v1", "Pod")).unwrap_err();
    assert_eq!(
        e,
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    );
    let bytes = document(&pod()).unwrap().unwrap();
    assert!(decode(&bytes[..bytes.len() - 7], ("v1", "Pod")).is_err());
    assert!(decode(b"k8s\x00\x0a\x05garbage", ("v1", "Pod")).is_err());
}

#[test]
fn an_envelope_without_a_kind_is_read_as_the_urls() {
    let mut no_kind = document(&pod()).unwrap().unwrap();
    // Re-encode with an empty TypeMeta: the body says nothing of its kind.
    let schema = Schema::get().unwrap();
    let unknown = schema.internal("Unknown").unwrap();
    let mut msg = DynamicMessage::decode(schema.message(unknown).clone(), &no_kind[4..]).unwrap();
    let type_meta = write::message(
        schema,
        schema.by_name("pkg/runtime.TypeMeta").unwrap(),
        Some(&json!({})),
    )
    .unwrap();
    msg.set_field_by_number(1, Proto::Message(type_meta));
    no_kind.truncate(4);
    msg.encode(&mut no_kind).unwrap();
    let back = decode(&no_kind, ("v1", "Pod")).unwrap();
    assert!(back.get("kind").is_none());
    assert_eq!(back["metadata"]["name"], "p");
    let e = decode(&no_kind, ("v1", "Nothing")).unwrap_err();
    assert!(e.starts_with("no kind \"Nothing\" is registered"), "{e}");
}

#[test]
fn a_watch_frame_is_its_length_then_an_event_holding_the_document() {
    let frame = watch_frame("ADDED", &pod()).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let doc = document(&pod()).unwrap().unwrap();
    // type (field 1) "ADDED", then the object (field 2), a RawExtension whose raw is the document.
    assert_eq!(&frame[4..11], b"\x0a\x05ADDED");
    assert!(frame.ends_with(&doc));
}

#[test]
fn a_custom_resource_has_no_protobuf_form() {
    let w = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w"}});
    assert!(document(&w).is_none());
}

#[test]
fn json_that_does_not_fit_the_go_type_names_the_field() {
    let mut bad = pod();
    bad["spec"]["containers"][0]["ports"][0]["containerPort"] = json!("eighty");
    let e = document(&bad).unwrap().unwrap_err();
    assert!(e.contains("containerPort"), "{e}");
}
