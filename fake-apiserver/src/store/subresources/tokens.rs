//! Service account tokens: `serviceaccounts/token` (TokenRequest) issues a JWT signed with a key
//! the server makes on first use (ES256, as kube-apiserver signs with an ECDSA key); TokenReview
//! authenticates exactly the tokens this server issued, while their service account (and bound
//! object) still exist with the same uid, as kube-apiserver's service account authenticator does.

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use super::answer_managed_fields;
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::store::Store;

/// The issuer and default audience of kube-apiserver's tokens with the usual flags.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;
const GROUP: &str = "authentication.k8s.io";

/// The signing key of one server, made when the first token is asked for (start-up stays cheap).
#[derive(Default)]
pub struct Tokens {
    key: OnceLock<Option<SigningKey>>,
}

struct SigningKey {
    pair: EcdsaKeyPair,
    kid: String,
}

impl Tokens {
    fn key(&self) -> Option<&SigningKey> {
        self.key
            .get_or_init(|| {
                let rng = SystemRandom::new();
                let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).ok()?;
                let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).ok()?;
                // kube-apiserver's key id: the SHA-256 of the public key's PKIX DER, base64url.
                const P256_SPKI_PREFIX: [u8; 26] = [
                    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
                ];
                let mut der = P256_SPKI_PREFIX.to_vec();
                der.extend_from_slice(pair.public_key().as_ref());
                let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &der));
                Some(SigningKey { pair, kid })
            })
            .as_ref()
    }

    fn sign(&self, claims: &Value) -> ApiResult<String> {
        let key = self
            .key()
            .ok_or_else(|| ApiError::internal("no service account signing key"))?;
        let header = json!({"alg": "ES256", "kid": key.kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = key
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| ApiError::internal("signing a service account token failed"))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
    }

    /// The claims of a token this server signed, or why not: `None` for a token that is not one
    /// of ours at all (kube-apiserver's "invalid bearer token" alone).
    fn verify(&self, token: &str) -> Result<Value, Option<String>> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(None);
        };
        let decode = |p: &str| URL_SAFE_NO_PAD.decode(p.trim_end_matches('=')).ok();
        let claims: Value = decode(c)
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(None)?;
        let header: Value = decode(h)
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(None)?;
        // Tokens of other issuers are left to other authenticators.
        if claims["iss"] != ISSUER || !header.is_object() {
            return Err(None);
        }
        let crypto = || Some("go-jose/go-jose: error in cryptographic primitive".to_string());
        let key = self.key().ok_or_else(crypto)?;
        let sig = decode(s).ok_or_else(crypto)?;
        signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            key.pair.public_key().as_ref(),
        )
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| crypto())?;
        Ok(claims)
    }
}

/// The object kinds a token may be bound to, by (apiVersion, kind), and their plural.
fn bindable(api_version: &str, kind: &str) -> Option<&'static str> {
    match (api_version, kind) {
        ("v1", "Pod") => Some("pods"),
        ("v1", "Secret") => Some("secrets"),
        ("v1", "Node") => Some("nodes"),
        _ => None,
    }
}

impl Store {
    fn live(&self, plural: &str, ns: &str, name: &str) -> ApiResult<Value> {
        let rt = self
            .catalog
            .lookup("", "v1", plural)
            .ok_or_else(ApiError::unknown_path)?;
        self.get(&rt, ns, name)
    }

