//! Run traces.
//!
//! A run is traced with ordinary `tracing` spans: `run` (here) -> `node`
//! (the engine) -> `iteration` (the agent loop) -> `model_call` /
//! `tool_call` (the agent loop, the executor). Two consumers read them:
//!
//! - [`SpanStore`], a `tracing_subscriber` layer, times every span inside a
//!   `run` span and, when it closes, puts it in the run's [`SpanBuffer`].
//!   The run's event writer takes the buffer along with each batch of events
//!   and with the run's end, so spans cost no commit of their own; what is
//!   left when the run's [`RouteGuard`] drops (or a buffer past
//!   [`MAX_BUFFERED`]) goes to the group writer on its own (`run_spans`).
//!   The trace page (`traces_url`, by default
//!   the app's `/runs/{run_id}/trace`) is served from these rows, so a trace
//!   is viewable without any external system.
//! - With `GLASSBOX_OTLP_ENDPOINT` set, `tracing-opentelemetry` exports the
//!   same spans over OTLP/HTTP ([`otlp_layer`]); the run span's parent is a
//!   remote context carrying the run's trace id, so the exported trace has
//!   the id stored on the run's records.
//!
//! The trace id of a run is its UUID's 32 hex digits ([`trace_id`]): stable
//! across a restart and a resume, with no lookup. Span fields hold ids,
//! names and error codes, never tool inputs, outputs or secrets.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::Instant;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::storage::{GroupWriter, RunWrite, SpanRow};

/// The trace id of a run: the run's UUID as 32 hex digits, or (for an id
/// that is not a UUID) the first 16 bytes of its BLAKE3 hash.
pub fn trace_id(run_id: &str) -> String {
    match uuid::Uuid::parse_str(run_id) {
        Ok(u) if !u.is_nil() => u.simple().to_string(),
        _ => hex::encode(&blake3::hash(run_id.as_bytes()).as_bytes()[..16]),
    }
}

/// Where the closed spans of each live run go.
static ROUTES: LazyLock<RwLock<HashMap<String, Route>>> = LazyLock::new(Default::default);

/// The closed spans of one run, not yet handed to the writer.
#[derive(Clone, Default)]
pub struct SpanBuffer(Arc<Mutex<Vec<SpanRow>>>);

impl SpanBuffer {
    /// Everything buffered so far, leaving the buffer empty.
    pub fn take(&self) -> Vec<SpanRow> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Adds a span; past [`MAX_BUFFERED`] returns the whole buffer to write.
    fn push(&self, row: SpanRow) -> Option<Vec<SpanRow>> {
        let mut rows = self.0.lock().unwrap_or_else(|e| e.into_inner());
        rows.push(row);
        (rows.len() >= MAX_BUFFERED).then(|| std::mem::take(&mut *rows))
    }
}

/// The most spans a run buffers before they are written on their own (a
/// long stretch of spans without events).
pub const MAX_BUFFERED: usize = 256;

#[derive(Clone)]
struct Route {
    writer: GroupWriter,
    spans: SpanBuffer,
}

/// Whether spans are also exported over OTLP (set once by [`otlp_layer`]).
static OTLP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The span of one run; its spans are collected in the guard's buffer
/// until the guard is dropped. Everything the run does must run inside the
/// span.
pub fn run_span(run_id: &str, writer: &GroupWriter) -> (tracing::Span, RouteGuard) {
    let spans = SpanBuffer::default();
    ROUTES.write().unwrap_or_else(|e| e.into_inner()).insert(
        run_id.to_string(),
        Route {
            writer: writer.clone(),
            spans: spans.clone(),
        },
    );
    let trace = trace_id(run_id);
    let span = tracing::info_span!("run", run_id = %run_id, trace_id = %trace);
    if OTLP.load(Ordering::Relaxed) {
        use opentelemetry::trace::{
            SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
        };
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        if let Ok(id) = TraceId::from_hex(&trace) {
            // A remote parent that only carries the trace id; the run span
            // becomes the trace's root as far as any viewer is concerned.
            let parent = SpanContext::new(
                id,
                SpanId::from_bytes(id.to_bytes()[..8].try_into().unwrap_or([1; 8])),
                TraceFlags::SAMPLED,
                true,
                TraceState::default(),
            );
            let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent));
        }
    }
    (
        span,
        RouteGuard {
            run_id: run_id.to_string(),
            spans,
        },
    )
}

/// Stops routing a run's spans when dropped (after its run span closed)
/// and writes what is still buffered.
pub struct RouteGuard {
    run_id: String,
    spans: SpanBuffer,
}

