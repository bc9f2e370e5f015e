//! Secrets at rest: values are encrypted with AES-256-GCM before they reach
//! the database, and decrypted only for the call that declared them.
//!
//! The key comes from `GLASSBOX_SECRET_KEY` (64 hex characters) or, when
//! that is unset, from `secret.key` in the data dir, created on first start
//! with mode 0600. Each value gets a fresh random 96-bit nonce (stored in
//! front of the ciphertext), and the slot `scope \0 owner \0 name` is the
//! associated data, so a ciphertext copied into another slot does not
//! decrypt. No endpoint, log or event ever carries a value.

use std::path::Path;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use futures::future::BoxFuture;
use node_runtime::secrets::{SecretOwner, SecretScope, SecretSource, SecretValue};

use crate::storage::Store;

const NONCE_LEN: usize = 12;

/// The server's secret cipher.
pub struct SecretCipher {
    cipher: Aes256Gcm,
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("GLASSBOX_SECRET_KEY must be 64 hex characters (32 bytes)")]
    BadEnvKey,
    #[error("cannot read or create the key file {path}: {message}")]
    File { path: String, message: String },
}

fn slot(scope: &str, owner: &str, name: &str) -> Vec<u8> {
    format!("glassbox.secret.v1\0{scope}\0{owner}\0{name}").into_bytes()
}

impl SecretCipher {
    pub fn from_key(key: &[u8; 32]) -> Self {
        Self {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)),
        }
    }

    /// The key from `env_key` (hex) or the data dir's key file.
    pub fn load(data_dir: &Path, env_key: Option<&str>) -> Result<Self, KeyError> {
        if let Some(hex_key) = env_key {
            let bytes = hex::decode(hex_key.trim()).map_err(|_| KeyError::BadEnvKey)?;
            let key: [u8; 32] = bytes.try_into().map_err(|_| KeyError::BadEnvKey)?;
            return Ok(Self::from_key(&key));
        }
        let path = data_dir.join("secret.key");
        let file_err = |e: std::io::Error| KeyError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        match std::fs::read(&path) {
            Ok(bytes) => {
                let key: [u8; 32] = bytes.try_into().map_err(|_| KeyError::File {
                    path: path.display().to_string(),
                    message: "not 32 bytes".into(),
                })?;
                Ok(Self::from_key(&key))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key: [u8; 32] = Aes256Gcm::generate_key(&mut OsRng).into();
                std::fs::create_dir_all(data_dir).map_err(file_err)?;
                write_private(&path, &key).map_err(file_err)?;
                Ok(Self::from_key(&key))
            }
            Err(e) => Err(file_err(e)),
        }
    }

    pub fn encrypt(&self, scope: &str, owner: &str, name: &str, value: &str) -> Vec<u8> {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let aad = slot(scope, owner, name);
        let ciphertext = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: value.as_bytes(),
                    aad: &aad,
                },
            )
            .expect("AES-GCM encryption of an in-memory buffer cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ciphertext);
        out
    }

    /// The value, or None when the ciphertext is damaged, from another slot
    /// or under another key.
    pub fn decrypt(&self, scope: &str, owner: &str, name: &str, stored: &[u8]) -> Option<String> {
        if stored.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = stored.split_at(NONCE_LEN);
        let aad = slot(scope, owner, name);
        let plain = self
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .ok()?;
        String::from_utf8(plain).ok()
    }
}

/// The approval key: random, kept in the data dir (`approval.key`, 0600)
/// so approval tokens stay valid across restarts and cannot be forged
/// without the file. A file that is not a key stops the start: replacing
/// it would orphan every pending approval.
pub fn load_approval_key(data_dir: &Path) -> Result<[u8; 32], KeyError> {
    let path = data_dir.join("approval.key");
    let file_err = |e: std::io::Error| KeyError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    match std::fs::read(&path) {
        Ok(bytes) => bytes.try_into().map_err(|b: Vec<u8>| KeyError::File {
            path: path.display().to_string(),
            message: format!(
                "it holds {} bytes, not a 32-byte key; restore it from a backup, or remove it to start with a new key (every pending approval then needs a new decision)",
                b.len()
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key: [u8; 32] = Aes256Gcm::generate_key(&mut OsRng).into();
            std::fs::create_dir_all(data_dir).map_err(file_err)?;
            write_private(&path, &key).map_err(file_err)?;
            Ok(key)
        }
        Err(e) => Err(file_err(e)),
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

pub fn scope_word(scope: SecretScope) -> &'static str {
    match scope {
        SecretScope::User => "user",
        SecretScope::Workspace => "workspace",
        SecretScope::Org => "org",
    }
}

/// The executor's secret source: encrypted values from the store.
pub struct StoreSecrets {
    pub store: Store,
    pub cipher: std::sync::Arc<SecretCipher>,
}

impl SecretSource for StoreSecrets {
    fn lookup<'a>(
        &'a self,
        owner: &'a SecretOwner,
        scope: SecretScope,
        name: &'a str,
    ) -> BoxFuture<'a, Option<SecretValue>> {
        Box::pin(async move {
            let owner_id = match scope {
                SecretScope::User => owner.user_id.clone()?,
                SecretScope::Workspace => owner.workspace_id.clone(),
                SecretScope::Org => owner.org_id.clone()?,
            };
            let word = scope_word(scope);
            let stored = self
                .store
                .secret_ciphertext(&owner.workspace_id, word, &owner_id, name)
                .await
                .ok()??;
            match self.cipher.decrypt(word, &owner_id, name, &stored) {
                Some(v) => Some(SecretValue::new(v)),
                None => {
                    tracing::error!(
                        scope = word,
                        name,
                        "a stored secret does not decrypt (wrong key or damaged)"
                    );
                    None
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_bound_to_its_slot_and_key() {
        let c = SecretCipher::from_key(&[7; 32]);
        let stored = c.encrypt("workspace", "default", "TOKEN", "hunter2");
        assert!(!stored.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(
            c.decrypt("workspace", "default", "TOKEN", &stored)
                .as_deref(),
            Some("hunter2")
        );
        assert_eq!(
            c.decrypt("workspace", "other", "TOKEN", &stored),
            None,
            "moved to another slot"
        );
        assert_eq!(
            SecretCipher::from_key(&[8; 32]).decrypt("workspace", "default", "TOKEN", &stored),
            None,
            "other key"
        );
        let mut damaged = stored.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert_eq!(c.decrypt("workspace", "default", "TOKEN", &damaged), None);
        assert_ne!(
            c.encrypt("workspace", "default", "TOKEN", "hunter2"),
            stored,
            "fresh nonce"
        );
    }

    #[test]
    fn key_file_is_created_once_and_private() {
        let dir = tempfile::tempdir().expect("tmp");
        let a = SecretCipher::load(dir.path(), None).expect("create");
        let stored = a.encrypt("user", "u", "N", "v");
        let b = SecretCipher::load(dir.path(), None).expect("reload");
        assert_eq!(b.decrypt("user", "u", "N", &stored).as_deref(), Some("v"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("secret.key"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(matches!(
            SecretCipher::load(dir.path(), Some("abc")),
            Err(KeyError::BadEnvKey)
        ));
        let env = SecretCipher::load(dir.path(), Some(&"11".repeat(32))).expect("env key");
        assert_eq!(
            env.decrypt("user", "u", "N", &stored),
            None,
            "the env key wins over the file"
        );
    }
}
