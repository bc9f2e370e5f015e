//! The inspector's panels of Input, Template, Output and Branch nodes.
//! Each change is checked (`editor::nodes`) and applied as one undoable
//! edit; a refused one is named under the fields and changes nothing, so
//! the field keeps what was typed.

use leptos::prelude::*;
use node_runtime::graph::{
    parse_template_variables, render, BranchConfig, InputConfig, NodeKind, OutputConfig,
    TemplateConfig,
};

use super::inspector::set_kind;
use super::run_panel::Watched;
use crate::editor::model::Editor;
use crate::editor::nodes::{self, InputField, BRANCH_OPS, FIELD_TYPES};

fn kind_of(editor: RwSignal<Editor>, id: &str) -> Option<NodeKind> {
    editor.with_untracked(|e| e.node(id).map(|n| n.kind.clone()))
}

fn problem_line(problem: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        problem
            .get()
            .map(|p| view! { <p class="error" role="alert" data-testid="node-error">{p}</p> })
    }
}

/// An Input node: its fields (name, type, default, description,
/// required), which are its output handles and the Run form's fields.
pub fn input_panel(editor: RwSignal<Editor>, id: String) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    // Applies a change to the fields through the checked schema.
    let change = move |id: &str, f: &dyn Fn(&mut Vec<InputField>)| {
        let Some(NodeKind::Input(c)) = kind_of(editor, id) else {
            return;
        };
        let mut fields = nodes::input_fields(&c.schema);
        f(&mut fields);
        match nodes::input_schema(&fields) {
            Ok(schema) => {
                problem.set(None);
                set_kind(editor, id, NodeKind::Input(InputConfig { schema }));
            }
            Err(e) => problem.set(Some(e)),
        }
    };
    let add_id = id.clone();
    let add = move |_| {
        change(&add_id, &|fields| {
            let name = nodes::new_field_name(fields);
            fields.push(InputField {
                name,
                kind: "string".into(),
                default: String::new(),
                description: String::new(),
                required: false,
            });
        })
    };
    let rows = move || {
        let Some(NodeKind::Input(c)) = editor.with(|e| e.node(&id).map(|n| n.kind.clone())) else {
            return ().into_any();
        };
        let fields = nodes::input_fields(&c.schema);
        if fields.is_empty() {
            return view! { <p class="muted">"No fields yet: each field is an output of this node and a box of the Run form."</p> }.into_any();
        }
        view! {
            <ul class="input-fields" data-testid="input-fields">
                {fields.into_iter().enumerate().map(|(i, f)| {
                    let text = {
                        let id = id.clone();
                        move |attr: &'static str| {
                            let id = id.clone();
                            move |ev: leptos::ev::Event| {
                                let value = event_target_value(&ev);
                                change(&id, &|fields| {
                                    if let Some(f) = fields.get_mut(i) {
                                        match attr {
                                            "name" => f.name = value.trim().to_string(),
                                            "type" => f.kind = value.clone(),
                                            "default" => f.default = value.clone(),
                                            _ => f.description = value.clone(),
                                        }
                                    }
                                });
                            }
                        }
                    };
                    let (req_id, remove_id) = (id.clone(), id.clone());
                    view! {
                        <li class="field-row" data-input-field=f.name.clone()>
                            <label class="field">"Name"
                                <input type="text" data-input-attr="name" prop:value=f.name.clone() on:change=text("name") />
                            </label>
                            <label class="field">"Type"
                                <select data-input-attr="type" on:change=text("type")>
                                    {FIELD_TYPES.iter().map(|t| view! { <option value=*t selected=*t == f.kind>{*t}</option> }).collect_view()}
                                </select>
                            </label>
                            <label class="field">"Default (JSON unless a string)"
                                <input type="text" data-input-attr="default" prop:value=f.default.clone() on:change=text("default") />
                            </label>
                            <label class="field">"Description"
                                <input type="text" data-input-attr="description" prop:value=f.description.clone() on:change=text("description") />
                            </label>
                            <label class="check">
                                <input type="checkbox" data-input-attr="required" prop:checked=f.required on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    change(&req_id, &|fields| if let Some(f) = fields.get_mut(i) { f.required = on; });
                                } />
                                " required"
                            </label>
                            <button type="button" data-testid="input-field-remove" on:click=move |_| {
                                change(&remove_id, &|fields| { if i < fields.len() { fields.remove(i); } });
                            }>"Remove"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }.into_any()
    };
    view! {
        <h3>"Fields"</h3>
        {rows}
        <button type="button" data-testid="input-field-add" on:click=add>"Add field"</button>
        {problem_line(problem)}
    }
}

/// A Template node: its text, the input handles its variables make (shown
/// as it is typed), and a preview of it over the last run's inputs.
pub fn template_panel(editor: RwSignal<Editor>, watched: Watched, id: String) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    let initial = match kind_of(editor, &id) {
        Some(NodeKind::Template(c)) => c.template,
        _ => String::new(),
    };
    let typed = RwSignal::new(initial.clone());
    let set_id = id.clone();
    let set = move |ev: leptos::ev::Event| {
        let template = event_target_value(&ev);
        match parse_template_variables(&template) {
            Ok(_) => {
                problem.set(None);
                set_kind(
                    editor,
                    &set_id,
                    NodeKind::Template(TemplateConfig { template }),
                );
            }
            Err(e) => problem.set(Some(format!("The template does not parse: {e}"))),
        }
    };
    let variables = move || match parse_template_variables(&typed.get()) {
        Ok(v) if v.is_empty() => "none".to_string(),
        Ok(v) => v.into_iter().collect::<Vec<_>>().join(", "),
        Err(_) => "(the template does not parse yet)".into(),
    };
    // The text as typed, rendered over the last run's inputs to this node,
    // as the run renders it (`graph::render`).
    let last = move || {
        let node = watched.with(|w| {
            w.as_ref()
                .and_then(|(_, l)| l.results.as_ref())
                .and_then(|r| r.get(&id).cloned())
        })?;
        let inputs = serde_json::to_string(&node.inputs).unwrap_or_default();
        let (ok, text) = match render(&typed.get(), &node.inputs) {
            Ok(t) => (true, t),
            Err(e) => (false, e),
        };
        Some(view! {
            <div class="preview" data-testid="template-preview">
                <p class="muted">"Preview with the last run's inputs " <code>{inputs}</code></p>
                <pre class=if ok { "json" } else { "json error" } data-testid="template-preview-text">{text}</pre>
            </div>
        })
    };
    view! {
        <label class="field">"Template (minijinja; each {{ variable }} is an input handle)"
            <textarea data-testid="template-text" rows="5" prop:value=initial
                on:input=move |ev| typed.set(event_target_value(&ev)) on:change=set></textarea>
        </label>
        <p class="muted" data-testid="template-inputs">"Inputs: " {variables}</p>
        {problem_line(problem)}
        {last}
    }
}

