//! `application/vnd.kubernetes.protobuf`, as client-go speaks it: request bodies, answers, errors,
//! lists and watch frames, compared byte for byte. Request bodies are written field by field
//! here ([`Pb`]), not with the fake's encoder. Answers are shown as a wire-format tree ([`wire`]):
//! every field in the order written, with its number and value, so two answers with the same
//! tree have the same bytes, once the values that differ between servers (uid,
//! resourceVersion, times) are masked.

use super::{Env, dual};

dual!(
    a_config_map_sent_in_protobuf_is_answered_in_protobuf_with_the_real_servers_bytes,
    a_protobuf_watch_frames_each_event_with_its_length,
    errors_are_protobuf_statuses_when_protobuf_comes_first,
    custom_resources_fall_back_to_json_or_are_not_acceptable,
    a_body_that_is_not_protobuf_is_refused_in_the_decoders_words,
    a_protobuf_delete_options_body_is_read,
);

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A protobuf message written field by field, as the generated marshallers write them.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn key(mut self, n: u64, wire: u64) -> Self {
        put_varint(&mut self.0, (n << 3) | wire);
        self
    }
    fn bytes(self, n: u64, b: &[u8]) -> Self {
        let mut me = self.key(n, 2);
        put_varint(&mut me.0, b.len() as u64);
        me.0.extend_from_slice(b);
        me
    }
    fn str(self, n: u64, s: &str) -> Self {
        self.bytes(n, s.as_bytes())
    }
    fn msg(self, n: u64, m: Pb) -> Self {
        self.bytes(n, &m.0)
    }
    /// A map entry: key (1) and value (2), as Go writes each entry of a map field.
    fn entry(self, n: u64, k: &str, v: &str) -> Self {
        self.msg(n, Pb::default().str(1, k).str(2, v))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `k8s\0` and a runtime.Unknown around a message, as client-go writes a body.
fn envelope(api_version: &str, kind: &str, raw: Pb) -> Vec<u8> {
    let unknown = Pb::default()
        .msg(1, Pb::default().str(1, api_version).str(2, kind))
        .msg(2, raw)
        .str(3, "")
        .str(4, "");
    [b"k8s\0".as_slice(), &unknown.0].concat()
}

/// A ConfigMap as client-go writes it: its ObjectMeta's value fields empty but written, labels
/// and data as sorted entries.
fn config_map(name: &str) -> Vec<u8> {
    let meta = Pb::default()
        .str(1, name)
        .str(2, "")
        .str(3, "")
        .entry(11, "a", "1")
        .entry(11, "b", "2");
    let cm = Pb::default()
        .msg(1, meta)
        .entry(2, "a", "x")
        .entry(2, "z", "1");
    envelope("v1", "ConfigMap", cm)
}

/// The values that differ between two servers, as they appear in an answer.
#[derive(Default)]
struct Masks {
    strings: Vec<String>,
    varints: Vec<u64>,
}

impl Masks {
    /// The uid, resourceVersion and times of an object, read from its JSON.
    fn of(env: &Env, json: &serde_json::Value) -> Masks {
        let m = &json["metadata"];
        let mut masks = Masks {
            strings: vec![env.ns.clone()],
            varints: Vec::new(),
        };
        for key in ["uid", "resourceVersion"] {
            if let Some(s) = m[key].as_str() {
                masks.strings.push(s.to_string());
            }
        }
        let mut times = vec![m["creationTimestamp"].clone()];
        times.extend(
            m["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| f["time"].clone()),
        );
        for t in times.iter().filter_map(|t| t.as_str()) {
            let ts: jiff::Timestamp = t.parse().expect("a time");
            masks.varints.push(ts.as_second() as u64);
        }
        masks
    }
}

/// A protobuf message as a tree of its fields, in the order written: `n:"text"`, `n:{...}` for
/// a length-delimited field that is itself a message, `n:#hex` for other bytes and `n=v` for a
/// varint. Masked strings print as `"X"` and masked varints as `=T`.
fn wire(bytes: &[u8], masks: &Masks) -> String {
    let mut out = String::new();
    match bytes.strip_prefix(b"k8s\0") {
        Some(inner) => {
            out.push_str("k8s{");
            write_fields(inner, masks, &mut out);
            out.push('}');
        }
        None => write_fields(bytes, masks, &mut out),
    }
    out
}

fn write_fields(mut b: &[u8], masks: &Masks, out: &mut String) {
    let mut first = true;
    while !b.is_empty() {
        let (key, rest) = varint(b).expect("a field key");
        b = rest;
        if !first {
            out.push(' ');
        }
        first = false;
        let (n, wt) = (key >> 3, key & 7);
        match wt {
            0 => {
                let (v, rest) = varint(b).expect("a varint");
                b = rest;
                if masks.varints.contains(&v) {
                    out.push_str(&format!("{n}=T"));
                } else {
                    out.push_str(&format!("{n}={v}"));
                }
            }
            2 => {
                let (len, rest) = varint(b).expect("a length");
                let (payload, rest) = rest.split_at(len as usize);
                b = rest;
                out.push_str(&format!("{n}:{}", payload_text(payload, masks)));
            }
            1 => {
                out.push_str(&format!("{n}:#{}", hex(&b[..8])));
                b = &b[8..];
            }
            5 => {
                out.push_str(&format!("{n}:#{}", hex(&b[..4])));
                b = &b[4..];
            }
            other => panic!("wire type {other} in an answer"),
        }
    }
}

fn payload_text(payload: &[u8], masks: &Masks) -> String {
    let printable = |p: &[u8]| p.iter().all(|c| (0x20..0x7f).contains(c));
    if let Ok(s) = std::str::from_utf8(payload)
        && printable(payload)
    {
        let mut s = s.to_string();
        for m in &masks.strings {
            if s == *m {
                s = "X".into();
            }
        }
        return format!("{s:?}");
    }
    if payload.starts_with(b"k8s\0") {
        return wire(payload, masks);
    }
    if is_message(payload) {
        return format!("{{{}}}", wire(payload, masks));
    }
    format!("#{}", hex(payload))
}

/// Whether bytes parse, to the end, as protobuf fields of wire types 0, 1, 2 and 5.
fn is_message(mut b: &[u8]) -> bool {
    while !b.is_empty() {
        let Some((key, rest)) = varint(b) else {
            return false;
        };
        b = rest;
        if key >> 3 == 0 {
            return false;
        }
        let skip = match key & 7 {
            0 => match varint(b) {
                Some((_, rest)) => {
                    b = rest;
                    continue;
                }
                None => return false,
            },
            1 => 8,
            5 => 4,
            2 => match varint(b) {
                Some((len, rest)) => {
                    b = rest;
                    len as usize
                }
                None => return false,
            },
            _ => return false,
        };
        if skip > b.len() {
            return false;
        }
        b = &b[skip..];
    }
    true
}

fn varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, &b[i + 1..]));
        }
    }
    None
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// The object as JSON, for its masks.
async fn json_of(env: &Env, path: &str) -> serde_json::Value {
    let raw = env
        .raw_with("GET", path, &[("accept", "application/json")], "")
        .await;
    assert_eq!(raw.code, 200, "{path}: {}", raw.text);
    raw.body
}

