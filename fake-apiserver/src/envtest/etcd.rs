//! The fake as `etcd`: envtest starts etcd before kube-apiserver and waits for its `/health`. The
//! fake API server keeps its objects itself, so this stand-in stores nothing: it answers
//! `/health` on its client URLs as a healthy etcd does, so that envtest (and anything else that
//! starts the pair) goes on to start the fake as kube-apiserver.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use super::flags::{FlagError, Flags, Known};

const VALUED: &[&str] = &[
    "advertise-client-urls",
    "auto-compaction-mode",
    "auto-compaction-retention",
    "data-dir",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "listen-client-urls",
    "listen-metrics-urls",
    "listen-peer-urls",
    "log-level",
    "logger",
    "name",
    "quota-backend-bytes",
    "snapshot-count",
    "wal-dir",
];
const BOOLEANS: &[&str] = &["force-new-cluster", "unsafe-no-fsync"];

/// `--help`, in etcd's layout (envtest reads it to learn whether `--unsafe-no-fsync` exists).
pub fn help() -> String {
    let mut text = String::from(
        "Tollgate's fake API server, standing in for etcd (as envtest starts it): it stores nothing\n\
         and answers /health on its client URLs; the fake kube-apiserver keeps the objects.\n\n\
         Usage:\n\n  etcd [flags]\n\nFlags accepted:\n",
    );
    let mut names: Vec<&str> = VALUED.iter().chain(BOOLEANS).copied().collect();
    names.sort_unstable();
    for name in names {
        let what = match name {
            "listen-client-urls" => "  'http://localhost:2379' (served: GET /health)",
            "data-dir" => "  (made if missing; nothing is written into it)",
            _ => "",
        };
        text.push_str(&format!("  --{name}{what}\n"));
    }
    text
}

/// Why the stand-in cannot start as asked.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error(transparent)]
    Flag(#[from] FlagError),
    #[error("--listen-client-urls: {url:?} {reason}")]
    Url { url: String, reason: String },
    #[error("--data-dir {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("listening on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The client addresses to answer on, read from the flags (and the data directory, made).
pub fn client_addresses(args: &[String]) -> Result<Vec<SocketAddr>, EtcdError> {
    let flags = Flags::parse(
        args,
        &Known {
            valued: VALUED,
            booleans: BOOLEANS,
        },
    )?;
    if let Some(dir) = flags.get("data-dir").filter(|d| !d.is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| EtcdError::DataDir {
            path: dir.into(),
            source,
        })?;
    }
    let mut urls = flags.list("listen-client-urls");
    if urls.is_empty() {
        urls.push("http://localhost:2379".into());
    }
    urls.iter().map(|u| address(u)).collect()
}

fn address(raw: &str) -> Result<SocketAddr, EtcdError> {
    let bad = |reason: &str| EtcdError::Url {
        url: raw.into(),
        reason: reason.into(),
    };
    let url = url::Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    if url.scheme() != "http" {
        return Err(bad("is not http: the stand-in serves plain HTTP only"));
    }
    let port = url.port().ok_or_else(|| bad("has no port"))?;
    let host = match url.host() {
        Some(url::Host::Domain("localhost")) => "127.0.0.1".parse().expect("an address"),
        Some(url::Host::Ipv4(ip)) => ip.into(),
        Some(url::Host::Ipv6(ip)) => ip.into(),
        _ => return Err(bad("names a host other than an IP address or localhost")),
    };
    Ok(SocketAddr::new(host, port))
}

/// Binds every address, then answers on them until the process ends.
pub async fn serve_health(addrs: &[SocketAddr]) -> Result<(), EtcdError> {
    let mut listeners = Vec::new();
    for addr in addrs {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| EtcdError::Bind {
                addr: *addr,
                source,
            })?;
        listeners.push(listener);
    }
    for listener in listeners {
        tokio::spawn(accept(listener));
    }
    Ok(())
}

async fn accept(listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let service = hyper::service::service_fn(answer);
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer<B>(req: Request<B>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match req.uri().path() {
        "/health" => (StatusCode::OK, r#"{"health":"true","reason":""}"#),
        _ => (StatusCode::NOT_FOUND, "404 page not found\n"),
    };
    let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn client_urls_are_read_as_envtest_passes_them() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let addrs = client_addresses(&args(&[
            "--listen-peer-urls=http://127.0.0.1:40001",
            &format!("--data-dir={}", data.display()),
            "--advertise-client-urls=http://127.0.0.1:40000",
            "--listen-client-urls=http://127.0.0.1:40000,http://localhost:40002",
            "--unsafe-no-fsync=true",
        ]))
        .unwrap();
        assert_eq!(
            addrs,
            [
                "127.0.0.1:40000".parse().unwrap(),
                "127.0.0.1:40002".parse().unwrap()
            ]
        );
        assert!(data.is_dir());
        assert!(
            help()
                .lines()
                .any(|l| l.trim_start().starts_with("--unsafe-no-fsync"))
        );
    }

    #[test]
    fn urls_it_cannot_serve_are_named() {
        let err = |url: &str| {
            client_addresses(&args(&[&format!("--listen-client-urls={url}")]))
                .unwrap_err()
                .to_string()
        };
        assert!(err("https://127.0.0.1:2379").contains("plain HTTP only"));
        assert!(err("http://127.0.0.1").contains("has no port"));
        assert!(err("http://etcd.example:2379").contains("other than an IP address"));
    }
}
