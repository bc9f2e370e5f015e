//! Small WebDriver helpers for the browser tests: find and wait for
//! elements by CSS selector, with errors that name the selector.

use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, Locator};

use crate::harness::{wait_for_text, Browser, Server};

/// Polls `check` every 50 ms until it says yes (20 s at most); the error
/// names `what`.
pub async fn wait_until<F, Fut>(what: &str, mut check: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if check().await? {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The element matching `css`; the error names it.
pub async fn find(c: &Client, css: &str) -> Result<Element, String> {
    c.find(Locator::Css(css))
        .await
        .map_err(|e| format!("{css}: {e}"))
}

/// Waits for the element matching `css` to appear; the error names it.
pub async fn appear(c: &Client, css: &str) -> Result<Element, String> {
    c.wait()
        .for_element(Locator::Css(css))
        .await
        .map_err(|e| format!("{css}: {e}"))
}

/// Clicks the element matching `css`, which asks the browser's confirm,
/// and answers it: OK with `accept`, Cancel without.
pub async fn click_and_answer(c: &Client, css: &str, accept: bool) -> Result<(), String> {
    click(c, css).await?;
    if accept {
        c.accept_alert().await
    } else {
        c.dismiss_alert().await
    }
    .map_err(|e| format!("the confirm of {css}: {e}"))
}

/// Clicks the element matching `css`, waiting for it to appear first; an
/// element re-rendered between finding and clicking is found again.
pub async fn click(c: &Client, css: &str) -> Result<(), String> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match appear(c, css).await?.click().await {
            Ok(()) => return Ok(()),
            Err(fantoccini::error::CmdError::Standard(e))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference
                    && attempts < 3 => {}
            Err(e) => return Err(format!("click {css}: {e}")),
        }
    }
}

pub async fn count(c: &Client, css: &str) -> Result<usize, String> {
    Ok(c.find_all(Locator::Css(css))
        .await
        .map_err(|e| e.to_string())?
        .len())
}

/// Types `text` into the element matching `css` (after clearing it) and
/// leaves the field, so its change event fires.
pub async fn type_and_leave(c: &Client, css: &str, text: &str) -> Result<(), String> {
    let e = find(c, css).await?;
    e.clear().await.map_err(|e| format!("clear {css}: {e}"))?;
    e.send_keys(&format!("{text}\t"))
        .await
        .map_err(|e| format!("type into {css}: {e}"))
}

/// The `value` property of the element matching `css`.
pub async fn value_of(c: &Client, css: &str) -> Result<String, String> {
    find(c, css)
        .await?
        .prop("value")
        .await
        .map_err(|e| format!("{css}: {e}"))
        .map(Option::unwrap_or_default)
}

/// The text of the element matching `css`, or "" while there is none (for
/// polling something that appears later).
pub async fn text_or_empty(c: &Client, css: &str) -> Result<String, String> {
    match c.find(Locator::Css(css)).await {
        Ok(e) => e.text().await.map_err(|e| format!("{css}: {e}")),
        Err(fantoccini::error::CmdError::Standard(e))
            if e.error == fantoccini::error::ErrorStatus::NoSuchElement =>
        {
            Ok(String::new())
        }
        Err(e) => Err(format!("{css}: {e}")),
    }
}

/// An attribute of the element matching `css`, or None while there is none.
pub async fn attr_or_none(c: &Client, css: &str, name: &str) -> Result<Option<String>, String> {
    match c.find(Locator::Css(css)).await {
        Ok(e) => e.attr(name).await.map_err(|e| format!("{css}: {e}")),
        Err(fantoccini::error::CmdError::Standard(e))
            if e.error == fantoccini::error::ErrorStatus::NoSuchElement =>
        {
            Ok(None)
        }
        Err(e) => Err(format!("{css}: {e}")),
    }
}

/// Signs in, creates a workflow named `name` from the workflows page and
/// waits for its editor; returns the session token.
pub async fn new_workflow(
    browser: &Browser,
    server: &Server,
    name: &str,
) -> Result<String, String> {
    let token = browser.sign_in(server).await?;
    create_workflow(browser, server, name).await?;
    Ok(token)
}

