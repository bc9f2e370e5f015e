//! Stage 5: the output size cap (seed 003 §5.4).
//!
//! An output whose JSON is larger than `max_output_bytes` is stored whole in
//! the blob store; `output` becomes a valid JSON preview, `truncated` is set
//! and a `blob` attachment addresses the full payload. An output of exactly
//! the limit stays inline.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;

use super::{CallState, Next, Stage, StageOutput, StageResult};
use crate::blob::BlobStore;
use crate::envelope::{Attachment, AttachmentKind};
use crate::error::ToolError;

/// The longest text preview kept inline.
const PREVIEW_CHARS: usize = 4096;

pub struct OutputCap {
    max_bytes: usize,
    blobs: Arc<dyn BlobStore>,
}

impl OutputCap {
    pub fn new(max_bytes: usize, blobs: Arc<dyn BlobStore>) -> Self {
        Self { max_bytes, blobs }
    }
}

impl Stage for OutputCap {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let out = next.run(state).await?;
            let bytes = serde_json::to_vec(&out.output)
                .map_err(|e| ToolError::unknown(format!("output is not serializable: {e}")))?;
            if bytes.len() <= self.max_bytes {
                return Ok(out);
            }
            let total = bytes.len();
            let text = String::from_utf8_lossy(&bytes);
            let keep = PREVIEW_CHARS.min(self.max_bytes / 2);
            let preview: String = text.chars().take(keep).collect();
            let blob = self
                .blobs
                .put(bytes, "application/json")
                .await
                .map_err(|e| {
                    ToolError::unknown(format!("cannot store the oversized output: {e}"))
                })?;
            Ok(StageOutput {
                output: json!({
                    "truncated": true,
                    "bytes": total,
                    "blob": blob.hash,
                    "preview": preview,
                }),
                truncated: true,
                attachments: {
                    let mut a = out.attachments;
                    a.push(Attachment {
                        kind: AttachmentKind::Blob,
                        url: blob.url(),
                        content_type: Some(blob.content_type),
                        bytes: Some(blob.bytes),
                    });
                    a
                },
                cached: out.cached,
            })
        })
    }
}