    /// `POST .../serviceaccounts/<name>/token`: a TokenRequest answered with a signed token.
    pub fn token_request(
        &mut self,
        ns: &str,
        name: &str,
        mut req: Value,
        manager: &str,
    ) -> ApiResult<Value> {
        let sent_name = req["metadata"]["name"].as_str().unwrap_or("");
        if !sent_name.is_empty() && sent_name != name {
            return Err(ApiError::invalid(
                GROUP,
                "TokenRequest",
                name,
                vec![FieldCause::invalid(
                    "metadata.name",
                    sent_name,
                    "must match the service account name if specified",
                )],
            ));
        }
        let sa = self.live("serviceaccounts", ns, name)?;
        let sent_spec = req["spec"].clone();
        let spec = &mut req["spec"];
        if !spec.is_object() {
            *spec = json!({});
        }
        let expiration = match &spec["expirationSeconds"] {
            Value::Null => DEFAULT_EXPIRATION,
            v => v.as_i64().unwrap_or(0),
        };
        let invalid = |detail: &str| {
            ApiError::invalid(
                GROUP,
                "TokenRequest",
                "",
                vec![FieldCause {
                    reason: crate::error::CauseReason::Invalid,
                    field: "spec.expirationSeconds".into(),
                    message: format!("Invalid value: {expiration}: {detail}"),
                }],
            )
        };
        if expiration < MIN_EXPIRATION {
            return Err(invalid("may not specify a duration less than 10 minutes"));
        }
        if expiration > MAX_EXPIRATION {
            return Err(invalid(
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        spec["expirationSeconds"] = json!(expiration);
        if spec["audiences"].as_array().is_none_or(|a| a.is_empty()) {
            spec["audiences"] = json!([ISSUER]);
        }
        let sa_uid = sa["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let mut private = json!({
            "namespace": ns,
            "serviceaccount": {"name": name, "uid": sa_uid},
        });
        match &spec["boundObjectRef"] {
            Value::Null => spec["boundObjectRef"] = Value::Null,
            bound => {
                let api_version = bound["apiVersion"].as_str().unwrap_or("");
                let kind = bound["kind"].as_str().unwrap_or("");
                let Some(plural) = bindable(api_version, kind) else {
                    let (group, version) =
                        api_version.rsplit_once('/').unwrap_or(("", api_version));
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token to object of type {group}/{version}, Kind={kind}"
                    )));
                };
                let bound_name = bound["name"].as_str().unwrap_or("");
                let obj_ns = if plural == "nodes" { "" } else { ns };
                let obj = self.live(plural, obj_ns, bound_name)?;
                let uid = obj["metadata"]["uid"].as_str().unwrap_or("");
                if let Some(want) = bound["uid"].as_str().filter(|u| !u.is_empty())
                    && want != uid
                {
                    return Err(ApiError::conflict(
                        "",
                        kind,
                        bound_name,
                        &format!(
                            "the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
                        ),
                    ));
                }
                if plural == "pods" && obj["spec"]["serviceAccountName"].as_str() != Some(name) {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
                    )));
                }
                let claim = match plural {
                    "pods" => "pod",
                    "secrets" => "secret",
                    _ => "node",
                };
                private[claim] = json!({"name": bound_name, "uid": uid});
                // A pod's token also names its node, when that Node exists.
                if plural == "pods"
                    && let Some(node) = obj["spec"]["nodeName"].as_str()
                    && let Ok(n) = self.live("nodes", "", node)
                {
                    private["node"] = json!({"name": node, "uid": n["metadata"]["uid"]});
                }
            }
        }
        let now = self.clock.now();
        let iat = now.as_second();
        let claims = json!({
            "aud": spec["audiences"],
            "exp": iat + expiration,
            "iat": iat,
            "iss": ISSUER,
            "jti": self.own_uid(),
            "kubernetes.io": private,
            "nbf": iat,
            "sub": format!("system:serviceaccount:{ns}:{name}"),
        });
        let token = self.extras.tokens.sign(&claims)?;
        let expires = now
            .checked_add(jiff::SignedDuration::from_secs(expiration))
            .map(crate::clock::format_time)
            .unwrap_or_default();
        let now_s = self.clock.now_rfc3339();
        let mut sent = json!({"spec": sent_spec});
        sent["spec"]["expirationSeconds"] = json!(expiration);
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": sa_uid,
                "creationTimestamp": now_s,
                "managedFields": answer_managed_fields(manager, "authentication.k8s.io/v1", &now_s, &sent, Some("token")),
            },
            "spec": {
                "audiences": spec["audiences"],
                "expirationSeconds": expiration,
                "boundObjectRef": spec["boundObjectRef"],
            },
            "status": {"token": token, "expirationTimestamp": expires},
        }))
    }

    /// `POST /apis/authentication.k8s.io/v1/tokenreviews`.
    pub fn token_review(&mut self, review: Value, manager: &str) -> ApiResult<Value> {
        let token = review["spec"]["token"].as_str().unwrap_or("");
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let wanted: Vec<String> = match review["spec"]["audiences"].as_array() {
            Some(a) if !a.is_empty() => a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => vec![ISSUER.to_string()],
        };
        let status = match self.authenticate(token, &wanted) {
            Ok(status) => status,
            Err(None) => json!({"user": {}, "error": "invalid bearer token"}),
            Err(Some(why)) => {
                json!({"user": {}, "error": format!("[invalid bearer token, {why}]")})
            }
        };
        let now = self.clock.now_rfc3339();
        let mut spec = review["spec"].clone();
        if let Some(m) = spec.as_object_mut() {
            m.retain(|_, v| !v.is_null());
        }
        Ok(json!({
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "managedFields": answer_managed_fields(manager, "authentication.k8s.io/v1", &now, &review, None),
            },
            "spec": spec,
            "status": status,
        }))
    }

    /// The user a bearer token authenticates as when sent to this server: a ServiceAccount token
    /// it issued, for its own audience, unexpired and still bound to live objects. `Err(None)`:
    /// not a token of this server's; `Err(Some(why))`: one of its tokens that no longer holds.
    pub fn token_user(&self, token: &str) -> Result<Value, Option<String>> {
        self.authenticate(token, &[ISSUER.to_string()])
            .map(|status| status["user"].clone())
    }

    fn authenticate(&self, token: &str, wanted: &[String]) -> Result<Value, Option<String>> {
        let claims = self.extras.tokens.verify(token)?;
        let auds: Vec<&str> = claims["aud"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .or_else(|| claims["aud"].as_str().map(|a| vec![a]))
            .unwrap_or_default();
        let matched: Vec<&String> = wanted
            .iter()
            .filter(|w| auds.contains(&w.as_str()))
            .collect();
        if matched.is_empty() {
            let go_list = |l: Vec<&str>| {
                let quoted: Vec<String> = l.iter().map(|s| format!("{s:?}")).collect();
                format!("[{}]", quoted.join(" "))
            };
            return Err(Some(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_list(auds),
                go_list(wanted.iter().map(String::as_str).collect())
            )));
        }
        let now = self.clock.now().as_second();
        if claims["exp"].as_i64().is_some_and(|exp| now > exp) {
            return Err(Some("service account token has expired".into()));
        }
        let private = &claims["kubernetes.io"];
        let ns = private["namespace"].as_str().unwrap_or("");
        let sa_name = private["serviceaccount"]["name"].as_str().unwrap_or("");
        let sa_uid = private["serviceaccount"]["uid"].as_str().unwrap_or("");
        let sa = self
            .live("serviceaccounts", ns, sa_name)
            .map_err(|e| Some(e.message))?;
        let uid = sa["metadata"]["uid"].as_str().unwrap_or("");
        if uid != sa_uid {
            return Err(Some(format!(
                "service account UID ({uid}) does not match claim ({sa_uid})"
            )));
        }
        if sa["metadata"]["deletionTimestamp"].is_string() {
            return Err(Some(format!(
                "service account {ns}/{sa_name} has been deleted"
            )));
        }
        let mut extra = serde_json::Map::new();
        if let Some(jti) = claims["jti"].as_str() {
            extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                json!([format!("JTI={jti}")]),
            );
        }
        for (claim, plural) in [("pod", "pods"), ("secret", "secrets")] {
            let Some(name) = private[claim]["name"].as_str() else {
                continue;
            };
            let live_uid = self
                .live(plural, ns, name)
                .ok()
                .and_then(|o| o["metadata"]["uid"].as_str().map(String::from));
            if live_uid.as_deref() != private[claim]["uid"].as_str() {
                return Err(Some("service account token has been invalidated".into()));
            }
            if claim == "pod" {
                extra.insert(
                    "authentication.kubernetes.io/pod-name".into(),
                    json!([name]),
                );
                extra.insert(
                    "authentication.kubernetes.io/pod-uid".into(),
                    json!([private[claim]["uid"]]),
                );
            }
        }
        if let Some(node) = private["node"]["name"].as_str() {
            extra.insert(
                "authentication.kubernetes.io/node-name".into(),
                json!([node]),
            );
            extra.insert(
                "authentication.kubernetes.io/node-uid".into(),
                json!([private["node"]["uid"]]),
            );
        }
        Ok(json!({
            "authenticated": true,
            "user": {
                "username": format!("system:serviceaccount:{ns}:{sa_name}"),
                "uid": uid,
                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{ns}"), "system:authenticated"],
                "extra": extra,
            },
            "audiences": matched,
        }))
    }
}