/// Creates a workflow named `name` from the workflows page (already signed
/// in) and waits for its editor.
pub async fn create_workflow(browser: &Browser, server: &Server, name: &str) -> Result<(), String> {
    submit_new_workflow(browser, server, name).await?;
    wait_for_text(
        &browser.client,
        "[data-testid=workflow-name]",
        Duration::from_secs(30),
    )
    .await?;
    Ok(())
}

/// Submits the workflows page's New workflow form with `name` (already
/// signed in); the app then opens the new workflow's editor.
pub async fn submit_new_workflow(
    browser: &Browser,
    server: &Server,
    name: &str,
) -> Result<(), String> {
    let c = &browser.client;
    browser.open(&format!("{}/workflows", server.url)).await?;
    appear(c, "[data-testid=new-workflow-name]")
        .await?
        .send_keys(name)
        .await
        .map_err(|e| e.to_string())?;
    click(c, "[data-testid=new-workflow]").await
}

/// The id of the workflow whose editor is open (from its address,
/// `/workflows/{id}`).
pub async fn open_workflow_id(c: &Client) -> Result<String, String> {
    let address = c.current_url().await.map_err(|e| e.to_string())?;
    match address
        .path_segments()
        .map(|s| s.collect::<Vec<_>>())
        .as_deref()
    {
        Some(["workflows", id]) if !id.is_empty() => Ok((*id).to_string()),
        _ => Err(format!("{address} is not a workflow's editor")),
    }
}

/// Clicks the palette button of `kind` and returns the new node's id.
pub async fn add_node(c: &Client, kind: &str) -> Result<String, String> {
    let before = count(c, &format!("[data-kind={kind}]")).await?;
    click(c, &format!("[data-palette={kind}]")).await?;
    let want = before + 1;
    wait_until("the new node", || async move {
        Ok(count(c, &format!("[data-kind={kind}]")).await? == want)
    })
    .await?;
    Ok(format!("{kind}{want}"))
}

/// Opens node `id`'s panel (after fitting the graph to the view, so a
/// new node placed beyond it can be clicked).
pub async fn select(c: &Client, id: &str) -> Result<(), String> {
    click(c, "[data-testid=fit]").await?;
    click(c, &format!("[data-node={id}] .node-label")).await?;
    wait_until("its panel", || async {
        Ok(text_or_empty(c, "[data-testid=inspector] h2").await? == id)
    })
    .await
}

/// Wires `from` (node.handle) to `to` (node.handle) with the panel's
/// Connect form.
pub async fn connect(c: &Client, from: (&str, &str), to: (&str, &str)) -> Result<(), String> {
    select(c, from.0).await?;
    click(
        c,
        &format!("[data-testid=connect-from] option[value='{}']", from.1),
    )
    .await?;
    click(c, "[data-testid=connect-to]").await?;
    let target = format!("[data-testid=connect-to] option[value='{}:{}']", to.0, to.1);
    appear(c, &target).await?;
    click(c, &target).await?;
    let edges = count(c, "path.edge[data-edge]").await?;
    click(c, "[data-testid=connect]").await?;
    wait_until("the new wire", || async {
        Ok(count(c, "path.edge[data-edge]").await? == edges + 1)
    })
    .await
}

/// In the open editor: a new Agent node with `prompt`, the `tools`
/// (`name@version`) enabled in its tool list, and the scripted provider's
/// `script` (`{"turns": [...]}`) typed into its turns editor, as a user
/// builds one; returns the node's id (its panel stays open).
pub async fn scripted_agent(
    c: &Client,
    prompt: &str,
    tools: &[&str],
    script: &serde_json::Value,
) -> Result<String, String> {
    let agent = add_node(c, "agent").await?;
    select(c, &agent).await?;
    type_and_leave(c, "[data-testid=agent-prompt]", prompt).await?;
    for tool in tools {
        click(
            c,
            &format!("[data-tool='{tool}'] [data-testid=tool-enable]"),
        )
        .await?;
    }
    type_and_leave(c, "[data-testid=script-turns]", &script.to_string()).await?;
    Ok(agent)
}

