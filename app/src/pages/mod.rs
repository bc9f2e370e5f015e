//! One module per route.

mod home;
mod not_found;

pub use home::Home;
pub use not_found::NotFound;
