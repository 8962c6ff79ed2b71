//! What legitimately differs between two servers, taken out of their answers.
//!
//! Per sequence and server: uids become `uid-1`, `uid-2`, ... in order of first appearance
//! (any other UUID in a text, such as an AdmissionReview's a message quotes, `<uuid>`);
//! names made from `generateName` become `<prefix>#1`, ...; timestamps become `<time>`; ages in
//! Tables `<age>`; tokens, certificates and keys a placeholder. A resourceVersion becomes
//! `rv-N`, where N counts the object versions the sequence saw that are not newer than it: the
//! two servers number their writes differently (and the real one's controllers write in between),
//! but each object version and each list's point in time keeps its place among this sequence's
//! writes. Continue tokens are decoded and their resourceVersion mapped the same way.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use regex::Regex;

use crate::ordered::Json;
use crate::replay::{Answer, Body};

static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$").expect("regex")
});
/// A time inside a longer text (a message quoting an object, a YAML answer).
static TIME_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)").expect("regex")
});
/// A resourceVersion quoted in a text: `ResourceVersion in precondition: 12`,
/// `\"resourceVersion\":\"12\"`, `resourceVersion: "12"`.
static RV_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(resourceVersion(?: in [a-z ]+)?[\\": (]{1,8}|resource version[: ]{1,2})(\d+)"#,
    )
    .expect("regex")
});
/// A UUID no object of the sequence carries (an AdmissionReview's uid, which a message about a
/// webhook's answer quotes): random on each server, and numbered by nothing.
static UUID_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").expect("regex")
});
static JWT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^eyJ[\w-]+\.[\w-]+\.[\w-]+$").expect("regex"));

/// Longest prefix kept of a `generateName` (apiserver's storage names generator: 63 minus the
/// five random characters).
const MAX_GENERATE_PREFIX: usize = 58;

/// Names the server makes on its own, with five random characters after these prefixes: the
/// ServiceAccount admission plugin's projected token volume.
const SERVER_MADE_PREFIXES: &[&str] = &["kube-api-access-"];

/// Normalise one server's answers to one sequence, in place. `generate_names` are the
/// `generateName` prefixes the sequence's requests sent: a refused object's made-up name shows
/// only in the error, with no `generateName` beside it.
pub fn sequence(answers: &mut [Answer], generate_names: &[String]) {
    let mut state = State {
        prefixes: generate_names
            .iter()
            .map(|p| p.chars().take(MAX_GENERATE_PREFIX).collect())
            .chain(SERVER_MADE_PREFIXES.iter().map(|p| p.to_string()))
            .collect(),
        ..State::default()
    };
    for a in answers.iter() {
        for doc in a.body.documents() {
            state.collect(doc);
        }
        // A YAML answer: its values count too (the order of its keys does not matter here).
        if let Body::Text(text) = &a.body
            && let Ok(v) = serde_yaml::from_str::<serde_json::Value>(text)
            && let Ok(doc) = Json::parse(v.to_string().as_bytes())
        {
            state.collect(&doc);
        }
    }
    state.rvs = state.object_rvs.iter().copied().collect();
    for a in answers.iter_mut() {
        state.age_columns.borrow_mut().clear();
        for doc in a.body.documents_mut() {
            state.rewrite(doc, None);
        }
        if let Body::Text(text) = &mut a.body {
            *text = state.replace_in_text(text);
        }
    }
}

#[derive(Default)]
struct State {
    object_rvs: BTreeSet<u64>,
    rvs: Vec<u64>,
    /// Raw value -> placeholder, for uids and generated names (also replaced inside messages).
    names: HashMap<String, String>,
    uids: usize,
    ips: usize,
    generated: HashMap<String, usize>,
    prefixes: Vec<String>,
    /// The Age columns of the last Table seen in the answer being rewritten.
    age_columns: RefCell<Vec<usize>>,
}

