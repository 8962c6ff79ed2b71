//! Sending a sequence's requests to one server and keeping what it answered, byte for byte.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use fake_apiserver::http::protobuf;
use http_body_util::BodyExt;
use kube::Client;

use crate::corpus::{Sequence, Step, substitute};
use crate::ordered::Json;

/// The headers a client reads; the rest (dates, audit ids, flow-control uids) differ by nature.
pub const COMPARED_HEADERS: &[&str] = &["content-type", "warning", "retry-after", "location"];

/// How long a polled request (`until`) may take to show its effect on the real server.
pub const UNTIL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a watch may take to deliver the events a step waits for.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// One answer, as a client would see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Empty,
    /// A JSON document, and whether the bytes ended with a newline.
    Json {
        doc: Json,
        newline: bool,
    },
    /// Anything that is not JSON (plain-text errors, YAML, ...).
    Text(String),
    /// A watch: its events, and how the stream ended.
    Events {
        events: Vec<Json>,
        ended: WatchEnd,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEnd {
    /// The step had read the events it wanted and hung up.
    HungUp,
    /// The server closed the stream first.
    Closed,
    /// Fewer events came than the step waited for.
    TimedOut,
}

impl Body {
    pub fn documents(&self) -> Vec<&Json> {
        match self {
            Body::Json { doc, .. } => vec![doc],
            Body::Events { events, .. } => events.iter().collect(),
            _ => Vec::new(),
        }
    }

    pub fn documents_mut(&mut self) -> Vec<&mut Json> {
        match self {
            Body::Json { doc, .. } => vec![doc],
            Body::Events { events, .. } => events.iter_mut().collect(),
            _ => Vec::new(),
        }
    }
}

impl Answer {
    /// The text compared between servers, and shown in diffs.
    pub fn render(&self) -> String {
        let mut out = format!("{}\n", self.status);
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\n"));
        }
        match &self.body {
            Body::Empty => out.push_str("(no body)\n"),
            Body::Json { doc, newline } => {
                out.push_str(&doc.pretty());
                out.push('\n');
                if !newline {
                    out.push_str("(no newline at the end of the body)\n");
                }
            }
            Body::Text(t) => {
                out.push_str(t);
                out.push('\n');
            }
            Body::Events { events, ended } => {
                for e in events {
                    out.push_str(&e.pretty());
                    out.push('\n');
                }
                match ended {
                    WatchEnd::HungUp => {}
                    WatchEnd::Closed => out.push_str("(the server closed the watch)\n"),
                    WatchEnd::TimedOut => out.push_str("(no further event came)\n"),
                }
            }
        }
        out
    }
}

/// Why a sequence could not be sent (not a difference: the run itself failed).
#[derive(Debug, thiserror::Error)]
#[error("{sequence}, step {step}: {problem}")]
pub struct ReplayError {
    pub sequence: String,
    pub step: String,
    pub problem: String,
}

/// What one server answered to a sequence. A sequence stops early when a value it must save is
/// missing (the server answered something else); the steps before it still count.
#[derive(Debug)]
pub struct Replayed {
    pub answers: Vec<Answer>,
    pub stopped: Option<ReplayError>,
}

/// What kube-controller-manager writes into every new namespace, shortly after it is made.
const NAMESPACE_FILLING: &[&str] = &["configmaps/kube-root-ca.crt", "serviceaccounts/default"];

