//! `read_file`, `list_dir` (reads) and `write_file` (writes), confined to the
//! workspace's files directory (`ToolEnv::files_root`).
//!
//! A path must be relative and free of `..`. It is opened one component at
//! a time below the root (`cap-std`: each step from the directory handle
//! of the one before), and a symlink at any component is refused, so no
//! link, placed before or during the call, leads anywhere else.
//! `write_file` never creates directories (parents must exist). The root is the
//! tools' sandbox: if it cannot be created or resolved the call fails with
//! SANDBOX_ERROR.

use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Tool, ToolContext};
use crate::tool_spec::{SideEffects, ToolCategory, ToolMetadata, ToolSpec};

pub const MAX_READ_BYTES: u64 = 1024 * 1024;
pub const MAX_WRITE_BYTES: usize = 1024 * 1024;
pub const MAX_ENTRIES: usize = 1000;

fn refused(path: &str, why: &str) -> ToolError {
    ToolError::policy_denied(format!("path `{path}` is refused: {why}"))
        .with_details(json!({ "reason": "PATH_ESCAPE", "path": "/path" }))
}

fn io_error(path: &str, e: std::io::Error) -> ToolError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ToolError::validation(format!("`{path}` does not exist"))
            .with_details(json!({ "path": "/path" }))
    } else {
        ToolError::unknown(format!("cannot access `{path}`: {e}"))
    }
}

fn root(ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    let root = ctx.env.files_root.as_ref().ok_or_else(|| {
        ToolError::policy_denied(
            "file tools are not enabled for this workspace (no files directory)",
        )
    })?;
    // The files directory is these tools' sandbox: when it cannot be set
    // up, the sandbox failed (SANDBOX_ERROR), not the caller.
    let sandbox = |what: &str, e: std::io::Error| {
        ToolError::new(
            ErrorCode::SandboxError,
            format!("the workspace files directory {what}: {e}"),
        )
    };
    std::fs::create_dir_all(root).map_err(|e| sandbox("cannot be created", e))?;
    root.canonicalize()
        .map_err(|e| sandbox("cannot be resolved", e))
}

/// Checks the lexical form: relative, no `..`, no prefix.
fn lexical(path: &str) -> Result<PathBuf, ToolError> {
    if path.contains('\0') {
        return Err(refused(path, "contains a NUL byte"));
    }
    let p = Path::new(path);
    let mut clean = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(refused(path, "`..` is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refused(path, "absolute paths are not allowed"))
            }
        }
    }
    Ok(clean)
}

/// Opens the directories of `rel` below the root, one component at a
/// time, refusing a symlink at any of them.
fn open_dirs(root: &Path, rel: &Path, path: &str) -> Result<Dir, ToolError> {
    let mut dir =
        Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(|e| io_error(path, e))?;
    for part in rel.components() {
        let name = part.as_os_str();
        no_symlink(&dir, name, path)?;
        dir = dir.open_dir_nofollow(name).map_err(|e| io_error(path, e))?;
    }
    Ok(dir)
}

/// Refuses a symlink at `name` in `dir` (a missing entry is not refused).
fn no_symlink(dir: &Dir, name: &std::ffi::OsStr, path: &str) -> Result<(), ToolError> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.file_type().is_symlink() => Err(refused(
            path,
            "a part of it is a symlink, which the file tools never follow",
        )),
        _ => Ok(()),
    }
}

/// The directory part and the final name of a path.
fn split(rel: &Path, path: &str) -> Result<(PathBuf, std::ffi::OsString), ToolError> {
    let name = rel
        .file_name()
        .ok_or_else(|| refused(path, "it names no file"))?
        .to_os_string();
    Ok((
        rel.parent().map(Path::to_path_buf).unwrap_or_default(),
        name,
    ))
}

fn spec(
    name: &str,
    description: &str,
    side_effects: SideEffects,
    input: Value,
    output: Value,
) -> ToolSpec {
    let mut metadata = ToolMetadata::new(ToolCategory::Data);
    metadata.side_effects = side_effects;
    metadata.timeout_ms = 5_000;
    if side_effects == SideEffects::Writes {
        metadata.effect_description =
            Some("Creates or overwrites a file in the workspace files directory.".into());
    }
    ToolSpec {
        name: name.into(),
        version: "1.0.0".into(),
        description: description.into(),
        input_schema: input,
        output_schema: output,
        metadata,
    }
}

#[derive(Debug, Deserialize)]
pub struct PathInput {
    pub path: String,
}

pub struct ReadFile;

