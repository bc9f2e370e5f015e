//! The variables of templates (Agent Node prompts, Template nodes), which
//! are those nodes' input handles, learned from the server.
//!
//! The template parser is most of the editor's code, so the paths that draw
//! a graph do not carry it: `node_runtime::graph::template_variables`
//! answers in the browser only for templates it was told about (an unknown
//! one reads no variables and is noted as missed). A page that draws a
//! graph learns its templates before the first drawing ([`learn_workflow`])
//! and learns what later edits miss ([`learn_missed`]). The inspector,
//! which edits templates, parses them itself.

use node_runtime::graph::{
    known_template_variables, remember_template_variables, take_missed_templates, NodeKind,
    Workflow,
};

use crate::api;

/// The templates of `doc` whose variables are not known yet.
fn unknown_templates(doc: &Workflow) -> Vec<String> {
    let mut out: Vec<String> = doc
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Agent(c) => Some(c.prompt.clone()),
            NodeKind::Template(c) => Some(c.template.clone()),
            _ => None,
        })
        .filter(|t| known_template_variables(t).is_none())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Asks the server for the variables of `templates` and keeps them. On a
/// failure they stay unknown (their nodes show no input handles) and are
/// asked again when next missed.
async fn learn(templates: Vec<String>) -> bool {
    if templates.is_empty() {
        return false;
    }
    let mut learned = false;
    for batch in templates.chunks(node_runtime::wire::MAX_TEMPLATES_PER_REQUEST) {
        if let Ok(answers) = api::template_variables(batch).await {
            for (template, answer) in batch.iter().zip(answers) {
                remember_template_variables(template, answer);
                learned = true;
            }
        }
    }
    learned
}

/// Learns the variables of every template of `doc` (before drawing it).
pub async fn learn_workflow(doc: &Workflow) {
    learn(unknown_templates(doc)).await;
}

/// Learns the templates drawing missed since the last call, if any, then
/// calls `redraw` (which draws them with their handles).
pub fn learn_missed(redraw: impl FnOnce() + 'static) {
    let missed = take_missed_templates();
    if missed.is_empty() {
        return;
    }
    leptos::task::spawn_local(async move {
        if learn(missed).await {
            redraw();
        }
    });
}