/// An Output node: its field names, each an input handle and a key of the
/// run's outputs.
pub fn output_panel(editor: RwSignal<Editor>, id: String) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    let current = match kind_of(editor, &id) {
        Some(NodeKind::Output(c)) => c.fields.join(", "),
        _ => String::new(),
    };
    let set = move |ev: leptos::ev::Event| match nodes::output_fields(&event_target_value(&ev)) {
        Ok(fields) => {
            problem.set(None);
            set_kind(editor, &id, NodeKind::Output(OutputConfig { fields }));
        }
        Err(e) => problem.set(Some(e)),
    };
    view! {
        <label class="field">"Fields (separated by commas or lines)"
            <textarea data-testid="output-fields" rows="3" prop:value=current on:change=set></textarea>
        </label>
        {problem_line(problem)}
    }
}

/// A Branch node: which part of its value it looks at, the condition, and
/// the two handles it emits (`true`, `false`).
pub fn branch_panel(editor: RwSignal<Editor>, id: String) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    let change = move |id: &str, field: &'static str, text: String| {
        let Some(NodeKind::Branch(mut c)) = kind_of(editor, id) else {
            return;
        };
        match nodes::set_branch_field(&mut c, field, &text) {
            Ok(()) => {
                problem.set(None);
                set_kind(editor, id, NodeKind::Branch(c));
            }
            Err(e) => problem.set(Some(e)),
        }
    };
    move || {
        let Some(NodeKind::Branch(BranchConfig { pointer, condition })) =
            editor.with(|e| e.node(&id).map(|n| n.kind.clone()))
        else {
            return ().into_any();
        };
        let (op, value) = nodes::branch_op(&condition);
        let compares = matches!(op, "equals" | "not_equals");
        let (p_id, o_id, v_id) = (id.clone(), id.clone(), id.clone());
        view! {
            <label class="field">"Path in the value (JSON Pointer; empty: the whole value)"
                <input type="text" data-branch="pointer" placeholder="/error/code" prop:value=pointer
                    on:change=move |ev| change(&p_id, "pointer", event_target_value(&ev)) />
            </label>
            <label class="field">"Condition"
                <select data-branch="op" on:change=move |ev| change(&o_id, "op", event_target_value(&ev))>
                    {BRANCH_OPS.iter().map(|(v, label)| view! { <option value=*v selected=*v == op>{*label}</option> }).collect_view()}
                </select>
            </label>
            {compares.then(|| view! {
                <label class="field">"Value (JSON, or a word)"
                    <input type="text" data-branch="value" prop:value=value
                        on:change=move |ev| change(&v_id, "value", event_target_value(&ev)) />
                </label>
            })}
            <p class="muted">"The value goes out on " <code>"true"</code> " when the condition holds, else on " <code>"false"</code> "."</p>
            {problem_line(problem)}
        }
        .into_any()
    }
}
