//! `json_query@1.0.0`: runs a jq program over JSON with the jaq crates.
//!
//! The filters that reach outside the data are removed: `env` (the server's
//! environment), `input`/`inputs`, `debug`/`stderr` (they write to the
//! server's log). A program yields at most [`MAX_RESULTS`]
//! values and runs on a blocking thread under the executor's timeout,
//! except a compiled program whose work is linear in a small input (see
//! [`runs_inline`]), which runs in the call's own task.

use std::time::{Duration, Instant};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{data, Compiler, Ctx, Vars};
use jaq_json::Val;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Tool, ToolContext};
use crate::tool_spec::{CachePolicy, SideEffects, ToolCategory, ToolMetadata, ToolSpec};

pub const MAX_RESULTS: usize = 1000;
/// `halt` stays: in a library it only ends the program with an error value,
/// and the standard definitions build on it.
const BLOCKED_FILTERS: &[&str] = &["env", "input", "inputs", "debug", "stderr"];

pub struct JsonQuery;

#[derive(Debug, Deserialize)]
pub struct JsonQueryInput {
    pub program: String,
    pub data: Value,
}

impl Tool for JsonQuery {
    type Input = JsonQueryInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Data);
        metadata.side_effects = SideEffects::None;
        metadata.cache = CachePolicy::Forever;
        metadata.timeout_ms = 5_000;
        ToolSpec {
            name: "json_query".into(),
            version: "1.0.0".into(),
            description: "Runs a jq program over JSON data and returns every result.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "program": {"type": "string", "minLength": 1, "maxLength": 10000, "description": "a jq program, e.g. .items[] | .name"},
                    "data": {"description": "the JSON input"}
                },
                "required": ["program", "data"],
                "additionalProperties": false
            }),
            output_schema: json!({
                "type": "object",
                "properties": {"results": {"type": "array"}},
                "required": ["results"]
            }),
            metadata,
        }
    }

    async fn execute(&self, input: JsonQueryInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        if let Some(kept) = runs_inline(&input.program, &input.data) {
            let results = run_compiled(&kept.filter, &input.data, deadline, &ctx.cancel)?;
            return Ok(json!({ "results": results }));
        }
        let cancel = ctx.cancel.clone();
        let task = tokio::task::spawn_blocking(move || {
            run_jq(&input.program, &input.data, deadline, &cancel)
        });
        let results = task
            .await
            .map_err(|e| ToolError::unknown(format!("jq task failed: {e}")))??;
        Ok(json!({ "results": results }))
    }
}

/// The most input a program runs on in the call's own task: a linear pass
/// over it takes well under a millisecond.
const INLINE_INPUT_BYTES: usize = 64 * 1024;

/// Whether the call runs `program` in its own task rather than on a
/// blocking thread (issue #30: the hand-off there and back was two of a
/// sequential call's context switches and about a sixth of its CPU). Only
/// when nothing can make it long: the program is compiled already (no
/// loading and compiling of jq's definitions on the runtime's thread), its
/// input is at most [`INLINE_INPUT_BYTES`], and its work is linear in that
/// input ([`linear`]). Anything else may run long, beyond the executor's
/// timeout, which a blocking thread leaves the runtime free to enforce.
/// The compiled program when it does, so the call runs it without a second
/// lookup.
fn runs_inline(program: &str, data: &Value) -> Option<std::sync::Arc<Kept>> {
    let mut budget = INLINE_INPUT_BYTES;
    KEPT.get(program)
        .filter(|kept| kept.linear && within(data, &mut budget))
}

/// Subtracts `value`'s size (its strings' bytes, and one a value) from
/// `budget`; false once it is spent.
fn within(value: &Value, budget: &mut usize) -> bool {
    let cost = match value {
        Value::String(s) => s.len() + 1,
        _ => 1,
    };
    let Some(left) = budget.checked_sub(cost) else {
        return false;
    };
    *budget = left;
    match value {
        Value::Array(items) => items.iter().all(|v| within(v, budget)),
        Value::Object(map) => map.iter().all(|(k, v)| {
            *budget = budget.saturating_sub(k.len());
            within(v, budget)
        }),
        _ => true,
    }
}

