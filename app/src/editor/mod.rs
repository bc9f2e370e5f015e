//! The workflow editor's logic, free of the DOM: the document and its
//! undo history (`model`), the edits it applies (`edit`), and the canvas
//! geometry (`geometry`). The page
//! (`pages::editor`) only draws and forwards input.

pub mod agent;
pub mod edit;
pub mod geometry;
pub mod layout;
pub mod model;
pub mod nodes;
pub mod tools;
