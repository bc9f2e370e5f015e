//! The session token and the current workspace, kept in the browser's
//! localStorage so a reload keeps the user signed in, in the same
//! workspace.

const KEY: &str = "glassbox.session";
/// The workspace the app acts in (sent as `X-Glassbox-Workspace`).
const WORKSPACE_KEY: &str = "glassbox.workspace";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

pub fn save(token: &str) -> bool {
    storage().is_some_and(|s| s.set_item(KEY, token).is_ok())
}

pub fn load() -> Option<String> {
    storage()?.get_item(KEY).ok()?
}

/// Remembers `id` as the current workspace.
pub fn save_workspace(id: &str) -> bool {
    storage().is_some_and(|s| s.set_item(WORKSPACE_KEY, id).is_ok())
}

/// The current workspace, when one was chosen.
pub fn workspace() -> Option<String> {
    storage()?
        .get_item(WORKSPACE_KEY)
        .ok()?
        .filter(|w| !w.is_empty())
}

/// Forgets the current workspace (the server then acts in the user's
/// first).
pub fn forget_workspace() {
    if let Some(s) = storage() {
        let _ = s.remove_item(WORKSPACE_KEY);
    }
}

/// Forgets the session and its workspace (after signing out).
pub fn clear() {
    if let Some(s) = storage() {
        let _ = s.remove_item(KEY);
        let _ = s.remove_item(WORKSPACE_KEY);
    }
}
