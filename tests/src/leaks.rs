//! Finding a secret where it must not be: every form a value could take
//! in a file or a response (raw, hex, JSON-escaped, URL-encoded, base64 at
//! each alignment), searched in bytes and in a whole directory.

use std::path::Path;

use base64::Engine as _;

/// Every form a canary could take in a file or a response.
pub fn forms(canary: &str) -> Vec<(String, Vec<u8>)> {
    let raw = canary.as_bytes();
    let mut out = vec![
        ("raw".to_string(), raw.to_vec()),
        ("hex".into(), hex::encode(raw).into_bytes()),
        ("HEX".into(), hex::encode_upper(raw).into_bytes()),
        (
            "json".into(),
            serde_json::to_string(canary)
                .expect("json")
                .trim_matches('"')
                .as_bytes()
                .to_vec(),
        ),
        ("url".into(), percent(raw).into_bytes()),
        ("url+".into(), percent(raw).replace("%20", "+").into_bytes()),
    ];
    // base64 at the three alignments a value can have inside a longer text:
    // the part of the encoding that does not depend on the neighbours.
    for (name, engine) in [
        ("base64", &base64::engine::general_purpose::STANDARD),
        ("base64url", &base64::engine::general_purpose::URL_SAFE),
    ] {
        for k in 0..3 {
            let mut padded = vec![b'x'; k];
            padded.extend_from_slice(raw);
            let enc = engine.encode(&padded);
            let start = if k == 0 { 0 } else { 4 };
            let end = enc.len().saturating_sub(4);
            out.push((format!("{name}@{k}"), enc.as_bytes()[start..end].to_vec()));
        }
    }
    out
}

fn percent(raw: &[u8]) -> String {
    raw.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// (where, "scope canary as form") of every secret of `secrets` (label,
/// value) found in `bytes`.
pub fn find_leaks(place: &str, bytes: &[u8], secrets: &[(&str, &str)]) -> Vec<String> {
    let mut found = Vec::new();
    for (label, secret) in secrets {
        for (form, needle) in forms(secret) {
            if contains(bytes, &needle) {
                found.push(format!("{label} canary as {form} in {place}"));
            }
        }
    }
    found
}

/// Every file under `dir`, recursively.
pub fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("read dir")
        .map_while(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}