/// Create the sequence's namespace (not compared), then send each step; one answer per step.
/// With `settle`, wait first until the controllers have filled the new namespace (the real
/// server does it asynchronously; a list racing them would differ from run to run).
/// `builtins` are the variables the corpus gives every sequence beside `{ns}` and `{seq}`
/// (the webhook's). An `Err` means the server could not be talked to at all.
pub async fn sequence(
    client: &Client,
    seq: &Sequence,
    builtins: &BTreeMap<String, String>,
    settle: bool,
) -> Result<Replayed, ReplayError> {
    let ns = seq.namespace();
    let mut vars = builtins.clone();
    vars.insert("ns".to_string(), ns.clone());
    vars.insert("seq".to_string(), seq.unique_name());
    let fail = |step: String, problem: String| ReplayError {
        sequence: seq.name.clone(),
        step,
        problem,
    };
    let body = format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}"}}}}"#);
    let made = send(
        client,
        "POST",
        "/api/v1/namespaces",
        Some(("application/json", body.into_bytes())),
        &[],
    )
    .await
    .map_err(|e| fail("(its namespace)".into(), e))?;
    if made.status().as_u16() != 201 {
        return Err(fail(
            "(its namespace)".into(),
            format!("creating namespace {ns} answered {}", made.status()),
        ));
    }
    if settle {
        for object in NAMESPACE_FILLING {
            let path = format!("/api/v1/namespaces/{ns}/{object}");
            let started = tokio::time::Instant::now();
            while send(client, "GET", &path, None, &[])
                .await
                .map_err(|e| fail("(its namespace)".into(), e))?
                .status()
                != 200
                && started.elapsed() < UNTIL_TIMEOUT
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let mut answers = Vec::new();
    for (i, step) in seq.steps.iter().enumerate() {
        let answer = one(client, step, &vars)
            .await
            .map_err(|e| fail(step.label(i), e))?;
        for (var, pointer) in &step.save {
            let value = match &answer.body {
                Body::Json { doc, .. } => doc.pointer(pointer),
                _ => None,
            };
            let value = match value {
                Some(Json::String(s)) => s.clone(),
                Some(other @ (Json::Number(_) | Json::Bool(_))) => other.pretty(),
                _ => {
                    let problem = format!(
                        "save {var}: {pointer} is not in the answer (status {})",
                        answer.status
                    );
                    answers.push(answer);
                    return Ok(Replayed {
                        answers,
                        stopped: Some(fail(step.label(i), problem)),
                    });
                }
            };
            vars.insert(var.clone(), value);
        }
        answers.push(answer);
    }
    Ok(Replayed {
        answers,
        stopped: None,
    })
}

async fn one(
    client: &Client,
    step: &Step,
    vars: &BTreeMap<String, String>,
) -> Result<Answer, String> {
    let path = substitute(step.path(), vars);
    let body = match (&step.body, &step.raw) {
        (Some(v), _) => Some(substitute_json(v, vars)),
        (None, Some(raw)) => Some(substitute(raw, vars).into_bytes()),
        (None, None) => None,
    };
    let body = match (step.content_type(), body) {
        (Some(ct), Some(b)) if ct == "application/yaml" && step.body.is_some() => {
            let v: serde_json::Value = serde_json::from_slice(&b).map_err(|e| e.to_string())?;
            Some((
                ct,
                serde_yaml::to_string(&v)
                    .map_err(|e| e.to_string())?
                    .into_bytes(),
            ))
        }
        (Some(ct), Some(b)) if ct == protobuf::MEDIA_TYPE && step.body.is_some() => {
            let v: serde_json::Value = serde_json::from_slice(&b).map_err(|e| e.to_string())?;
            let encoded = protobuf::document(&v)
                .ok_or_else(|| format!("{} {} has no protobuf form", v["apiVersion"], v["kind"]))?
                .map_err(|e| format!("encoding the body in protobuf: {e}"))?;
            Some((ct, encoded))
        }
        (Some(ct), Some(b)) => Some((ct, b)),
        _ => None,
    };
    let mut headers: Vec<(String, String)> = step
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), substitute(v, vars)))
        .collect();
    if let Some(accept) = &step.accept {
        headers.push(("accept".into(), accept.clone()));
    }
    let started = tokio::time::Instant::now();
    loop {
        let resp = send(client, step.method(), &path, body.clone(), &headers).await?;
        let answer = match step.events {
            Some(n) => read_watch(resp, n).await?,
            None => read_answer(resp).await?,
        };
        let Some(until) = &step.until else {
            return Ok(answer);
        };
        if until_met(until, &answer) || started.elapsed() > UNTIL_TIMEOUT {
            return Ok(answer);
        }
        // Polling the real server while its controllers work; the fake meets it at once.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn until_met(until: &crate::corpus::Until, answer: &Answer) -> bool {
    if let Some(status) = until.status
        && answer.status != status
    {
        return false;
    }
    let Some(pointer) = &until.pointer else {
        return true;
    };
    let found = match &answer.body {
        Body::Json { doc, .. } => doc.pointer(pointer).map(Json::to_value),
        _ => None,
    };
    found == until.equals
}

