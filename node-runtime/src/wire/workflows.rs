//! Workflows as the API shows them: the list, one workflow with its
//! document, a saved revision with the server's diagnostics, and the
//! revision history.

use serde::{Deserialize, Serialize};

use crate::graph::validate::Diagnostic;
use crate::graph::Workflow;

/// Body of `GET /api/v1/workflows`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowList {
    pub workflows: Vec<WorkflowItem>,
}

/// One row of [`WorkflowList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowItem {
    pub id: String,
    pub name: String,
    /// The workflow's one-line description; empty when it has none.
    pub description: String,
    pub revision: u64,
    pub updated_at: String,
}

/// Body of `GET /api/v1/workflows/{id}`: the latest revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowView {
    pub id: String,
    pub name: String,
    /// The workflow's one-line description; empty when it has none.
    pub description: String,
    pub revision: u64,
    pub created_at: String,
    pub updated_at: String,
    /// The workflow document (format version 1, see `graph`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub workflow: Workflow,
}

/// Body of `POST /api/v1/workflows` (201) and `PUT /api/v1/workflows/{id}`:
/// the saved revision and what validation says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowSaved {
    #[serde(flatten)]
    pub view: WorkflowView,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub diagnostics: Vec<Diagnostic>,
}

/// Body of `POST /api/v1/workflows/validate` and
/// `POST /api/v1/workflows/{id}/validate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Diagnostics {
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub diagnostics: Vec<Diagnostic>,
}

/// Body of `GET /api/v1/workflows/{id}/revisions`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevisionList {
    pub revisions: Vec<Revision>,
}

/// One revision of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Revision {
    pub revision: u64,
    pub created_at: String,
}

/// Body of `GET /api/v1/examples`: the example workflows this server
/// offers for "New from example".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExampleList {
    pub examples: Vec<ExampleItem>,
}

/// One example of [`ExampleList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExampleItem {
    /// The example's id (its file's `id`), for
    /// `POST /api/v1/examples/{id}/workflows`.
    pub id: String,
    pub name: String,
    /// One line: what it shows and what it needs, if anything.
    pub description: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_saved_workflow_is_the_view_with_its_diagnostics_beside() {
        let answer = json!({
            "id": "w", "name": "n", "description": "d", "revision": 1, "created_at": "a", "updated_at": "b",
            "workflow": {"format_version": 1, "id": "w", "name": "n", "description": "d", "revision": 1, "nodes": [], "edges": []},
            "diagnostics": []
        });
        let saved: WorkflowSaved = serde_json::from_value(answer.clone()).expect("decodes");
        assert_eq!((saved.view.revision, saved.diagnostics.len()), (1, 0));
        assert_eq!(serde_json::to_value(&saved).expect("encodes"), answer);
        let view: WorkflowView = serde_json::from_value(answer).expect("the view alone");
        assert_eq!(view, saved.view);
    }
}

/// Body of `POST /api/v1/workflows/template-variables`: template texts
/// (Agent prompts, Template nodes) whose variables, the nodes' input
/// handles, the browser app needs (it has no template parser of its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TemplateVariablesRequest {
    /// At most [`MAX_TEMPLATES_PER_REQUEST`].
    pub templates: Vec<String>,
}

/// The most templates one `template-variables` request may ask about.
pub const MAX_TEMPLATES_PER_REQUEST: usize = 1000;

/// Answer of `POST /api/v1/workflows/template-variables`: one entry per
/// template asked about, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TemplateVariablesAnswer {
    pub variables: Vec<TemplateVariablesOf>,
}

/// The variables one template reads, sorted, or why it does not parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TemplateVariablesOf {
    /// Empty when `error` is set.
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TemplateVariablesOf {
    pub fn of(answer: crate::graph::TemplateVariables) -> Self {
        match answer {
            Ok(names) => Self {
                names: names.into_iter().collect(),
                error: None,
            },
            Err(error) => Self {
                names: Vec::new(),
                error: Some(error),
            },
        }
    }

    pub fn answer(self) -> crate::graph::TemplateVariables {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.names.into_iter().collect()),
        }
    }
}
