//! Where a webhook's `clientConfig` points: a URL as it is; a Service at the address its
//! Endpoints or EndpointSlices give (the fake has no cluster network, so a webhook served on
//! loopback is reached through endpoints that say so), verified under the Service's DNS name as
//! kube-apiserver verifies it.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

use super::Shared;
use crate::semantics::admission::Cluster;
use crate::webhooks::call::Target;
use crate::webhooks::config::ClientConfig;
use crate::webhooks::dispatch::{Resolve, Unresolved};

/// Resolves targets against the server's own objects.
pub struct Targets<'a> {
    pub shared: &'a Shared,
}

impl Resolve for Targets<'_> {
    fn target(&self, client: &ClientConfig, timeout: Duration) -> Result<Target, Unresolved> {
        match client {
            ClientConfig::Url(url) => by_url(url, timeout),
            ClientConfig::Service {
                namespace,
                name,
                path,
                port,
            } => self.by_service(namespace, name, path, *port, timeout),
        }
    }
}

/// The URL as called and quoted, with the `?timeout=` kube-apiserver's client adds (the timeout
/// as a Go duration).
fn with_timeout(mut url: url::Url, timeout: Duration) -> String {
    let seconds = timeout.as_secs().max(1);
    let text = if seconds >= 60 {
        format!("{}m{}s", seconds / 60, seconds % 60)
    } else {
        format!("{seconds}s")
    };
    url.query_pairs_mut().append_pair("timeout", &text);
    url.into()
}

/// A path as kube-apiserver's client joins it: from the root, without a trailing slash.
fn joined(path: &str) -> String {
    let segments: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    format!("/{}", segments.join("/"))
}

fn unresolved(why: impl Into<String>) -> Unresolved {
    Unresolved {
        url: None,
        why: why.into(),
    }
}

fn by_url(url: &str, timeout: Duration) -> Result<Target, Unresolved> {
    let mut parsed = url::Url::parse(url).map_err(|e| unresolved(format!("parse {url:?}: {e}")))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| unresolved(format!("parse {url:?}: no host")))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let path = joined(parsed.path());
    parsed.set_path(&path);
    let called = with_timeout(parsed.clone(), timeout);
    if parsed.scheme() != "https" {
        return Err(Unresolved {
            url: Some(called),
            why: format!("unsupported protocol scheme {:?}", parsed.scheme()),
        });
    }
    let port = parsed.port().unwrap_or(443);
    let dial = match host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port),
        Err(_) => match (host.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
        {
            Some(addr) => addr,
            None => {
                return Err(Unresolved {
                    url: Some(called),
                    why: format!("dial tcp: lookup {host}: no such host"),
                });
            }
        },
    };
    Ok(Target {
        url: called,
        dial,
        server_name: host,
        ca_bundle: Vec::new(),
    })
}

impl Targets<'_> {
    fn by_service(
        &self,
        namespace: &str,
        name: &str,
        path: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Target, Unresolved> {
        let host = format!("{name}.{namespace}.svc");
        let url = url::Url::parse(&format!("https://{host}{}", joined(path)))
            .map_err(|e| unresolved(format!("invalid service path {path:?}: {e}")))?;
        // kube-apiserver's client names the Service's port even when it is 443, which a parsed
        // URL would drop as the scheme's default.
        let called = with_timeout(url, timeout).replacen(&host, &format!("{host}:{port}"), 1);
        let failed = |why: String| Unresolved {
            url: Some(called.clone()),
            why,
        };
        let dial = {
            let store = self.shared.store();
            let service = Cluster::get(&*store, "", "services", namespace, name)
                .ok_or_else(|| failed(format!("service \"{name}\" not found")))?;
            let (port_name, target_port) = service_port(&service, port).ok_or_else(|| {
                failed(format!(
                    "no service port {port} found for service \"{name}\""
                ))
            })?;
            let endpoints = Cluster::get(&*store, "", "endpoints", namespace, name);
            let slices: Vec<_> = Cluster::list(&*store, "discovery.k8s.io", "endpointslices")
                .into_iter()
                .filter(|s| {
                    s["metadata"]["namespace"].as_str() == Some(namespace)
                        && s["metadata"]["labels"]["kubernetes.io/service-name"].as_str()
                            == Some(name)
                })
                .collect();
            slices
                .iter()
                .find_map(|s| from_slice(s, &port_name, &target_port))
                .or_else(|| endpoints.and_then(|e| from_endpoints(&e, &port_name, &target_port)))
                .ok_or_else(|| failed(format!("no endpoints available for service \"{name}\"")))?
        };
        Ok(Target {
            url: called,
            dial,
            server_name: host,
            ca_bundle: Vec::new(),
        })
    }
}