fn substitute_json(v: &serde_json::Value, vars: &BTreeMap<String, String>) -> Vec<u8> {
    fn walk(v: &serde_json::Value, vars: &BTreeMap<String, String>) -> serde_json::Value {
        match v {
            serde_json::Value::String(s) => serde_json::Value::String(substitute(s, vars)),
            serde_json::Value::Array(a) => a.iter().map(|i| walk(i, vars)).collect(),
            serde_json::Value::Object(m) => m
                .iter()
                .map(|(k, v)| (k.clone(), walk(v, vars)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            other => other.clone(),
        }
    }
    serde_json::to_vec(&walk(v, vars)).expect("a JSON value serialises")
}

async fn send(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
    headers: &[(String, String)],
) -> Result<http::Response<kube::client::Body>, String> {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("user-agent", "tollgate-fidelity/v0.0.0");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
    {
        req = req.header("accept", "application/json");
    }
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let bytes = match body {
        Some((ct, b)) => {
            req = req.header("content-type", ct);
            b
        }
        None => Vec::new(),
    };
    let req = req
        .body(bytes)
        .map_err(|e| format!("building {method} {path}: {e}"))?;
    client
        .send(req.map(kube::client::Body::from))
        .await
        .map_err(|e| format!("{method} {path}: {e}"))
}

fn compared_headers(resp: &http::Response<kube::client::Body>) -> Vec<(String, String)> {
    COMPARED_HEADERS
        .iter()
        .filter_map(|name| {
            let values: Vec<&str> = resp
                .headers()
                .get_all(*name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            (!values.is_empty()).then(|| (name.to_string(), values.join(" | ")))
        })
        .collect()
}

async fn read_answer(resp: http::Response<kube::client::Body>) -> Result<Answer, String> {
    let status = resp.status().as_u16();
    let headers = compared_headers(&resp);
    let bytes: Bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?
        .to_bytes();
    let body = if bytes.is_empty() {
        Body::Empty
    } else if is_protobuf(&headers) {
        let decoded = protobuf::decode(&bytes, ("", ""));
        let again = decoded.as_ref().ok().and_then(protobuf::document);
        protobuf_body(decoded, again, &bytes)
    } else {
        match Json::parse(&bytes) {
            Ok(doc) => Body::Json {
                doc,
                newline: bytes.ends_with(b"\n"),
            },
            Err(_) => Body::Text(String::from_utf8_lossy(&bytes).into_owned()),
        }
    };
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// Whether the answer's Content-Type is protobuf (a document or a watch stream).
fn is_protobuf(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(k, v)| k == "content-type" && v.starts_with(protobuf::MEDIA_TYPE))
}

/// A protobuf document (or a watch event's message) as compared: what it decodes to, and
/// whether the fake's encoder writes that in the same bytes (`again`: its encoding of the
/// decoded JSON).
fn protobuf_json(
    decoded: Result<serde_json::Value, String>,
    again: Option<Result<Vec<u8>, String>>,
    bytes: &[u8],
) -> Result<serde_json::Value, String> {
    let decoded = decoded.map_err(|e| format!("protobuf that does not decode: {e}"))?;
    let encoder = match again {
        Some(Ok(b)) if b == bytes => "the same bytes".to_string(),
        Some(Ok(b)) => {
            let at = b.iter().zip(bytes).take_while(|(x, y)| x == y).count();
            format!(
                "other bytes: {} against {}, the first difference at byte {at}",
                b.len(),
                bytes.len()
            )
        }
        Some(Err(e)) => format!("cannot encode it: {e}"),
        None => "no protobuf form".to_string(),
    };
    Ok(serde_json::json!({"protobuf": decoded, "the fake's encoder writes": encoder}))
}

fn protobuf_body(
    decoded: Result<serde_json::Value, String>,
    again: Option<Result<Vec<u8>, String>>,
    bytes: &[u8],
) -> Body {
    match protobuf_json(decoded, again, bytes).map(|v| Json::parse(v.to_string().as_bytes())) {
        Ok(Ok(doc)) => Body::Json {
            doc,
            newline: bytes.ends_with(b"\n"),
        },
        Ok(Err(e)) => Body::Text(e.to_string()),
        Err(e) => Body::Text(e),
    }
}

/// The events of a protobuf watch stream in `buf` so far (each frame a 4-byte big-endian length
/// and a `WatchEvent`), taking the whole frames out of it.
fn protobuf_events(buf: &mut Vec<u8>, events: &mut Vec<Json>) -> Result<(), String> {
    while buf.len() >= 4 {
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if buf.len() < 4 + len {
            break;
        }
        let frame: Vec<u8> = buf.drain(..4 + len).collect();
        let message = &frame[4..];
        let decoded = protobuf::watch_event(message);
        let again = decoded.as_ref().ok().map(|e| {
            protobuf::watch_frame(e["type"].as_str().unwrap_or(""), &e["object"])
                .map(|f| f[4..].to_vec())
        });
        // A frame that does not decode is compared as what the decoder said of it.
        let event = match protobuf_json(decoded, again, message) {
            Ok(v) => Json::parse(v.to_string().as_bytes()).map_err(|e| e.to_string())?,
            Err(why) => Json::String(why),
        };
        events.push(event);
    }
    Ok(())
}

/// Read a watch until `wanted` events arrived, the server closed it, or [`WATCH_TIMEOUT`].
async fn read_watch(
    resp: http::Response<kube::client::Body>,
    wanted: usize,
) -> Result<Answer, String> {
    let status = resp.status().as_u16();
    if status != 200 {
        return read_answer(resp).await;
    }
    let headers = compared_headers(&resp);
    let framed = is_protobuf(&headers);
    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + WATCH_TIMEOUT;
    let ended = loop {
        if framed {
            protobuf_events(&mut buf, &mut events)?;
        }
        while let Some(nl) = (!framed)
            .then(|| buf.iter().position(|b| *b == b'\n'))
            .flatten()
        {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            events.push(Json::parse(&line).map_err(|e| {
                format!(
                    "a watch event is not JSON ({e}): {}",
                    String::from_utf8_lossy(&line)
                )
            })?);
        }
        if events.len() >= wanted {
            break WatchEnd::HungUp;
        }
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => break WatchEnd::TimedOut,
            Ok(None) => break WatchEnd::Closed,
            Ok(Some(Err(e))) => return Err(format!("reading the watch: {e}")),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                }
            }
        }
    };
    // An event not ended by a newline yet (the real server ends each with one).
    if !framed
        && !buf.iter().all(u8::is_ascii_whitespace)
        && let Ok(doc) = Json::parse(&buf)
    {
        events.push(doc);
    }
    // Events past the ones asked for depend on how the bytes were framed.
    events.truncate(wanted);
    Ok(Answer {
        status,
        headers,
        body: Body::Events { events, ended },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map() -> serde_json::Value {
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "v"}})
    }

    fn encoded(v: &serde_json::Value) -> Vec<u8> {
        protobuf::document(v)
            .expect("a protobuf form")
            .expect("encodes")
    }

    #[test]
    fn a_protobuf_answer_is_its_decoded_json_and_whether_the_fakes_encoder_writes_its_bytes() {
        let bytes = encoded(&config_map());
        let Body::Json { doc, .. } = protobuf_body(
            protobuf::decode(&bytes, ("", "")),
            Some(Ok(bytes.clone())),
            &bytes,
        ) else {
            panic!("a JSON rendering");
        };
        assert_eq!(
            doc.pointer("/protobuf/data/k").and_then(Json::as_str),
            Some("v")
        );
        assert_eq!(
            doc.get("the fake's encoder writes").and_then(Json::as_str),
            Some("the same bytes")
        );
        // Bytes other than the encoder writes (three more at the end) are told apart.
        let mut other = bytes.clone();
        other.extend_from_slice(&bytes[bytes.len() - 3..]);
        let Body::Json { doc, .. } = protobuf_body(
            protobuf::decode(&bytes, ("", "")),
            Some(Ok(bytes.clone())),
            &other,
        ) else {
            panic!("a JSON rendering");
        };
        let said = doc.get("the fake's encoder writes").and_then(Json::as_str);
        assert!(
            said.is_some_and(
                |s| s.starts_with("other bytes") && s.ends_with(&format!("byte {}", bytes.len()))
            ),
            "{said:?}"
        );
        assert!(matches!(
            protobuf_body(protobuf::decode(b"{}", ("", "")), None, b"{}"),
            Body::Text(t) if t.starts_with("protobuf that does not decode")
        ));
    }

    #[test]
    fn a_protobuf_watch_is_read_whole_frames_at_a_time() {
        let frame = protobuf::watch_frame("ADDED", &config_map()).expect("a frame");
        let mut buf = frame.clone();
        buf.extend_from_slice(&frame[..frame.len() - 1]);
        let mut events = Vec::new();
        protobuf_events(&mut buf, &mut events).expect("reads");
        assert_eq!(events.len(), 1, "the second frame is not whole yet");
        assert_eq!(buf.len(), frame.len() - 1);
        assert_eq!(
            events[0].pointer("/protobuf/type").and_then(Json::as_str),
            Some("ADDED")
        );
        assert_eq!(
            events[0]
                .pointer("/protobuf/object/metadata/name")
                .and_then(Json::as_str),
            Some("a")
        );
        assert_eq!(
            events[0]
                .get("the fake's encoder writes")
                .and_then(Json::as_str),
            Some("the same bytes")
        );
        buf.push(*frame.last().expect("a byte"));
        protobuf_events(&mut buf, &mut events).expect("reads");
        assert_eq!(events.len(), 2);
        assert!(buf.is_empty());
    }
}