/// In the open Agent panel: pins `tool`'s (`name@version`) result as an
/// output handle, renamed from its default (`{name}_result`) to `pin`.
pub async fn pin_result(c: &Client, tool: &str, pin: &str) -> Result<(), String> {
    let default = format!("{}_result", tool.split('@').next().unwrap_or(tool));
    click(c, &format!("[data-tool='{tool}'] [data-testid=pin]")).await?;
    appear(c, &format!("[data-pin={default}]")).await?;
    if pin != default {
        type_and_leave(
            c,
            &format!("[data-pin={default}] [data-pin-field=name]"),
            pin,
        )
        .await?;
    }
    appear(c, &format!("[data-pin={pin}]")).await?;
    Ok(())
}

/// In the open editor: a new Output node whose field `answer` is wired
/// from `agent`'s `response`; returns its id.
pub async fn answer_output(c: &Client, agent: &str) -> Result<String, String> {
    let output = output_node(c, "answer").await?;
    connect(c, (agent, "response"), (&output, "answer")).await?;
    Ok(output)
}

/// In the open editor: a scripted Agent node that calls `tool`
/// (`name@version`) once with `arguments`, then answers `answer`, and its
/// [`answer_output`]; returns (agent, output) ids.
pub async fn one_call_agent(
    c: &Client,
    tool: &str,
    arguments: serde_json::Value,
    answer: &str,
) -> Result<(String, String), String> {
    let name = tool.split('@').next().unwrap_or(tool);
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": name, "arguments": arguments}]},
        {"text": answer}]});
    let agent = scripted_agent(c, "go", &[tool], &script).await?;
    let output = answer_output(c, &agent).await?;
    Ok((agent, output))
}

/// In the open editor: a new Output node with `fields` (comma-separated,
/// as typed in its panel); returns its id.
pub async fn output_node(c: &Client, fields: &str) -> Result<String, String> {
    let output = add_node(c, "output").await?;
    select(c, &output).await?;
    type_and_leave(c, "[data-testid=output-fields]", fields).await?;
    Ok(output)
}

/// In the open editor: a new Template node with `text`; returns its id.
pub async fn template_node(c: &Client, text: &str) -> Result<String, String> {
    let template = add_node(c, "template").await?;
    select(c, &template).await?;
    type_and_leave(c, "[data-testid=template-text]", text).await?;
    Ok(template)
}

/// Runs, and waits for that run (not the one shown before) to end.
pub async fn run_and_wait(c: &Client) -> Result<String, String> {
    let before = text_or_empty(c, "[data-testid=live-run-id]").await?;
    click(c, "[data-testid=run]").await?;
    wait_until("the new run", || async {
        let now = text_or_empty(c, "[data-testid=live-run-id]").await?;
        Ok(!now.is_empty() && now != before)
    })
    .await?;
    wait_until("the run's end", || async {
        let state = text_or_empty(c, "[data-testid=live-run-state]").await?;
        Ok(matches!(
            state.as_str(),
            "succeeded" | "failed" | "cancelled"
        ))
    })
    .await?;
    text_or_empty(c, "[data-testid=live-run-state]").await
}

/// On the Settings page (open): saves secret `name` = `value` in `scope`
/// with the form and waits for its row.
pub async fn save_secret(c: &Client, scope: &str, name: &str, value: &str) -> Result<(), String> {
    appear(c, "[data-testid=secret-form]").await?;
    click(
        c,
        &format!("[data-testid=secret-scope] option[value={scope}]"),
    )
    .await?;
    find(c, "[data-testid=secret-name]")
        .await?
        .send_keys(name)
        .await
        .map_err(|e| e.to_string())?;
    find(c, "[data-testid=secret-value]")
        .await?
        .send_keys(value)
        .await
        .map_err(|e| e.to_string())?;
    click(c, "[data-testid=secret-save]").await?;
    appear(c, &format!("[data-secret='{scope}/{name}']")).await?;
    Ok(())
}