impl State {
    /// First pass: every object version the sequence saw, and every uid and generated name in
    /// order of appearance.
    fn collect(&mut self, doc: &Json) {
        match doc {
            Json::Object(members) => {
                if let Some(meta @ Json::Object(_)) = doc.get("metadata")
                    && (meta.get("name").is_some() || meta.get("uid").is_some())
                {
                    if let Some(rv) = meta.get("resourceVersion").and_then(rv_number) {
                        self.object_rvs.insert(rv);
                    }
                    if let (Some(prefix), Some(name)) = (
                        meta.get("generateName").and_then(Json::as_str),
                        meta.get("name").and_then(Json::as_str),
                    ) {
                        let prefix: String = prefix.chars().take(MAX_GENERATE_PREFIX).collect();
                        self.generated_name(&prefix, name);
                    }
                }
                for (k, v) in members {
                    // An allocated ClusterIP is chosen at random by the real server.
                    if k == "clusterIP" || k == "clusterIPs" {
                        let ips = match v {
                            Json::Array(items) => items.iter().filter_map(Json::as_str).collect(),
                            other => other.as_str().into_iter().collect::<Vec<_>>(),
                        };
                        for ip in ips {
                            if ip.contains(['.', ':']) && !self.names.contains_key(ip) {
                                self.ips += 1;
                                self.names
                                    .insert(ip.to_string(), format!("ip-{}", self.ips));
                            }
                        }
                    }
                    if let Some(text) = v.as_str() {
                        for prefix in self.prefixes.clone() {
                            self.generated_name(&prefix, text);
                        }
                    }
                    if k == "uid"
                        && let Some(uid) = v.as_str()
                        && !uid.is_empty()
                        && !self.names.contains_key(uid)
                    {
                        self.uids += 1;
                        self.names
                            .insert(uid.to_string(), format!("uid-{}", self.uids));
                    }
                    self.collect(v);
                }
            }
            Json::Array(items) => items.iter().for_each(|i| self.collect(i)),
            _ => {}
        }
    }

    /// `name` made from `prefix` by the server (five random characters after it) gets its
    /// placeholder `<prefix>#N`.
    fn generated_name(&mut self, prefix: &str, name: &str) {
        let made = name.len() == prefix.len() + 5
            && name.starts_with(prefix)
            && name[prefix.len()..]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if made && !self.names.contains_key(name) {
            let n = self.generated.entry(prefix.to_string()).or_default();
            *n += 1;
            self.names.insert(name.to_string(), format!("{prefix}#{n}"));
        }
    }

    fn rank(&self, rv: u64) -> String {
        format!("rv-{}", self.rvs.partition_point(|o| *o <= rv))
    }

    fn rewrite(&self, doc: &mut Json, key: Option<&str>) {
        match doc {
            Json::Object(members) => {
                let is_table = members
                    .iter()
                    .any(|(k, v)| k == "kind" && v.as_str() == Some("Table"));
                for (k, v) in members.iter_mut() {
                    self.rewrite(v, Some(k));
                    // managedFields keys quote uids: `k:{"uid":"..."}`.
                    if k.starts_with("k:") {
                        *k = self.replace_names(k);
                    }
                }
                if is_table {
                    blank_ages(members, &self.age_columns);
                }
            }
            Json::Array(items) => {
                items.iter_mut().for_each(|i| self.rewrite(i, key));
                if key == Some("managedFields") {
                    order_managed_fields(items);
                }
            }
            Json::String(s) => {
                *s = match key {
                    Some("resourceVersion") if rv_number(&Json::String(s.clone())).is_some() => {
                        self.rank(s.parse().unwrap_or_default())
                    }
                    Some("continue") if !s.is_empty() => self.continue_token(s),
                    // `/api` names the address the client reached, port included.
                    Some("serverAddress") => "<server address>".into(),
                    _ => self.replace_in_text(s),
                };
            }
            _ => {}
        }
    }

    /// A continue token is base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"..."}`; upstream
    /// writes it URL-safe and unpadded. The encoding is shown, since clients only echo it back.
    fn continue_token(&self, token: &str) -> String {
        let (encoding, decoded) = [
            ("url-safe unpadded base64", &URL_SAFE_NO_PAD),
            ("url-safe padded base64", &URL_SAFE),
            ("standard unpadded base64", &STANDARD_NO_PAD),
            ("standard padded base64", &STANDARD),
        ]
        .into_iter()
        .find_map(|(name, engine)| engine.decode(token).ok().map(|b| (name, b)))
        .map_or(("?", None), |(name, b)| (name, Some(b)));
        let decoded = decoded.and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        match decoded {
            Some(v) => format!(
                "continue({encoding}: v={}, rv={}, start={})",
                v["v"].as_str().unwrap_or("?"),
                v["rv"].as_u64().map_or("?".to_string(), |rv| self.rank(rv)),
                v["start"].as_str().unwrap_or("?"),
            ),
            None => "<continue token that is not base64 JSON>".to_string(),
        }
    }

