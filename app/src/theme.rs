//! The colour theme: the system's (light or dark, as it prefers), or
//! light or dark chosen with the navigation's toggle, kept in
//! localStorage and applied as `<html data-theme>` (the CSS tokens in
//! `style/main.css` follow it).

const KEY: &str = "glassbox.theme";

/// The themes in the order the toggle goes through them.
pub const THEMES: [&str; 3] = ["system", "dark", "light"];

/// The theme after `current` in the toggle's order.
pub fn next(current: &str) -> &'static str {
    let i = THEMES.iter().position(|t| *t == current).unwrap_or(0);
    THEMES[(i + 1) % THEMES.len()]
}

/// The browser's localStorage, when there is one.
pub fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

/// The chosen theme (`system` when none was).
pub fn load() -> String {
    storage()
        .and_then(|s| s.get_item(KEY).ok().flatten())
        .filter(|t| THEMES.contains(&t.as_str()))
        .unwrap_or_else(|| "system".into())
}

/// Keeps `theme` and applies it to the page.
pub fn set(theme: &str) {
    if let Some(s) = storage() {
        let _ = s.set_item(KEY, theme);
    }
    apply(theme);
}

/// Applies `theme` to the page: `data-theme` on the root element, none
/// for the system's.
pub fn apply(theme: &str) {
    let Some(root) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    else {
        return;
    };
    let _ = if theme == "system" {
        root.remove_attribute("data-theme")
    } else {
        root.set_attribute("data-theme", theme)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_toggle_goes_round() {
        assert_eq!(next("system"), "dark");
        assert_eq!(next("dark"), "light");
        assert_eq!(next("light"), "system");
        assert_eq!(next("nonsense"), "dark");
    }
}
