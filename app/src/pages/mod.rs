//! One module per route.

mod agent_settings;
mod call_drawer;
mod connections;
mod editor;
mod home;
mod inspector;
mod node_panels;
mod not_found;
mod run_graph;
mod run_panel;
mod runs;
mod settings;
mod signin;
mod suites;
mod teams;
mod timeline;
mod tools;
mod trace;
mod workflows;

pub use editor::EditorPage;
pub use home::Home;
pub use not_found::NotFound;
pub use runs::{RunPage, Runs};
pub use settings::Settings;
pub use signin::SignIn;
pub use suites::{SuitePage, Suites};
pub use teams::InvitePage;
pub use tools::Tools;
pub use trace::TracePage;
pub use workflows::Workflows;
