//! Stage 9, the leaf: calls the tool. A panic inside the tool is caught and
//! becomes UNKNOWN; the executor never goes down with a tool.
//!
//! A panic message may quote a secret, and Rust's default panic hook prints
//! messages to stderr, which ends up in logs. So while a tool's future is
//! being polled a thread-local flag is set, and a process-wide hook
//! (installed once, chaining to the previous one) prints only "a tool
//! panicked" for such panics. The message itself goes into the envelope's
//! error, where the secrets stage redacts it.

use std::cell::Cell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::json;

use super::{CallState, Next, Stage, StageOutput, StageResult};
use crate::error::ToolError;
use crate::tool::ToolContext;

pub struct RunStage;

thread_local! {
    static IN_TOOL: Cell<bool> = const { Cell::new(false) };
}

static QUIET_HOOK: Once = Once::new();

/// Installs the hook that withholds tool panic messages from stderr.
fn install_quiet_hook() {
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_TOOL.with(Cell::get) {
                let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                eprintln!("a tool panicked{location}; the message is withheld from logs and recorded (redacted) in the call's envelope");
            } else {
                previous(info);
            }
        }));
    });
}

/// Polls a tool future with the thread-local "inside a tool" flag set.
struct InTool<F>(Pin<Box<F>>);

impl<F: Future> Future for InTool<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                IN_TOOL.with(|f| f.set(self.0));
            }
        }
        let _reset = Reset(IN_TOOL.with(|f| f.replace(true)));
        self.0.as_mut().poll(cx)
    }
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl Stage for RunStage {
    fn handle<'a>(&'a self, state: CallState, _next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let ctx = ToolContext {
                workspace_id: state.scope.owner.workspace_id.clone(),
                call_id: state.call.call_id.clone(),
                secrets: state.secrets,
                cancel: state.cancel,
                env: state.scope.env.clone(),
                attachments: Default::default(),
                progress: crate::tool::context::Progress {
                    call_id: state.call.call_id.clone(),
                    to: state.scope.progress.clone(),
                },
            };
            install_quiet_hook();
            let tool = state.call.tool.tool.clone();
            let key = state.call.tool.spec.key();
            match AssertUnwindSafe(InTool(Box::pin(tool.call(&state.call.input, &ctx))))
                .catch_unwind()
                .await
            {
                Ok(Ok(output)) => Ok(StageOutput {
                    attachments: ctx.attachments.take(),
                    ..StageOutput::plain(output)
                }),
                Ok(Err(err)) => Err(err),
                Err(payload) => Err(ToolError::unknown(format!(
                    "tool {key} panicked: {}",
                    panic_message(payload.as_ref())
                ))
                .with_details(json!({ "reason": "PANIC" }))),
            }
        })
    }
}
