//! Bearer-token authentication of a TCP endpoint, answered as kube-apiserver answers it with
//! anonymous requests turned off: a request with no token, or one the server does not know, gets
//! a 401 `Status` and reaches nothing.
//!
//! Two kinds of token are known: the endpoint's own (the admin's, written into its kubeconfig)
//! and ServiceAccount tokens this server issued (TokenRequest), for its audience and unexpired.

use http::{HeaderMap, header};

use super::Shared;
use crate::error::ApiError;

/// The tokens an endpoint accepts.
pub struct Authenticator {
    admin_token: String,
}

impl Authenticator {
    pub fn new(admin_token: String) -> Self {
        Authenticator { admin_token }
    }

    /// `Ok` when the request carries a token this server knows, else the 401 to answer.
    pub fn check(&self, shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(unauthorized)?;
        // Digests are compared, so that timing tells nothing about how much of a guess was right.
        let digest = |t: &str| ring::digest::digest(&ring::digest::SHA256, t.as_bytes());
        let admin = digest(token).as_ref() == digest(&self.admin_token).as_ref();
        if admin || shared.store().service_account_user(token).is_some() {
            Ok(())
        } else {
            Err(unauthorized())
        }
    }
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
    fn generated_tokens_are_long_and_differ() {
        let (a, b) = (generate_token().unwrap(), generate_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
