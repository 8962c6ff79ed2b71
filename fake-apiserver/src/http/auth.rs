//! Authentication of a TCP endpoint, answered as kube-apiserver answers it: a verified client
//! certificate, then a bearer token, then (when the endpoint allows it, as kube-apiserver does by
//! default) anonymous access; a request none of them takes gets a 401 `Status` and reaches
//! nothing.
//!
//! Two kinds of token are known: the endpoint's own (the admin's, written into its kubeconfig)
//! and ServiceAccount tokens this server issued (TokenRequest), for its audience and unexpired.

use std::borrow::Cow;
use std::sync::LazyLock;

use http::{HeaderMap, header};

use super::Shared;
use crate::error::ApiError;
use crate::semantics::rbac::User;
use crate::tls::Peer;

/// What an endpoint accepts besides client certificates (which its TLS layer verifies).
pub struct Authenticator {
    admin_token: Option<String>,
    anonymous: bool,
}

impl Authenticator {
    pub fn new(admin_token: Option<String>, anonymous: bool) -> Self {
        Authenticator {
            admin_token,
            anonymous,
        }
    }
}

/// Who a request is from, or the 401 to answer.
///
/// An endpoint with an [`Authenticator`] takes the user of the connection's verified client
/// certificate (`peer`), its own token (the admin) and ServiceAccount tokens it issued, and
/// anything else as `system:anonymous` if it allows that or not at all. A token that is sent but
/// not known, or a client certificate that does not verify (with no token to go on), is refused
/// even where anonymous access is allowed, as kube-apiserver refuses them. An
/// endpoint without one (in-process clients, a served fake without `--token`) takes every request
/// as the admin's, except one carrying a ServiceAccount token it issued: that one is the
/// account's, and RBAC decides what it may do. Such a token that no longer holds (expired, its
/// account gone) is refused there too.
pub fn authenticate(
    auth: Option<&Authenticator>,
    shared: &Shared,
    headers: &HeaderMap,
    peer: Option<&Peer>,
) -> Result<Cow<'static, User>, ApiError> {
    let token = bearer_token(headers);
    let Some(auth) = auth else {
        return match token.map(|t| shared.store().token_user(t)) {
            None | Some(Err(None)) => Ok(Cow::Borrowed(admin())),
            Some(Ok(info)) => Ok(Cow::Owned(User::from_info(info))),
            Some(Err(Some(_))) => Err(unauthorized()),
        };
    };
    if let Some(Peer::User(user)) = peer {
        return Ok(Cow::Owned(User::clone(user)));
    }
    let Some(token) = token else {
        return match (peer, auth.anonymous) {
            // A certificate that does not verify is an error, and an error is never anonymous.
            (Some(Peer::Refused(why)), _) => {
                tracing::debug!(%why, "client certificate refused");
                Err(unauthorized())
            }
            (_, true) => Ok(Cow::Borrowed(anonymous())),
            (_, false) => Err(unauthorized()),
        };
    };
    // Digests are compared, so that timing tells nothing about how much of a guess was right.
    let digest = |t: &str| ring::digest::digest(&ring::digest::SHA256, t.as_bytes());
    if let Some(admin_token) = &auth.admin_token
        && digest(token).as_ref() == digest(admin_token).as_ref()
    {
        return Ok(Cow::Borrowed(admin()));
    }
    match shared.store().token_user(token) {
        Ok(info) => Ok(Cow::Owned(User::from_info(info))),
        Err(_) => Err(unauthorized()),
    }
}

/// Whoever no credential names, as kube-apiserver's anonymous authenticator calls them.
fn anonymous() -> &'static User {
    static ANONYMOUS: LazyLock<User> = LazyLock::new(|| {
        User::from_info(serde_json::json!({
            "username": "system:anonymous",
            "groups": ["system:unauthenticated"],
        }))
    });
    &ANONYMOUS
}

/// The admin, made once: nearly every request is the admin's.
pub(crate) fn admin() -> &'static User {
    static ADMIN: LazyLock<User> = LazyLock::new(User::admin);
    &ADMIN
}

/// The token of an `Authorization: Bearer <token>` header; the scheme in any case, as Go's
/// bearer-token authenticator reads it.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// kube-apiserver's 401: the same words whatever was wrong, so that nothing leaks.
fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// A token of 32 random bytes, hex-encoded.
pub fn generate_token() -> Result<String, ring::error::Unspecified> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        let token = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            bearer_token(&headers).map(String::from)
        };
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("BEARER abc ").as_deref(), Some("abc"));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearer"), None);
    }

    #[test]
    fn generated_tokens_are_long_and_differ() {
        let (a, b) = (generate_token().unwrap(), generate_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
