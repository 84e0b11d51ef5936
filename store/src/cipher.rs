//! AES-256-GCM under one key: the primitive that both the runtime-context
//! seal ([`crate::sealed`]) and encryption at rest ([`crate::at_rest`])
//! are built on, so key parsing, nonce handling and the failure cases are
//! written once.

use aes_gcm::aead::{Aead, Generate, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Bytes of a GCM nonce.
pub(crate) const NONCE_LEN: usize = 12;

/// Why a ciphertext did not open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpenFailure {
    /// The nonce has the wrong size.
    BadNonce(usize),
    /// Authentication failed: another key, or altered bytes.
    Tampered,
}

/// One AES-256-GCM key.
#[derive(Clone)]
pub(crate) struct Cipher(Aes256Gcm);

impl Cipher {
    /// A key from base64 of 32 bytes; the error says what was wrong.
    pub(crate) fn from_base64(text: &str) -> Result<Self, String> {
        let bytes = STANDARD.decode(text.trim()).map_err(|e| e.to_string())?;
        Aes256Gcm::new_from_slice(&bytes)
            .map(Cipher)
            .map_err(|_| format!("got {} bytes", bytes.len()))
    }

    /// A random key.
    pub(crate) fn generate() -> Self {
        Cipher(Aes256Gcm::new(&aes_gcm::Key::<Aes256Gcm>::generate()))
    }

    /// A random key as base64 of its 32 bytes.
    pub(crate) fn generate_base64() -> String {
        STANDARD.encode(aes_gcm::Key::<Aes256Gcm>::generate())
    }

    /// Encrypts `plain`, authenticating `aad` with it, under a fresh
    /// random nonce (so equal values never look equal at rest); returns
    /// the nonce and the ciphertext with its tag. Fails only on inputs
    /// beyond AES-GCM's 64 GiB, far above any value the fleet stores.
    pub(crate) fn seal(
        &self,
        plain: &[u8],
        aad: &[u8],
    ) -> Result<([u8; NONCE_LEN], Vec<u8>), aes_gcm::Error> {
        let nonce = Nonce::generate();
        let sealed = self.0.encrypt(&nonce, Payload { msg: plain, aad })?;
        Ok((nonce.into(), sealed))
    }

    /// Decrypts what [`Cipher::seal`] returned, with the same `aad`.
    pub(crate) fn open(
        &self,
        nonce: &[u8],
        sealed: &[u8],
        aad: &[u8],
    ) -> Result<Vec<u8>, OpenFailure> {
        let nonce = Nonce::try_from(nonce).map_err(|_| OpenFailure::BadNonce(nonce.len()))?;
        self.0
            .decrypt(&nonce, Payload { msg: sealed, aad })
            .map_err(|_| OpenFailure::Tampered)
    }
}