impl RouteGuard {
    /// The run's buffer, for its event writer to take spans from.
    pub fn spans(&self) -> SpanBuffer {
        self.spans.clone()
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let route = ROUTES
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.run_id);
        let rest = self.spans.take();
        if let (Some(route), false) = (route, rest.is_empty()) {
            drop(route.writer.submit(RunWrite::Spans(rest)));
        }
    }
}

/// What every span of a run carries.
#[derive(Clone)]
struct RunScope {
    run_id: Arc<str>,
    trace_id: Arc<str>,
}

/// The timing of an open span inside a run (a span extension).
struct Timing {
    scope: RunScope,
    span_id: String,
    parent_id: Option<String>,
    started_at: chrono::DateTime<chrono::Utc>,
    start: Instant,
    fields: Map<String, Value>,
}

/// The layer that stores the spans of runs (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct SpanStore;

/// Only the spans of our own code are part of a run's trace.
fn ours(target: &str) -> bool {
    target.starts_with("node_runtime") || target.starts_with("glassbox_server")
}

impl<S> Layer<S> for SpanStore
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !ours(attrs.metadata().target()) {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut fields = FieldMap::default();
        attrs.record(&mut fields);
        let (scope, parent_id) = if attrs.metadata().name() == "run" {
            let text = |k: &str| fields.0.get(k).and_then(Value::as_str).map(Arc::from);
            let (Some(run_id), Some(trace_id)) = (text("run_id"), text("trace_id")) else {
                return;
            };
            (RunScope { run_id, trace_id }, None)
        } else {
            // The nearest enclosing span that belongs to a run.
            let Some((scope, parent)) = span.scope().skip(1).find_map(|s| {
                s.extensions()
                    .get::<Timing>()
                    .map(|t| (t.scope.clone(), t.span_id.clone()))
            }) else {
                return;
            };
            (scope, Some(parent))
        };
        let started_at = chrono::Utc::now();
        span.extensions_mut().insert(Timing {
            scope,
            span_id: new_span_id(started_at),
            parent_id,
            started_at,
            start: Instant::now(),
            fields: fields.0,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(timing) = ext.get_mut::<Timing>() {
            let mut fields = FieldMap(std::mem::take(&mut timing.fields));
            values.record(&mut fields);
            timing.fields = fields.0;
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(timing) = span.extensions_mut().remove::<Timing>() else {
            return;
        };
        let route = ROUTES
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&*timing.scope.run_id)
            .cloned();
        let Some(route) = route else { return };
        let row = SpanRow {
            run_id: timing.scope.run_id.to_string(),
            span_id: timing.span_id,
            parent_id: timing.parent_id,
            trace_id: timing.scope.trace_id.to_string(),
            name: span.name().to_string(),
            started_at: timing
                .started_at
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            duration_us: i64::try_from(timing.start.elapsed().as_micros()).unwrap_or(i64::MAX),
            // serde_json's compact text, as `to_string` (`Display`) wrote
            // it, without the formatter's byte-at-a-time adapter (about
            // 2.5K instructions a span, three spans a tool call; issue #30).
            fields: node_runtime::fast_json::to_string(&Value::Object(timing.fields)),
        };
        // Written with the run's next events (or its end); a full buffer
        // is queued at once, not awaited.
        if let Some(full) = route.spans.push(row) {
            drop(route.writer.submit(RunWrite::Spans(full)));
        }
    }
}

/// Microseconds from the Unix epoch to 2020-01-01T00:00:00Z: span ids
/// count from there, so 51 bits of them last until 2091.
const SPAN_EPOCH_US: u64 = 1_577_836_800_000_000;

/// The low bits of a span id that tell this process's ids from another's.
const SPAN_TAG_BITS: u32 = 13;

/// A non-zero 64-bit span id as 16 hex digits that grows as spans start:
/// the microseconds from [`SPAN_EPOCH_US`] to `started_at` (one more than
/// the last id's when two spans start in the same microsecond, so this
/// process never gives one twice) over a tag drawn at random once per
/// process.
///
/// Growing ids are appended to the end of a run's key range in `run_spans`
/// (keyed by run and span id) instead of landing on a random page of it:
/// with random ids each sequential tool call's spans rewrote about 3.6
/// pages of the table (issue #30). Only one instance holds a run at a time,
/// so a resumed run's new spans start later than its old ones.
fn new_span_id(started_at: chrono::DateTime<chrono::Utc>) -> String {
    static LAST: AtomicU64 = AtomicU64::new(0);
    static TAG: LazyLock<u64> =
        LazyLock::new(|| uuid::Uuid::new_v4().as_u64_pair().0 & ((1 << SPAN_TAG_BITS) - 1));
    let now = u64::try_from(started_at.timestamp_micros())
        .unwrap_or(0)
        .saturating_sub(SPAN_EPOCH_US);
    let ticks = next_tick(&LAST, now);
    format!("{:016x}", (ticks << SPAN_TAG_BITS) | *TAG)
}

/// `now`, or one more than the last tick when that is not past it; at
/// least 1, so an id is never zero.
fn next_tick(last: &AtomicU64, now: u64) -> u64 {
    let tick = |prev: u64| now.max(prev + 1);
    // The closure always answers, so this is always `Ok`.
    match last.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |prev| {
        Some(tick(prev))
    }) {
        Ok(prev) | Err(prev) => tick(prev),
    }
}

