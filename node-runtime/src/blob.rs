//! Content-addressed blob storage for payloads too large to inline (a
//! truncated tool output's full body). The address is the lowercase hex
//! BLAKE3 of the bytes, so equal payloads are stored once and a download can
//! be checked against its name.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

/// A stored blob's address and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRef {
    pub hash: String,
    pub bytes: u64,
    pub content_type: String,
}

impl BlobRef {
    /// The API path that serves it (workspace access is the server's check).
    pub fn url(&self) -> String {
        format!("/api/v1/blobs/{}", self.hash)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob store IO error: {0}")]
    Io(#[from] std::io::Error),
    #[error("`{0}` is not a blob hash")]
    BadHash(String),
}

/// Where truncated payloads go.
pub trait BlobStore: Send + Sync {
    fn put<'a>(
        &'a self,
        bytes: Vec<u8>,
        content_type: &'a str,
    ) -> BoxFuture<'a, Result<BlobRef, BlobError>>;
    fn get<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BlobError>>;
}

/// Blobs as files under a root: `<root>/<hash[0..2]>/<hash>`.
#[derive(Debug, Clone)]
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, hash: &str) -> Result<PathBuf, BlobError> {
        let valid = hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !valid {
            return Err(BlobError::BadHash(hash.chars().take(80).collect()));
        }
        Ok(self.root.join(&hash[..2]).join(hash))
    }
}

impl BlobStore for FsBlobStore {
    fn put<'a>(
        &'a self,
        bytes: Vec<u8>,
        content_type: &'a str,
    ) -> BoxFuture<'a, Result<BlobRef, BlobError>> {
        Box::pin(async move {
            let hash = blake3::hash(&bytes).to_hex().to_string();
            let path = self.path_of(&hash)?;
            let len = bytes.len() as u64;
            if !tokio::fs::try_exists(&path).await.unwrap_or(false) {
                if let Some(dir) = path.parent() {
                    tokio::fs::create_dir_all(dir).await?;
                }
                // Write to a temporary name and rename, so a reader never
                // sees a half-written blob under its final address.
                let tmp = path.with_extension(format!("tmp{}", std::process::id()));
                tokio::fs::write(&tmp, &bytes).await?;
                tokio::fs::rename(&tmp, &path).await?;
            }
            Ok(BlobRef {
                hash,
                bytes: len,
                content_type: content_type.to_string(),
            })
        })
    }

    fn get<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BlobError>> {
        Box::pin(async move {
            let path = self.path_of(hash)?;
            match tokio::fs::read(&path).await {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trip_is_content_addressed() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = FsBlobStore::new(dir.path());
        let a = store
            .put(b"hello".to_vec(), "text/plain")
            .await
            .expect("put");
        assert_eq!(a.hash, blake3::hash(b"hello").to_hex().to_string());
        assert_eq!(a.bytes, 5);
        let again = store
            .put(b"hello".to_vec(), "text/plain")
            .await
            .expect("put");
        assert_eq!(a, again);
        assert_eq!(
            store.get(&a.hash).await.expect("get"),
            Some(b"hello".to_vec())
        );
        let absent = "0".repeat(64);
        assert_eq!(store.get(&absent).await.expect("get"), None);
        assert!(matches!(
            store.get("../etc/passwd").await,
            Err(BlobError::BadHash(_))
        ));
    }
}
