//! The built-in tools. Each declares its schemas and metadata and is tested
//! with bad input; [`register_builtins`] adds them all to a registry.

pub mod calculator;
pub mod files;
pub mod http_request;
pub mod json_query;
pub mod sql_query;

use crate::tool::{RegistryError, ToolRegistry};

/// Registers every built-in tool at its current version.
pub fn register_builtins(registry: &mut ToolRegistry) -> Result<(), RegistryError> {
    registry.register(calculator::Calculator)?;
    registry.register(http_request::HttpRequest)?;
    registry.register(json_query::JsonQuery)?;
    registry.register(sql_query::SqlQuery)?;
    registry.register(files::ReadFile)?;
    registry.register(files::ListDir)?;
    registry.register(files::WriteFile)?;
    Ok(())
}