/// How many values a term yields for one input.
#[derive(Clone, Copy, PartialEq)]
enum Yields {
    /// At most one.
    One,
    /// One for each element it iterates.
    Many,
}

/// No-argument filters whose work is linear in their input and whose
/// result is no bigger.
const LINEAR_FILTERS: &[&str] = &[
    "length",
    "keys",
    "keys_unsorted",
    "type",
    "not",
    "first",
    "last",
    "true",
    "false",
    "null",
    "empty",
    "ascii_downcase",
    "ascii_upcase",
];

/// `Some` when `term`'s work is linear in its input: paths from `.` with
/// literal indices, `.[]` and slices, the [`LINEAR_FILTERS`], `map`,
/// `select`, `[...]`, literals, comparisons, `and`, `or`, `//` and pipes of
/// these. A value flowing through them is a part of the input or no
/// bigger than one, and none is used twice (no `,`, no object
/// construction, no variables), so each stage meets each part of the
/// input a bounded number of times (a `select` looks at its input, then
/// passes it on). Everything else (`..`, `range`, `recurse`, `reduce`,
/// definitions, string formats, ...) is `None`.
fn linear(term: &jaq_core::load::parse::Term<&str>) -> Option<Yields> {
    use jaq_core::load::lex::StrPart;
    use jaq_core::load::parse::{BinaryOp, Term};
    use jaq_core::path::Part;
    let literal = |t: &Term<&str>| match t {
        Term::Num(_) => true,
        Term::Neg(n) => matches!(**n, Term::Num(_)),
        Term::Str(None, parts) => parts.iter().all(|p| matches!(p, StrPart::Str(_))),
        _ => false,
    };
    let one = |t: &Term<&str>| linear(t).filter(|y| *y == Yields::One);
    match term {
        Term::Id => Some(Yields::One),
        t if literal(t) => Some(Yields::One),
        Term::Call(name, args) => match (*name, args.as_slice()) {
            (name, []) if LINEAR_FILTERS.contains(&name) => Some(Yields::One),
            ("map", [f]) => linear(f).map(|_| Yields::One),
            ("select", [cond]) => one(cond),
            _ => None,
        },
        Term::Arr(None) => Some(Yields::One),
        Term::Arr(Some(items)) => linear(items).map(|_| Yields::One),
        Term::Path(base, path) if matches!(**base, Term::Id) => {
            let mut yields = Yields::One;
            for (part, _) in &path.0 {
                match part {
                    Part::Index(i) if literal(i) => {}
                    Part::Range(None, None) => yields = Yields::Many,
                    Part::Range(from, to) if from.iter().chain(to.iter()).all(&literal) => {}
                    _ => return None,
                }
            }
            Some(yields)
        }
        Term::BinOp(l, BinaryOp::Pipe(None), r) => {
            let (l, r) = (linear(l)?, linear(r)?);
            Some(if l == Yields::One && r == Yields::One {
                Yields::One
            } else {
                Yields::Many
            })
        }
        Term::BinOp(l, BinaryOp::Cmp(_) | BinaryOp::And | BinaryOp::Or | BinaryOp::Alt, r) => {
            one(l)?;
            one(r)
        }
        _ => None,
    }
}

/// The most recently compiled programs (see [`compiled`]).
static KEPT: std::sync::LazyLock<moka::sync::Cache<String, std::sync::Arc<Kept>>> =
    std::sync::LazyLock::new(|| moka::sync::Cache::new(256));

/// A compiled jq program.
type Program = jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>;

/// A program as [`compiled`] keeps it: its filter, and whether its work is
/// linear in its input ([`linear`], decided once, when it is compiled on
/// a blocking thread, not on every call).
struct Kept {
    filter: Program,
    linear: bool,
}