impl Tool for ReadFile {
    type Input = PathInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        spec(
            "read_file",
            "Reads a text file from the workspace files directory.",
            SideEffects::Reads,
            json!({"type": "object", "properties": {"path": {"type": "string", "minLength": 1, "maxLength": 4096}},
                   "required": ["path"], "additionalProperties": false}),
            json!({"type": "object", "required": ["path", "content", "bytes", "truncated"]}),
        )
    }

    async fn execute(&self, input: PathInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        let root = root(ctx)?;
        let rel = lexical(&input.path)?;
        let (parent, name) = split(&rel, &input.path)?;
        let dir = open_dirs(&root, &parent, &input.path)?;
        no_symlink(&dir, &name, &input.path)?;
        let mut options = OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No);
        let file = dir
            .open_with(&name, &options)
            .map_err(|e| io_error(&input.path, e))?;
        let meta = file.metadata().map_err(|e| io_error(&input.path, e))?;
        if !meta.is_file() {
            return Err(
                ToolError::validation(format!("`{}` is not a file", input.path))
                    .with_details(json!({ "path": "/path" })),
            );
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_READ_BYTES + 1),
            &mut bytes,
        )
        .map_err(|e| io_error(&input.path, e))?;
        let truncated = bytes.len() as u64 > MAX_READ_BYTES;
        let kept = &bytes[..bytes.len().min(MAX_READ_BYTES as usize)];
        Ok(json!({
            "path": input.path,
            "content": String::from_utf8_lossy(kept),
            "bytes": meta.len(),
            "truncated": truncated,
        }))
    }
}

pub struct ListDir;

impl Tool for ListDir {
    type Input = PathInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        spec(
            "list_dir",
            "Lists a directory in the workspace files directory (`.` for the top).",
            SideEffects::Reads,
            json!({"type": "object", "properties": {"path": {"type": "string", "minLength": 1, "maxLength": 4096}},
                   "required": ["path"], "additionalProperties": false}),
            json!({"type": "object", "required": ["path", "entries", "truncated"]}),
        )
    }

    async fn execute(&self, input: PathInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        let root = root(ctx)?;
        let rel = lexical(&input.path)?;
        let dir = open_dirs(&root, &rel, &input.path)?;
        let mut entries = Vec::new();
        let mut truncated = false;
        for entry in dir.entries().map_err(|e| io_error(&input.path, e))? {
            let entry = entry.map_err(|e| io_error(&input.path, e))?;
            if entries.len() == MAX_ENTRIES {
                truncated = true;
                break;
            }
            let ft = entry.file_type().map_err(|e| io_error(&input.path, e))?;
            let kind = if ft.is_symlink() {
                "symlink"
            } else if ft.is_dir() {
                "dir"
            } else {
                "file"
            };
            let bytes = if ft.is_file() {
                entry.metadata().map(|m| m.len()).ok()
            } else {
                None
            };
            entries.push(json!({ "name": entry.file_name().to_string_lossy(), "kind": kind, "bytes": bytes }));
        }
        entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(json!({ "path": input.path, "entries": entries, "truncated": truncated }))
    }
}

pub struct WriteFile;

#[derive(Debug, Deserialize)]
pub struct WriteInput {
    pub path: String,
    pub content: String,
    #[serde(default)]
    pub append: bool,
}

impl Tool for WriteFile {
    type Input = WriteInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        spec(
            "write_file",
            "Creates, overwrites or appends to a text file in the workspace files directory.",
            SideEffects::Writes,
            json!({"type": "object", "properties": {
                      "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                      "content": {"type": "string", "maxLength": MAX_WRITE_BYTES},
                      "append": {"type": "boolean"}},
                   "required": ["path", "content"], "additionalProperties": false}),
            json!({"type": "object", "required": ["path", "bytes_written"]}),
        )
    }

    async fn execute(&self, input: WriteInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        let root = root(ctx)?;
        let rel = lexical(&input.path)?;
        let (parent, name) = split(&rel, &input.path)?;
        let dir = open_dirs(&root, &parent, &input.path)?;
        no_symlink(&dir, &name, &input.path)?;
        if dir.symlink_metadata(&name).is_ok_and(|m| m.is_dir()) {
            return Err(
                ToolError::validation(format!("`{}` is a directory", input.path))
                    .with_details(json!({ "path": "/path" })),
            );
        }
        let mut options = OpenOptions::new();
        options.create(true).follow(FollowSymlinks::No);
        if input.append {
            options.append(true);
        } else {
            options.write(true).truncate(true);
        }
        let mut file = dir
            .open_with(&name, &options)
            .map_err(|e| io_error(&input.path, e))?;
        std::io::Write::write_all(&mut file, input.content.as_bytes())
            .map_err(|e| io_error(&input.path, e))?;
        std::io::Write::flush(&mut file).map_err(|e| io_error(&input.path, e))?;
        Ok(json!({ "path": input.path, "bytes_written": input.content.len() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_rules() {
        assert!(lexical("a/b.txt").is_ok());
        assert!(lexical("./a").is_ok());
        assert!(lexical("../a").is_err());
        assert!(lexical("a/../../b").is_err());
        assert!(lexical("/etc/passwd").is_err());
        assert!(lexical("a\0b").is_err());
    }
}