    fn replace_names(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (raw, placeholder) in &self.names {
            if out.contains(raw.as_str()) {
                out = out.replace(raw.as_str(), placeholder);
            }
        }
        out
    }

    fn replace_in_text(&self, s: &str) -> String {
        if TIME.is_match(s) {
            return "<time>".into();
        }
        if JWT.is_match(s) {
            return "<token>".into();
        }
        if s.starts_with("-----BEGIN ") {
            return "<pem>".into();
        }
        if let Some(p) = self.names.get(s) {
            return p.clone();
        }
        let out = self.replace_names(s);
        let out = UUID_IN_TEXT.replace_all(&out, "<uuid>");
        let out = TIME_IN_TEXT.replace_all(&out, "<time>");
        RV_IN_TEXT
            .replace_all(&out, |c: &regex::Captures| {
                let rv = c[2]
                    .parse()
                    .map_or_else(|_| c[2].to_string(), |n| self.rank(n));
                format!("{}{rv}", &c[1])
            })
            .into_owned()
    }
}

/// Both servers sort managedFields by operation, then by the entry's time in whole seconds, then
/// by manager, apiVersion and subresource. Times are blanked, and whether two writes fell in the
/// same second is chance (a status write a controller makes just after a create lands in the
/// next second or not), so the entries are put in that order without the time.
fn order_managed_fields(entries: &mut [Json]) {
    let text = |e: &Json, k: &str| e.get(k).and_then(Json::as_str).unwrap_or("").to_string();
    entries.sort_by_cached_key(|e| {
        (
            text(e, "operation"),
            text(e, "manager"),
            text(e, "apiVersion"),
            text(e, "subresource"),
        )
    });
}

fn rv_number(v: &Json) -> Option<u64> {
    v.as_str().and_then(|s| s.parse().ok())
}