/// What is wrong with the page's layout as drawn: every pair of visible
/// controls (buttons, fields, links, splitters, the minimap) whose boxes
/// overlap, and every drawn graph node outside the canvas. A control's box
/// is the part its scrolling ancestors and the window show; one control
/// inside another is not an overlap.
pub async fn layout_problems(c: &Client) -> Result<Vec<String>, String> {
    let found = c
        .execute(
            r#"
            const name = el => {
              const id = el.dataset.testid || el.dataset.palette || el.dataset.node || el.id || el.getAttribute('aria-label') || (el.textContent || '').trim().slice(0, 30);
              return `${el.tagName.toLowerCase()}[${id}]`;
            };
            const shown = el => {
              const s = getComputedStyle(el);
              if (s.visibility === 'hidden' || s.display === 'none') return null;
              const r = el.getBoundingClientRect();
              let b = { l: r.left, t: r.top, r: r.right, b: r.bottom };
              for (let p = el.parentElement; p; p = p.parentElement) {
                const ps = getComputedStyle(p);
                if (/(auto|scroll|hidden|clip)/.test(ps.overflowX + ps.overflowY)) {
                  const q = p.getBoundingClientRect();
                  b = { l: Math.max(b.l, q.left), t: Math.max(b.t, q.top), r: Math.min(b.r, q.right), b: Math.min(b.b, q.bottom) };
                }
              }
              b = { l: Math.max(b.l, 0), t: Math.max(b.t, 0), r: Math.min(b.r, innerWidth), b: Math.min(b.b, innerHeight) };
              return (b.r - b.l >= 1 && b.b - b.t >= 1) ? b : null;
            };
            const controls = [...document.querySelectorAll('button, input:not([type=hidden]), select, textarea, a[href], [role=separator], svg.minimap')]
              .map(el => [el, shown(el)]).filter(([, b]) => b);
            const problems = [];
            for (let i = 0; i < controls.length; i++) {
              for (let j = i + 1; j < controls.length; j++) {
                const [a, ab] = controls[i], [b, bb] = controls[j];
                if (a.contains(b) || b.contains(a)) continue;
                const w = Math.min(ab.r, bb.r) - Math.max(ab.l, bb.l);
                const h = Math.min(ab.b, bb.b) - Math.max(ab.t, bb.t);
                if (w > 1 && h > 1) problems.push(`${name(a)} overlaps ${name(b)} (${w.toFixed(0)}x${h.toFixed(0)} px)`);
              }
            }
            const canvas = document.querySelector('[data-testid=canvas]');
            if (canvas) {
              const c = canvas.getBoundingClientRect();
              for (const n of document.querySelectorAll('[data-node] > rect')) {
                const r = n.getBoundingClientRect();
                if (r.left < c.left - 1 || r.top < c.top - 1 || r.right > c.right + 1 || r.bottom > c.bottom + 1)
                  problems.push(`node ${n.parentElement.dataset.node} is outside the canvas`);
              }
              const all = Number(canvas.dataset.nodeCount), drawn = document.querySelectorAll('[data-node]').length;
              if (drawn !== all) problems.push(`${drawn} of ${all} nodes drawn`);
            }
            return problems;
            "#,
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(found
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect())
}

/// The canvas's size on screen, `(width, height)` in CSS pixels.
pub async fn canvas_size(c: &Client) -> Result<(f64, f64), String> {
    let v = c
        .execute(
            "const r = document.querySelector('[data-testid=canvas]').getBoundingClientRect(); return [r.width, r.height];",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    let n = |i: usize| v[i].as_f64().unwrap_or(0.0);
    Ok((n(0), n(1)))
}

/// Presses the mouse on `element`'s centre and moves it by `by` over
/// `over`, still pressed (the start of a drag).
pub fn grab(element: Element, by: (f64, f64), over: Duration) -> fantoccini::actions::MouseActions {
    use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
    MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement {
            element,
            duration: None,
            x: 0.0,
            y: 0.0,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::MoveBy {
            duration: Some(over),
            x: by.0,
            y: by.1,
        })
}

/// Presses the mouse on `element`'s centre, moves it by `(dx, dy)` over
/// 200 ms and lets go (a drag, as a user makes it).
pub async fn drag_by(c: &Client, element: Element, by: (f64, f64)) -> Result<(), String> {
    use fantoccini::actions::{InputSource, PointerAction, MOUSE_BUTTON_LEFT};
    let drag = grab(element, by, Duration::from_millis(200)).then(PointerAction::Up {
        button: MOUSE_BUTTON_LEFT,
    });
    c.perform_actions(drag).await.map_err(|e| e.to_string())
}