/// The Service port a webhook's port names: its name and its target port (a number, or the name
/// of a container port, as text).
fn service_port(service: &Value, port: u16) -> Option<(String, String)> {
    let entry = service["spec"]["ports"]
        .as_array()?
        .iter()
        .find(|p| p["port"].as_u64() == Some(u64::from(port)))?;
    let name = entry["name"].as_str().unwrap_or("").to_string();
    let target = match &entry["targetPort"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => port.to_string(),
    };
    Some((name, target))
}

/// The port an endpoint port list gives for the Service port: by name, else the target port when
/// it is a number, else the only port there is.
fn endpoint_port(ports: &Value, port_name: &str, target_port: &str) -> Option<u16> {
    let ports = ports.as_array()?;
    let as_port = |p: &Value| p["port"].as_u64().and_then(|n| u16::try_from(n).ok());
    ports
        .iter()
        .find(|p| p["name"].as_str().unwrap_or("") == port_name)
        .and_then(as_port)
        .or_else(|| target_port.parse().ok())
        .or_else(|| (ports.len() == 1).then(|| as_port(&ports[0])).flatten())
}

fn from_endpoints(endpoints: &Value, port_name: &str, target_port: &str) -> Option<SocketAddr> {
    endpoints["subsets"].as_array()?.iter().find_map(|subset| {
        let ip: IpAddr = subset["addresses"].as_array()?.first()?["ip"]
            .as_str()?
            .parse()
            .ok()?;
        let port = endpoint_port(&subset["ports"], port_name, target_port)?;
        Some(SocketAddr::new(ip, port))
    })
}

fn from_slice(slice: &Value, port_name: &str, target_port: &str) -> Option<SocketAddr> {
    let port = endpoint_port(&slice["ports"], port_name, target_port)?;
    slice["endpoints"].as_array()?.iter().find_map(|e| {
        // An endpoint not known to be ready is not used.
        if e["conditions"]["ready"].as_bool() == Some(false) {
            return None;
        }
        let ip: IpAddr = e["addresses"].as_array()?.first()?.as_str()?.parse().ok()?;
        Some(SocketAddr::new(ip, port))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_url_is_called_with_the_timeout_in_its_query() {
        let t = by_url(
            "https://127.0.0.1:9443/mutate-pods/",
            Duration::from_secs(10),
        );
        let t = t.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            t.url.as_str(),
            "https://127.0.0.1:9443/mutate-pods?timeout=10s"
        );
        assert_eq!(
            t.dial,
            "127.0.0.1:9443".parse().unwrap_or_else(|e| panic!("{e}"))
        );
        assert_eq!(t.server_name, "127.0.0.1");
    }

    #[test]
    fn a_service_port_is_found_in_its_endpoints_by_name_or_target_port() {
        let service =
            json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}});
        let (name, target) = service_port(&service, 443).unwrap_or_default();
        assert_eq!((name.as_str(), target.as_str()), ("https", "9443"));
        let endpoints = json!({"subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 9443}]}]});
        assert_eq!(
            from_endpoints(&endpoints, &name, &target),
            Some("127.0.0.1:9443".parse().unwrap_or_else(|e| panic!("{e}")))
        );
        let slice = json!({"ports": [{"name": "https", "port": 9443}], "endpoints": [
            {"addresses": ["127.0.0.2"], "conditions": {"ready": false}},
            {"addresses": ["127.0.0.1"], "conditions": {"ready": true}},
        ]});
        assert_eq!(
            from_slice(&slice, &name, &target),
            Some("127.0.0.1:9443".parse().unwrap_or_else(|e| panic!("{e}")))
        );
    }
}
