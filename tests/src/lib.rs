//! Harness for Glassbox's end-to-end tests.
//!
//! It starts real processes (the `glassbox` binary, chromedriver and the
//! Chromium it drives) on free loopback ports and guarantees they stop: every
//! process lives in a guard whose `Drop` kills its whole process group, so a
//! failing or panicking test leaves nothing running.

pub mod db;
pub mod harness;
pub mod leaks;
pub mod mcp_peer;
pub mod mock_provider;
pub mod ui;
pub mod writes;
