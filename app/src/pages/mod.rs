//! One module per route.

mod editor;
mod home;
mod inspector;
mod not_found;
mod settings;
mod signin;
mod trace;
mod workflows;

pub use editor::EditorPage;
pub use home::Home;
pub use not_found::NotFound;
pub use settings::Settings;
pub use signin::SignIn;
pub use trace::TracePage;
pub use workflows::Workflows;
