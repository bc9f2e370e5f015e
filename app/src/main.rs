//! Entry point of the wasm app: mounts [`glassbox_app::App`] on `<body>`.

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(glassbox_app::App);
}
