//! The executable side of a tool: the typed [`Tool`] trait, the one
//! type-erased wrapper that does the JSON ([`DynTool`]), the context a call
//! receives ([`context`]), and the versioned [`registry`].
//!
//! A tool never runs except through the executor (`crate::executor`), which
//! validates, guards, caches, resolves secrets and builds the envelope.

pub mod context;
pub mod registry;

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool_spec::{SideEffects, ToolSpec};

pub use context::{SqlBackend, SqlDialect, ToolContext, ToolEnv};
pub use registry::{RegisteredTool, RegistryError, ToolRegistry};

/// A typed tool. Implement this; the registry wraps it in [`DynTool`].
///
/// ```
/// use node_runtime::tool::{Tool, ToolContext};
/// use node_runtime::tool_spec::{SideEffects, ToolCategory, ToolMetadata, ToolSpec};
/// use node_runtime::ToolError;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// struct Echo;
/// #[derive(Deserialize)]
/// struct EchoInput { text: String }
///
/// impl Tool for Echo {
///     type Input = EchoInput;
///     type Output = String;
///     fn spec(&self) -> ToolSpec {
///         let mut metadata = ToolMetadata::new(ToolCategory::Utility);
///         metadata.side_effects = SideEffects::None;
///         ToolSpec {
///             name: "echo".into(),
///             version: "1.0.0".into(),
///             description: "Returns its text.".into(),
///             input_schema: json!({"type": "object", "required": ["text"],
///                                  "properties": {"text": {"type": "string"}}}),
///             output_schema: json!({"type": "string"}),
///             metadata,
///         }
///     }
///     async fn execute(&self, input: EchoInput, _ctx: &ToolContext) -> Result<String, ToolError> {
///         Ok(input.text)
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    type Input: DeserializeOwned + Send;
    type Output: Serialize + Send;

    /// The declaration: name, version, schemas, metadata.
    fn spec(&self) -> ToolSpec;

    /// Side effects of this particular call, for tools whose effect depends
    /// on the input (an HTTP GET reads, a POST writes). Defaults to the
    /// declared metadata. Sees the raw input: it runs before validation.
    fn side_effects_for(&self, _input: &Value) -> Option<SideEffects> {
        None
    }

    fn execute(
        &self,
        input: Self::Input,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// The type-erased tool the executor calls: JSON in, JSON out.
pub trait DynTool: Send + Sync {
    fn side_effects_for(&self, input: &Value) -> Option<SideEffects>;
    /// Runs the tool on `input` (borrowed: a call's input is shared by
    /// its records, see [`crate::Payload`]; the typed input is read from
    /// it).
    fn call<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// The single place where JSON becomes typed input and typed output
/// becomes JSON.
struct Erased<T>(T);

impl<T: Tool> DynTool for Erased<T> {
    fn side_effects_for(&self, input: &Value) -> Option<SideEffects> {
        self.0.side_effects_for(input)
    }

    fn call<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let typed = T::Input::deserialize(input).map_err(|err| {
                ToolError::validation(format!("input does not match the tool's types: {err}"))
            })?;
            let output = self.0.execute(typed, ctx).await?;
            serde_json::to_value(output)
                .map_err(|err| ToolError::unknown(format!("tool output is not JSON: {err}")))
        })
    }
}

/// Wraps a typed tool for the registry.
pub fn erase<T: Tool>(tool: T) -> (ToolSpec, Arc<dyn DynTool>) {
    let spec = tool.spec();
    (spec, Arc::new(Erased(tool)))
}
