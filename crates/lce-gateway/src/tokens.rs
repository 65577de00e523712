//! Secrets the gateway checks on any replica: read tokens (an HMAC-SHA256
//! of the run id and the run's nonce under a secret every replica shares,
//! compared in constant time), random ids, and the comparison of bearer
//! tokens.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The read-token signer: `X-Run-Token` for `GET /api/v1/runs/{id}/stream`.
#[derive(Clone)]
pub struct ReadTokens {
    secret: Vec<u8>,
}

impl std::fmt::Debug for ReadTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadTokens(..)")
    }
}

impl ReadTokens {
    /// A signer with `secret` (any length; 16 bytes or more is advised).
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        ReadTokens {
            secret: secret.into(),
        }
    }

    fn mac(&self, run_id: &str, nonce: &str) -> Option<Hmac<Sha256>> {
        // HMAC takes keys of any length: this never fails.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret).ok()?;
        // The run id's length first, so that no other split of the same
        // bytes into a run id and a nonce signs the same.
        mac.update(&(run_id.len() as u64).to_be_bytes());
        mac.update(run_id.as_bytes());
        mac.update(nonce.as_bytes());
        Some(mac)
    }

    /// The read token of one incarnation of `run_id` (the run whose log
    /// keeps `nonce`, `RunInfo::nonce`): their HMAC-SHA256, in lowercase
    /// hex.
    pub fn token(&self, run_id: &str, nonce: &str) -> String {
        self.mac(run_id, nonce)
            .map(|mac| hex(&mac.finalize().into_bytes()))
            .unwrap_or_default()
    }

    /// Whether `token` is that of `run_id` with `nonce` (compared in
    /// constant time).
    pub fn verify(&self, run_id: &str, nonce: &str, token: &str) -> bool {
        match (unhex(token), self.mac(run_id, nonce)) {
            (Some(bytes), Some(mac)) => mac.verify_slice(&bytes).is_ok(),
            _ => false,
        }
    }
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Why a secret file could not be used ([`read_secret_file`]).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    /// The file could not be read.
    #[error("cannot be read: {0}")]
    Unreadable(#[source] std::io::Error),
    /// Fewer bytes than asked for, trailing whitespace removed.
    #[error("must hold at least {0} bytes")]
    TooShort(usize),
}

/// Reads a secret, token or password file as a deployment mounts one: its
/// bytes without trailing whitespace (a final newline), at least
/// `min_bytes` of them. The bytes are never part of an error.
///
/// # Errors
///
/// [`SecretFileError`]: unreadable, or shorter than `min_bytes`.
pub fn read_secret_file(
    path: &std::path::Path,
    min_bytes: usize,
) -> Result<Vec<u8>, SecretFileError> {
    let mut bytes = std::fs::read(path).map_err(SecretFileError::Unreadable)?;
    while bytes.last().is_some_and(u8::is_ascii_whitespace) {
        bytes.pop();
    }
    if bytes.len() < min_bytes.max(1) {
        return Err(SecretFileError::TooShort(min_bytes.max(1)));
    }
    Ok(bytes)
}

/// The OS's random source failed: no safe id can be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the OS's random source is unavailable")]
pub struct NoRandomness;

/// A fresh random id: 128 bits, lowercase hex.
pub fn random_id() -> Result<String, NoRandomness> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| NoRandomness)?;
    Ok(hex(&bytes))
}

/// Compares two byte strings in time that depends on their lengths only.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_their_own_run_and_incarnation_only() {
        let tokens = ReadTokens::new(b"0123456789abcdef".to_vec());
        let t = tokens.token("run-1", "n1");
        assert_eq!(t.len(), 64);
        assert!(tokens.verify("run-1", "n1", &t));
        assert!(!tokens.verify("run-2", "n1", &t));
        // The same run id, a later incarnation.
        assert!(!tokens.verify("run-1", "n2", &t));
        // The same bytes split another way.
        assert!(!tokens.verify("run-1n", "1", &t));
        assert!(!tokens.verify("run-1", "n1", &t[..62]));
        assert!(!tokens.verify("run-1", "n1", "zz"));
        assert!(!tokens.verify("run-1", "n1", "abc"));
        assert!(!ReadTokens::new(b"another secret!!".to_vec()).verify("run-1", "n1", &t));
        assert_eq!(format!("{tokens:?}"), "ReadTokens(..)");
    }

    #[test]
    fn random_ids_are_128_bit_hex_and_differ() {
        let (a, b) = (random_id().unwrap(), random_id().unwrap());
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn constant_time_eq_compares_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