/// A span's fields as JSON values.
#[derive(Default)]
struct FieldMap(Map<String, Value>);

impl Visit for FieldMap {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::from(format!("{value:?}")));
    }
}

/// The OTLP exporter's handle: flushes and stops the export when shut down.
pub struct OtlpGuard(opentelemetry_sdk::trace::SdkTracerProvider);

impl OtlpGuard {
    /// Sends what is still buffered (call before the process exits).
    pub fn shutdown(&self) {
        if let Err(e) = self.0.shutdown() {
            tracing::warn!(error = %e, "the OTLP exporter did not shut down cleanly");
        }
    }
}

/// The OTLP/HTTP (protobuf) exporter layer for `endpoint`, a collector's
/// base URL (`/v1/traces` is appended unless present), with its guard.
pub fn otlp_layer<S>(
    endpoint: &str,
) -> Result<(impl Layer<S> + Send + Sync + 'static, OtlpGuard), String>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig;
    let url = otlp_traces_url(endpoint)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(url)
        .build()
        .map_err(|e| e.to_string())?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("glassbox")
                .build(),
        )
        .build();
    let tracer = provider.tracer("glassbox");
    OTLP.store(true, Ordering::Relaxed);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::filter_fn(|m| ours(m.target())));
    Ok((layer, OtlpGuard(provider)))
}

/// `endpoint` checked and turned into the traces URL.
pub fn otlp_traces_url(endpoint: &str) -> Result<String, String> {
    let url = url_like(endpoint)?;
    Ok(if url.ends_with("/v1/traces") {
        url
    } else {
        format!("{}/v1/traces", url.trim_end_matches('/'))
    })
}

fn url_like(endpoint: &str) -> Result<String, String> {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .ok_or_else(|| format!("`{endpoint}` is not an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') || rest.contains(char::is_whitespace) {
        return Err(format!("`{endpoint}` names no host"));
    }
    Ok(endpoint.to_string())
}

/// Installs a subscriber that stores run spans when the process has none
/// (library use: tests, benches). `glassbox serve` installs its own, with
/// the log output and OTLP, before this runs; then this does nothing.
pub fn ensure_installed() {
    use tracing_subscriber::layer::SubscriberExt;
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ =
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(SpanStore));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_ids_grow_never_repeat_and_are_never_zero() {
        let ids: Vec<String> = (0..10_000)
            .map(|_| new_span_id(chrono::Utc::now()))
            .collect();
        for id in &ids {
            assert_eq!(id.len(), 16, "{id}");
            let n = u64::from_str_radix(id, 16).expect("hex");
            assert_ne!(n, 0);
        }
        // Strictly increasing as text too (fixed width), so each is new and
        // goes after the last in the table's key order.
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids grow");
        // Two spans in the same microsecond, or a clock that stepped back,
        // still get a new, later tick; the first tick is never 0.
        let last = AtomicU64::new(0);
        assert_eq!(next_tick(&last, 0), 1);
        assert_eq!(next_tick(&last, 100), 100);
        assert_eq!(next_tick(&last, 100), 101);
        assert_eq!(next_tick(&last, 50), 102);
        assert_eq!(next_tick(&last, 500), 500);
        // Concurrent callers never share a tick.
        let last = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let last = last.clone();
                std::thread::spawn(move || {
                    (0..1_000).map(|_| next_tick(&last, 7)).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4_000);
    }

    #[test]
    fn trace_ids_are_the_run_uuid_or_a_hash() {
        assert_eq!(
            trace_id("0190f3a2-7c1d-7aaa-8bbb-123456789abc"),
            "0190f3a27c1d7aaa8bbb123456789abc"
        );
        let other = trace_id("not-a-uuid");
        assert_eq!(other.len(), 32);
        assert_eq!(other, trace_id("not-a-uuid"));
    }

    #[test]
    fn otlp_endpoints_are_checked() {
        assert_eq!(
            otlp_traces_url("http://127.0.0.1:4318").as_deref(),
            Ok("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            otlp_traces_url("https://c.example/v1/traces").as_deref(),
            Ok("https://c.example/v1/traces")
        );
        assert!(otlp_traces_url("127.0.0.1:4318").is_err());
        assert!(otlp_traces_url("http://").is_err());
    }
}
