//! One module per route.

mod home;
mod not_found;
mod signin;
mod trace;

pub use home::Home;
pub use not_found::NotFound;
pub use signin::SignIn;
pub use trace::TracePage;