/// `program` compiled, from the most recent programs when it is one of
/// them: loading jq's standard definitions and compiling costs far more
/// than running a small program, and agents call the same few programs
/// over and over.
fn compiled(program: &str) -> Result<std::sync::Arc<Kept>, ToolError> {
    if let Some(hit) = KEPT.get(program) {
        return Ok(hit);
    }
    let bad_program = |message: String| {
        ToolError::validation(message).with_details(json!({ "path": "/program" }))
    };
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs())
        .filter(|f| !BLOCKED_FILTERS.contains(&f.0));
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(
            &arena,
            File {
                code: program,
                path: (),
            },
        )
        .map_err(|errs| bad_program(format!("jq program does not parse: {errs:?}")))?;
    let filter = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| bad_program(format!("jq program does not compile: {errs:?}")))?;
    let kept = std::sync::Arc::new(Kept {
        filter,
        linear: jaq_core::load::parse(program, |p| p.term())
            .as_ref()
            .and_then(linear)
            .is_some(),
    });
    KEPT.insert(program.to_string(), kept.clone());
    Ok(kept)
}

/// Compiles and runs `program` over `data`.
pub fn run_jq(
    program: &str,
    data: &Value,
    deadline: Instant,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<Value>, ToolError> {
    run_compiled(&compiled(program)?.filter, data, deadline, cancel)
}

/// Runs the compiled `filter` over `data`.
fn run_compiled(
    filter: &Program,
    data: &Value,
    deadline: Instant,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<Value>, ToolError> {
    // Straight from the `Value`, not written to text and parsed again
    // (issue #30: about 30 K instructions a call for a 1 KB input).
    let input = Val::deserialize(data)
        .map_err(|e| ToolError::validation(format!("data is not JSON: {e}")))?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut results = Vec::new();
    // Not `jaq_core::unwrap_valr`: it calls `std::process::exit` when a
    // program runs `halt`, which would take the whole server down.
    for item in filter.id.run((ctx, input)) {
        if Instant::now() > deadline || cancel.is_cancelled() {
            return Err(ToolError::new(
                ErrorCode::Timeout,
                "jq program ran too long",
            ));
        }
        let program_error = |message: String| {
            ToolError::validation(message).with_details(json!({ "path": "/program" }))
        };
        let value = match item {
            Ok(v) => v,
            Err(exn) => {
                return Err(match exn.get_err() {
                    Ok(err) => program_error(format!("jq error: {err}")),
                    Err(exn) => match exn.get_halt() {
                        Ok(code) => program_error(format!(
                            "jq error: the program halted with exit code {code}"
                        )),
                        Err(_) => program_error("jq error: unexpected exception".to_string()),
                    },
                })
            }
        };
        let text = value.to_string();
        let json_value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        results.push(json_value);
        if results.len() > MAX_RESULTS {
            return Err(ToolError::validation(format!(
                "jq program yields more than {MAX_RESULTS} results"
            ))
            .with_details(json!({ "path": "/program" })));
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn a_program_is_compiled_once_and_a_bad_one_is_refused_every_time() {
        let a = compiled(".items | map(.n) | add").expect("compiles");
        let b = compiled(".items | map(.n) | add").expect("compiles");
        assert!(
            std::sync::Arc::ptr_eq(&a, &b),
            "the second call reuses the first's"
        );
        for _ in 0..2 {
            let Err(err) = compiled(".items | map(") else {
                panic!("a program that does not parse is refused");
            };
            assert!(err.message.contains("does not parse"), "{err:?}");
        }
        check(
            ".items | map(.n) | add",
            json!({"items": [{"n": 1}, {"n": 2}]}),
            Ok(json!([3])),
        );
        check(
            ".items | map(.n) | add",
            json!({"items": [{"n": 5}]}),
            Ok(json!([5])),
        );
    }

    fn check(program: &str, data: Value, expected: Result<Value, &str>) {
        let got = run_jq(
            program,
            &data,
            Instant::now() + Duration::from_secs(5),
            &CancellationToken::new(),
        );
        match (got, expected) {
            (Ok(v), Ok(e)) => assert_eq!(Value::Array(v), e, "{program}"),
            (Err(got), Err(want)) => assert!(got.message.contains(want), "{program}: {got:?}"),
            (got, want) => panic!("{program}: got {got:?}, want {want:?}"),
        }
    }

    /// Whether `program` parses to a term [`linear`] accepts.
    fn is_linear(program: &str) -> bool {
        jaq_core::load::parse(program, |p| p.term())
            .as_ref()
            .and_then(linear)
            .is_some()
    }

    #[test]
    fn only_programs_linear_in_their_input_are_linear() {
        for program in [
            ".note | length",
            ".a.b[0]",
            ".[\"x\"]?",
            ".[-1]",
            ".[1:2]",
            ".items[] | .name",
            "map(.x) | length",
            "[.[] | select(.n == \"x\")] | length",
            "select(.a > 1 and .b) | keys",
            ".x // 3",
            "first | type",
            ".",
        ] {
            assert!(is_linear(program), "{program}");
        }
        for program in [
            "..",
            "range(10)",
            "[range(1e9)] | length",
            ".[], .[]",
            "[.[], .[]]",
            "{a: ., b: .}",
            "def f: f; f",
            "reduce .[] as $x (0; . + $x)",
            ". + .",
            ". * 1000000",
            "tojson",
            "@base64",
            "\"\\(.a)\"",
            "select(.[])",
            ".[] == .[]",
            "recurse",
            "limit(3; .[])",
            "until(. > 3; . + 1)",
            ". as $x | $x",
            ".[.a]",
            "map(.)(",
        ] {
            assert!(!is_linear(program), "{program}");
        }
    }

    #[test]
    fn a_call_runs_inline_only_when_compiled_linear_and_small() {
        let program = ".inline_probe | length";
        let small = json!({"inline_probe": "x".repeat(1024)});
        let inline = |program: &str, data: &Value| runs_inline(program, data).is_some();
        assert!(!inline(program, &small), "not compiled yet");
        compiled(program).expect("compiles");
        assert!(inline(program, &small));
        let big = json!({"inline_probe": "x".repeat(INLINE_INPUT_BYTES)});
        assert!(!inline(program, &big), "input over the bound");
        let many = json!({"inline_probe": vec![0; INLINE_INPUT_BYTES]});
        assert!(!inline(program, &many), "values over the bound");
        let looping = "[range(.inline_probe)] | length";
        compiled(looping).expect("compiles");
        assert!(!inline(looping, &json!({"inline_probe": 3})));
    }

    #[test]
    fn programs() {
        check(".a", json!({"a": 1}), Ok(json!([1])));
        check(
            ".items[] | .name",
            json!({"items": [{"name": "x"}, {"name": "y"}]}),
            Ok(json!(["x", "y"])),
        );
        check("map(. * 2) | add", json!([1, 2, 3]), Ok(json!([12])));
        check(
            "[.[] | select(. > 1)] | length",
            json!([1, 2, 3]),
            Ok(json!([2])),
        );
    }

    /// The input reaches jq as the `Value` holds it: numbers of every
    /// kind, strings, key order.
    #[test]
    fn values_reach_jq_as_they_are() {
        let data = json!({"f": 1.5, "whole": 2.0, "i": 3, "neg": -2, "max": u64::MAX,
            "tiny": 1e-7, "huge": 1e300, "s": "é\n\"", "o": {"b": 1, "a": [null, true]}});
        check(
            "[.f, .whole, .i, .neg, .max, .tiny, .huge, .s, .o, (.o | keys)]",
            data.clone(),
            Ok(json!([[1.5, 2.0, 3, -2, u64::MAX, 1e-7, 1e300, "é\n\"",
                {"a": [null, true], "b": 1}, ["a", "b"]]])),
        );
        check(
            "[.f, .i, .neg, .s] | map(tostring)",
            data.clone(),
            Ok(json!([["1.5", "3", "-2", "é\n\""]])),
        );
        check(".f + .i", data, Ok(json!([4.5])));
    }

    #[test]
    fn bad_programs_and_escapes() {
        check(".a |", json!({}), Err("does not parse"));
        check("nosuchfilter", json!({}), Err("does not compile"));
        check("env", json!({}), Err("does not compile"));
        check("$ENV", json!({}), Err("does not compile"));
        check("input", json!({}), Err("does not compile"));
        check("range(100000)", json!(null), Err("more than"));
        check(".a.b", json!({"a": 5}), Err("jq error"));
        // `halt` must end the program with an error, never the process.
        check("\"bye\" | halt_error(1)", json!(null), Err("jq error"));
    }
}