const CONFIG_MAP: &str = r#"k8s{1:{1:"v1" 2:"ConfigMap"} 2:{1:{1:"cm" 2:"" 3:"X" 4:"" 5:"X" 6:"X" 7=0 8:{1=T 2=0} 11:{1:"a" 2:"1"} 11:{1:"b" 2:"2"} 17:{1:"pb" 2:"Update" 3:"v1" 4:{1=T 2=0} 6:"FieldsV1" 7:{1:"{\"f:data\":{\".\":{},\"f:a\":{},\"f:z\":{}},\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{},\"f:b\":{}}}}"} 8:""}} 2:{1:"a" 2:"x"} 2:{1:"z" 2:"1"}} 3:"" 4:""}"#;

async fn a_config_map_sent_in_protobuf_is_answered_in_protobuf_with_the_real_servers_bytes(
    env: Env,
) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let created = env
        .raw_with(
            "POST",
            &format!("{base}?fieldManager=pb"),
            &[("content-type", PROTOBUF), ("accept", PROTOBUF)],
            config_map("cm"),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    assert_eq!(created.headers["content-type"], PROTOBUF);
    let json = json_of(&env, &format!("{base}/cm")).await;
    // What the JSON answer shows is what the protobuf body said.
    assert_eq!(json["data"], serde_json::json!({"a": "x", "z": "1"}));
    assert_eq!(
        json["metadata"]["labels"],
        serde_json::json!({"a": "1", "b": "2"})
    );
    let masks = Masks::of(&env, &json);
    assert_eq!(wire(&created.bytes, &masks), CONFIG_MAP);

    let got = env
        .raw_with("GET", &format!("{base}/cm"), &[("accept", PROTOBUF)], "")
        .await;
    assert_eq!(got.code, 200);
    assert_eq!(wire(&got.bytes, &masks), CONFIG_MAP);

    // client-go's Accept: protobuf, then anything.
    let listed = env
        .raw_with(
            "GET",
            &format!("{base}?fieldSelector=metadata.name%3Dcm"),
            &[("accept", "application/vnd.kubernetes.protobuf, */*")],
            "",
        )
        .await;
    assert_eq!(listed.code, 200);
    assert_eq!(listed.headers["content-type"], PROTOBUF);
    // The list's resourceVersion is the store's at the moment of the list: on the shared control
    // plane other tests' writes move it between any two requests, so it is masked where it stands
    // rather than by a value read from another request.
    let list_rv =
        regex::Regex::new(r#"^(k8s\{1:\{1:"v1" 2:"ConfigMapList"\} 2:\{1:\{1:"" 2:)"\d+""#)
            .expect("a pattern");
    let list_wire = wire(&listed.bytes, &masks);
    let item = CONFIG_MAP
        .strip_prefix(r#"k8s{1:{1:"v1" 2:"ConfigMap"} 2:"#)
        .and_then(|s| s.strip_suffix(r#" 3:"" 4:""}"#))
        .expect("the object's message");
    assert_eq!(
        list_rv.replace(&list_wire, r#"${1}"X""#),
        format!(
            r#"k8s{{1:{{1:"v1" 2:"ConfigMapList"}} 2:{{1:{{1:"" 2:"X" 3:""}} 2:{item}}} 3:"" 4:""}}"#
        )
    );
}

async fn a_protobuf_watch_frames_each_event_with_its_length(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let created = env
        .raw_with(
            "POST",
            &format!("{base}?fieldManager=pb"),
            &[("content-type", PROTOBUF)],
            config_map("cm"),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let masks = Masks::of(&env, &json_of(&env, &format!("{base}/cm")).await);
    let req = http::Request::builder()
        .uri(format!(
            "{base}?watch=true&resourceVersion=0&fieldSelector=metadata.name%3Dcm"
        ))
        .header("accept", PROTOBUF)
        .body(kube::client::Body::from(Vec::new()))
        .expect("request builds");
    let resp = env.client.send(req).await.expect("the watch starts");
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = resp.into_body();
    let mut frame = Vec::new();
    loop {
        if frame.len() >= 4 {
            let len = u32::from_be_bytes(frame[..4].try_into().expect("4 bytes")) as usize;
            if frame.len() >= 4 + len {
                frame.truncate(4 + len);
                break;
            }
        }
        use http_body_util::BodyExt;
        let data = tokio::time::timeout(super::EVENTUALLY, body.frame())
            .await
            .expect("an event within the timeout")
            .expect("the watch is still open")
            .expect("the stream reads");
        if let Ok(data) = data.into_data() {
            frame.extend_from_slice(&data);
        }
    }
    assert_eq!(
        wire(&frame[4..], &masks),
        format!(r#"1:"ADDED" 2:{{1:{CONFIG_MAP}}}"#)
    );
}

async fn errors_are_protobuf_statuses_when_protobuf_comes_first(env: Env) {
    let missing = format!("/api/v1/namespaces/{}/configmaps/nope", env.ns);
    let masks = Masks::default();
    let raw = env
        .raw_with(
            "GET",
            &missing,
            &[("accept", "application/vnd.kubernetes.protobuf, */*")],
            "",
        )
        .await;
    assert_eq!(raw.code, 404);
    assert_eq!(raw.headers["content-type"], PROTOBUF);
    assert_eq!(
        wire(&raw.bytes, &masks),
        r#"k8s{1:{1:"v1" 2:"Status"} 2:{1:{1:"" 2:"" 3:""} 2:"Failure" 3:"configmaps \"nope\" not found" 4:"NotFound" 5:{1:"nope" 2:"" 3:"configmaps" 5=0 6:""} 6=404} 3:"" 4:""}"#
    );
    // JSON first: a JSON Status.
    let raw = env
        .raw_with(
            "GET",
            &missing,
            &[(
                "accept",
                "application/json, application/vnd.kubernetes.protobuf",
            )],
            "",
        )
        .await;
    assert_eq!(raw.code, 404);
    assert_eq!(raw.body["reason"], "NotFound");
}

async fn custom_resources_fall_back_to_json_or_are_not_acceptable(env: Env) {
    let group = env.create_open_widgets("protobuf").await;
    let base = format!("/apis/{group}/v1/namespaces/{}/widgets", env.ns);
    let created = env
        .raw(
            "POST",
            &base,
            "application/json",
            serde_json::json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "w"}})
                .to_string(),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let one = format!("{base}/w");
    let fallback = env
        .raw_with(
            "GET",
            &one,
            &[(
                "accept",
                "application/vnd.kubernetes.protobuf, application/json",
            )],
            "",
        )
        .await;
    assert_eq!(fallback.code, 200);
    assert_eq!(fallback.headers["content-type"], "application/json");
    assert_eq!(fallback.body["metadata"]["name"], "w");

    let refused = env.raw_with("GET", &one, &[("accept", PROTOBUF)], "").await;
    assert_eq!(refused.code, 406);
    assert_eq!(refused.headers["content-type"], PROTOBUF);
    assert_eq!(
        wire(&refused.bytes, &Masks::default()),
        r#"k8s{1:{1:"v1" 2:"Status"} 2:{1:{1:"" 2:"" 3:""} 2:"Failure" 3:"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf" 4:"NotAcceptable" 6=406} 3:"" 4:""}"#
    );

    // A custom resource's metadata is a built-in kind: protobuf.
    let json = json_of(&env, &one).await;
    let masks = Masks::of(&env, &json);
    let metadata = env
        .raw_with(
            "GET",
            &one,
            &[("accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")],
            "",
        )
        .await;
    assert_eq!(metadata.code, 200);
    assert_eq!(metadata.headers["content-type"], PROTOBUF);
    let tree = wire(&metadata.bytes, &masks);
    assert!(
        tree.starts_with(r#"k8s{1:{1:"meta.k8s.io/v1" 2:"PartialObjectMetadata"} 2:{1:{1:"w" 2:"" 3:"X" 4:"" 5:"X" 6:"X" 7=1 8:{1=T 2=0}"#),
        "{tree}"
    );

    // Errors about custom resources follow the first range too.
    let missing = env
        .raw_with(
            "GET",
            &format!("{base}/nope"),
            &[(
                "accept",
                "application/vnd.kubernetes.protobuf, application/json",
            )],
            "",
        )
        .await;
    assert_eq!(missing.code, 404);
    assert_eq!(missing.headers["content-type"], PROTOBUF);
}

async fn a_body_that_is_not_protobuf_is_refused_in_the_decoders_words(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let no_prefix = env.raw("POST", &base, PROTOBUF, "hello").await;
    assert_eq!(no_prefix.code, 400);
    assert_eq!(
        no_prefix.body["message"],
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (68656c6c6f)"
    );
    let garbage = env
        .raw("POST", &base, PROTOBUF, b"k8s\x00\x0a\x05garbage".to_vec())
        .await;
    assert_eq!(garbage.code, 400);
    assert_eq!(
        garbage.body["message"],
        "the object provided is unrecognized (must be of type ConfigMap): proto: illegal wireType 7 (6b3873000a0567617262616765)"
    );
    // A message cut short.
    let mut cut = config_map("cut");
    cut.truncate(cut.len() - 9);
    let cut = env.raw("POST", &base, PROTOBUF, cut).await;
    assert_eq!(cut.code, 400, "{}", cut.text);
    assert_eq!(cut.body["reason"], "BadRequest");
    // Nothing was written.
    let none = env
        .raw_with(
            "GET",
            &format!("{base}/cut"),
            &[("accept", "application/json")],
            "",
        )
        .await;
    assert_eq!(none.code, 404, "{}", none.text);
}

async fn a_protobuf_delete_options_body_is_read(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let created = env
        .raw_with(
            "POST",
            &base,
            &[("content-type", PROTOBUF)],
            config_map("cm"),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let uid = json_of(&env, &format!("{base}/cm")).await["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_string();
    // DeleteOptions' preconditions (2) with a uid (1).
    let options = |uid: &str| {
        envelope(
            "v1",
            "DeleteOptions",
            Pb::default().msg(2, Pb::default().str(1, uid)),
        )
    };
    // A precondition on another uid is a conflict: the body was read.
    let refused = env
        .raw_with(
            "DELETE",
            &format!("{base}/cm"),
            &[("content-type", PROTOBUF)],
            options("0000"),
        )
        .await;
    assert_eq!(refused.code, 409, "{}", refused.text);
    let deleted = env
        .raw_with(
            "DELETE",
            &format!("{base}/cm"),
            &[("content-type", PROTOBUF)],
            options(&uid),
        )
        .await;
    assert_eq!(deleted.code, 200, "{}", deleted.text);
}
