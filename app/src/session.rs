//! The session token, kept in the browser's localStorage so a reload keeps
//! the user signed in.

const KEY: &str = "glassbox.session";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

pub fn save(token: &str) -> bool {
    storage().is_some_and(|s| s.set_item(KEY, token).is_ok())
}

pub fn load() -> Option<String> {
    storage()?.get_item(KEY).ok()?
}

/// Forgets the session (after signing out).
pub fn clear() {
    if let Some(s) = storage() {
        let _ = s.remove_item(KEY);
    }
}