/// Table rows show an object's age (`5s`), which depends on when the request came.
/// A Table watch sends the column definitions only with its first event: the columns found last
/// are used for a Table that has none.
fn blank_ages(members: &mut [(String, Json)], last_columns: &RefCell<Vec<usize>>) {
    let found: Option<Vec<usize>> = members
        .iter()
        .find(|(k, _)| k == "columnDefinitions")
        .and_then(|(_, v)| match v {
            Json::Array(cols) if !cols.is_empty() => Some(
                cols.iter()
                    .enumerate()
                    .filter(|(_, c)| {
                        c.get("name").and_then(Json::as_str) == Some("Age")
                            || c.get("format").and_then(Json::as_str) == Some("date")
                    })
                    .map(|(i, _)| i)
                    .collect(),
            ),
            _ => None,
        });
    let age_columns = match found {
        Some(columns) => {
            *last_columns.borrow_mut() = columns.clone();
            columns
        }
        None => last_columns.borrow().clone(),
    };
    let Some((_, Json::Array(rows))) = members.iter_mut().find(|(k, _)| k == "rows") else {
        return;
    };
    for row in rows {
        let Json::Object(fields) = row else { continue };
        let Some((_, Json::Array(cells))) = fields.iter_mut().find(|(k, _)| k == "cells") else {
            continue;
        };
        for &i in &age_columns {
            if let Some(cell) = cells.get_mut(i) {
                *cell = Json::String("<age>".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> Answer {
        Answer {
            status: 200,
            headers: Vec::new(),
            body: Body::Json {
                doc: Json::parse(body.as_bytes()).expect("json"),
                newline: true,
            },
        }
    }

    fn sequence_of(answers: &mut [Answer]) {
        sequence(answers, &[]);
    }

    fn doc(a: &Answer) -> String {
        match &a.body {
            Body::Json { doc, .. } => serde_json::to_string(&doc.to_value()).expect("json"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resource_versions_become_their_place_among_the_sequences_writes() {
        // The real server's list is at 107 (its controllers wrote since); the fake's at 6.
        let mut real = vec![
            answer(r#"{"metadata":{"name":"a","resourceVersion":"100"}}"#),
            answer(r#"{"metadata":{"name":"a","resourceVersion":"104"}}"#),
            answer(r#"{"metadata":{"resourceVersion":"107"},"items":[]}"#),
        ];
        let mut fake = vec![
            answer(r#"{"metadata":{"name":"a","resourceVersion":"5"}}"#),
            answer(r#"{"metadata":{"name":"a","resourceVersion":"6"}}"#),
            answer(r#"{"metadata":{"resourceVersion":"6"},"items":[]}"#),
        ];
        sequence_of(&mut real);
        sequence_of(&mut fake);
        let real: Vec<_> = real.iter().map(doc).collect();
        let fake: Vec<_> = fake.iter().map(doc).collect();
        assert_eq!(real, fake);
        assert!(real[2].contains("rv-2"), "{real:?}");
    }

    #[test]
    fn uids_and_generated_names_are_numbered_and_replaced_inside_messages() {
        let mut a = vec![
            answer(
                r#"{"metadata":{"generateName":"job-","name":"job-x7k2p","uid":"6f1c"},"spec":{}}"#,
            ),
            answer(
                r#"{"kind":"Status","message":"Precondition failed: UID in precondition: 0000, UID in object meta: 6f1c","details":{"name":"job-x7k2p"}}"#,
            ),
        ];
        sequence_of(&mut a);
        assert!(doc(&a[0]).contains(r#""name":"job-#1""#), "{}", doc(&a[0]));
        assert!(doc(&a[0]).contains(r#""uid":"uid-1""#), "{}", doc(&a[0]));
        assert!(
            doc(&a[1]).contains("UID in object meta: uid-1"),
            "{}",
            doc(&a[1])
        );
        assert!(doc(&a[1]).contains(r#""name":"job-#1""#), "{}", doc(&a[1]));
    }

    #[test]
    fn a_uuid_no_object_carries_is_blanked_in_a_message() {
        let mut a = vec![answer(
            r#"{"kind":"Status","message":"expected response.uid=\"1b6755a7-2db5-4d26-b256-f9b2022786c4\", got \"x\""}"#,
        )];
        sequence_of(&mut a);
        assert!(
            doc(&a[0]).contains(r#"expected response.uid=\"<uuid>\""#),
            "{}",
            doc(&a[0])
        );
    }

    #[test]
    fn versions_and_times_quoted_in_messages_and_yaml_are_mapped() {
        let mut a = vec![
            answer(r#"{"metadata":{"name":"a","resourceVersion":"41"}}"#),
            answer(
                r#"{"kind":"Status","message":"Precondition failed: ResourceVersion in precondition: 41, ResourceVersion in object meta: 42 at 2026-11-24T13:09:08Z; the ResourceVersion in the precondition (41) does not match"}"#,
            ),
            Answer {
                status: 200,
                headers: Vec::new(),
                body: Body::Text(
                    "metadata:\n  name: a\n  resourceVersion: \"42\"\n  uid: 9f\n".into(),
                ),
            },
        ];
        sequence_of(&mut a);
        assert!(
            doc(&a[1])
                .contains("precondition: rv-1, ResourceVersion in object meta: rv-2 at <time>"),
            "{}",
            doc(&a[1])
        );
        assert_eq!(
            a[2].body,
            Body::Text("metadata:\n  name: a\n  resourceVersion: \"rv-2\"\n  uid: uid-1\n".into())
        );
    }

    #[test]
    fn names_made_from_a_long_or_refused_generate_name_are_numbered() {
        let long = "a".repeat(70);
        let mut a = vec![
            answer(&format!(
                r#"{{"metadata":{{"generateName":"{long}","name":"{}x7k2p"}}}}"#,
                "a".repeat(58)
            )),
            answer(
                r#"{"kind":"Status","message":"ConfigMap \"Bad_tcnrf\" is invalid","details":{"name":"Bad_tcnrf"}}"#,
            ),
            answer(
                r#"{"metadata":{"managedFields":[{"fieldsV1":{"k:{\"uid\":\"6f1c\"}":{}}}],"uid":"6f1c","name":"o"}}"#,
            ),
        ];
        sequence(&mut a, &["Bad_".to_string()]);
        assert!(
            doc(&a[0]).contains(&format!("{}#1", "a".repeat(58))),
            "{}",
            doc(&a[0])
        );
        assert!(
            doc(&a[1]).contains(r#"ConfigMap \"Bad_#1\" is invalid"#),
            "{}",
            doc(&a[1])
        );
        assert!(
            doc(&a[2]).contains(r#"k:{\"uid\":\"uid-1\"}"#),
            "{}",
            doc(&a[2])
        );
    }

    #[test]
    fn ages_in_a_table_watch_are_blanked_after_the_first_event() {
        let mut a = vec![Answer {
            status: 200,
            headers: Vec::new(),
            body: Body::Events {
                events: [
                    r#"{"type":"ADDED","object":{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Age"}],"rows":[{"cells":["a","1s"]}]}}"#,
                    r#"{"type":"ADDED","object":{"kind":"Table","columnDefinitions":[],"rows":[{"cells":["b","2s"]}]}}"#,
                ]
                .iter()
                .map(|e| Json::parse(e.as_bytes()).expect("json"))
                .collect(),
                ended: crate::replay::WatchEnd::HungUp,
            },
        }];
        sequence_of(&mut a);
        let Body::Events { events, .. } = &a[0].body else {
            panic!()
        };
        assert!(
            events[1].pretty().contains("\"<age>\""),
            "{}",
            events[1].pretty()
        );
    }

    #[test]
    fn allocated_cluster_ips_are_numbered() {
        let mut a = vec![answer(
            r#"{"spec":{"clusterIP":"10.0.0.17","clusterIPs":["10.0.0.17"],"type":"ClusterIP"}}"#,
        )];
        sequence_of(&mut a);
        assert!(
            doc(&a[0]).contains(r#""clusterIP":"ip-1","clusterIPs":["ip-1"]"#),
            "{}",
            doc(&a[0])
        );
    }

    #[test]
    fn times_and_table_ages_are_blanked() {
        let mut a = vec![answer(
            r#"{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Age"}],"rows":[{"cells":["a","5s"],"object":{"metadata":{"creationTimestamp":"2026-11-24T13:09:08Z"}}}]}"#,
        )];
        sequence_of(&mut a);
        let d = doc(&a[0]);
        assert!(d.contains(r#"["a","<age>"]"#), "{d}");
        assert!(d.contains(r#""creationTimestamp":"<time>""#), "{d}");
    }

    #[test]
    fn managed_fields_are_ordered_without_their_times() {
        // The same two writes, once in one second and once across a second boundary.
        let entries = |first: &str, second: &str| {
            format!(r#"{{"metadata":{{"name":"a","managedFields":[{first},{second}]}}}}"#)
        };
        let create = r#"{"manager":"kubectl","operation":"Update","time":"2026-11-24T13:09:08Z"}"#;
        let same = r#"{"manager":"kube-apiserver","operation":"Update","time":"2026-11-24T13:09:08Z","subresource":"status"}"#;
        let later = r#"{"manager":"kube-apiserver","operation":"Update","time":"2026-11-24T13:09:09Z","subresource":"status"}"#;
        let apply = r#"{"manager":"z","operation":"Apply","time":"2026-11-24T13:09:09Z"}"#;
        let mut a = vec![
            answer(&entries(same, create)),
            answer(&entries(create, later)),
            answer(&entries(create, apply)),
        ];
        sequence_of(&mut a);
        let managers = |a: &Answer| match &a.body {
            Body::Json { doc, .. } => match doc.pointer("/metadata/managedFields") {
                Some(Json::Array(items)) => items
                    .iter()
                    .map(|e| {
                        e.get("manager")
                            .and_then(Json::as_str)
                            .unwrap_or("")
                            .to_string()
                    })
                    .collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(managers(&a[0]), ["kube-apiserver", "kubectl"]);
        assert_eq!(managers(&a[1]), managers(&a[0]));
        // The operation still comes first: Apply entries before Update ones.
        assert_eq!(managers(&a[2]), ["z", "kubectl"]);
    }

    #[test]
    fn continue_tokens_are_decoded_and_their_version_mapped() {
        let token = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":9,"start":"b\u0000"}"#);
        let mut a = vec![
            answer(r#"{"metadata":{"name":"a","resourceVersion":"9"}}"#),
            answer(&format!(
                r#"{{"metadata":{{"resourceVersion":"9","continue":"{token}"}},"items":[]}}"#
            )),
        ];
        sequence_of(&mut a);
        assert!(
            doc(&a[1]).contains(
                "continue(url-safe unpadded base64: v=meta.k8s.io/v1, rv=rv-1, start=b\\u0000)"
            ),
            "{}",
            doc(&a[1])
        );
    }
}
