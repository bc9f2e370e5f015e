//! `glassbox run`, `glassbox replay` and `glassbox migrate`.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

use super::{load_cipher, open_database, parse_inputs, DbArgs, Failure};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The workflow JSON file.
    file: PathBuf,
    /// An input field, `name=value` (a JSON value, or else a string).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    inputs: Vec<String>,
    /// Print the whole run (every node's record) instead of the outputs.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The id of a recorded run (as printed by `glassbox run`).
    run_id: String,
}

pub async fn migrate(args: DbArgs) -> Result<(), Failure> {
    let config = args.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let db = open_database(&config).await?;
    let version = db.schema_version().await.map_err(Failure::runtime)?;
    outln!(
        "database migrated ({}, schema version {version})",
        db.backend()
    );
    db.close().await;
    Ok(())
}

pub async fn run_file(args: RunArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| Failure::config(format!("cannot read {}: {e}", args.file.display())))?;
    let workflow = node_runtime::graph::Workflow::from_json(&text)
        .map_err(|e| Failure::config(format!("{}: {e}", args.file.display())))?;
    if goes_out_over_http(&workflow) {
        // The TLS roots load beside start-up (database, migrations), not on
        // the first request; a run that sends none skips their ~0.1 s of CPU.
        std::thread::spawn(node_runtime::builtins::http_request::prewarm);
    }
    let inputs = parse_inputs(&args.inputs)?;
    let (db, runs) = super::open_runs(&args.db).await?;
    let (row, outputs) = runs
        .run_to_end(crate::auth::DEFAULT_WORKSPACE, workflow, inputs, "cli")
        .await
        .map_err(Failure::runtime)?;
    // The agents' outputs: their contract keys, from each Agent node's
    // outputs as the run handed them over once its end was stored (not
    // read back and parsed again: issue #30). With `--json` the whole
    // record is printed too, read from the store with its bundles.
    let contract = |mut outputs: std::collections::BTreeMap<String, serde_json::Value>| {
        serde_json::Value::Object(
            node_runtime::graph::AGENT_OUTPUTS
                .iter()
                .map(|k| (k.to_string(), outputs.remove(*k).unwrap_or_default()))
                .collect(),
        )
    };
    let agents: serde_json::Map<String, serde_json::Value> = outputs
        .into_iter()
        .map(|(id, outputs)| (id, contract(outputs)))
        .collect();
    // The last key: the whole record with `--json`, else the run's error.
    let (last_key, last) = if args.json {
        let record = db
            .run_record(&row)
            .await
            .map_err(Failure::runtime)?
            .unwrap_or(serde_json::Value::Null);
        ("record", record)
    } else {
        ("error", row.error.clone().into())
    };
    // Built from its parts, not with `json!`: the macro serializes each
    // value it is given into a new one, a deep copy of every call's
    // envelope (issue #30).
    let mut printed = serde_json::Map::new();
    printed.insert("run_id".into(), row.id.clone().into());
    printed.insert("status".into(), row.status.clone().into());
    let outputs = row
        .outputs
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok());
    printed.insert("outputs".into(), outputs.unwrap_or_default());
    printed.insert("agent_outputs".into(), serde_json::Value::Object(agents));
    printed.insert(last_key.into(), last);
    let printed = serde_json::Value::Object(printed);
    // Written as it is formatted, not built as one text first: a long
    // run's calls are megabytes of it (issue #30).
    let written = {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &node_runtime::fast_json::FastValue(&printed))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
            .and_then(|()| out.flush())
    };
    drop(printed);
    db.close().await;
    written.map_err(|e| Failure::runtime(format!("cannot write the run's result: {e}")))?;
    if row.status == "succeeded" {
        Ok(())
    } else {
        Err(Failure::runtime(format!(
            "the run ended {}: {}",
            row.status,
            row.error.unwrap_or_default()
        )))
    }
}

pub async fn replay_run(args: ReplayArgs) -> Result<(), Failure> {
    let config = args.db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let db = open_database(&config).await?;
    let row = db
        .get_run(crate::auth::DEFAULT_WORKSPACE, &args.run_id)
        .await
        .map_err(|e| Failure::config(format!("run {}: {e}", args.run_id)))?;
    let record = db
        .run_record(&row)
        .await
        .map_err(Failure::runtime)?
        .ok_or_else(|| {
            Failure::runtime(format!(
                "run {} has no record to replay (it did not finish)",
                args.run_id
            ))
        })?;
    let runs = crate::runs::Runs::new(
        db.clone(),
        crate::config::RunsConfig::from_config(&config),
        load_cipher(&config)?,
        super::load_approval_key(&config)?,
    );
    let outcome = runs
        .replay_record(crate::auth::DEFAULT_WORKSPACE, &record, Some(&args.run_id))
        .await;
    db.close().await;
    match outcome {
        Ok(o) if o.matches => {
            outln!("{}", serde_json::json!(o));
            Ok(())
        }
        Ok(o) => Err(Failure::runtime(format!(
            "replay diverged: {}",
            o.divergence.unwrap_or_default()
        ))),
        Err(e) => Err(Failure::runtime(e)),
    }
}

/// Whether a node of `workflow` can send an HTTP request: an Agent Node
/// with a model provider (not the scripted one), or one that offers
/// `http_request` or an MCP server's tool, or a Tool node of one.
fn goes_out_over_http(workflow: &node_runtime::graph::Workflow) -> bool {
    use node_runtime::agent_config::ProviderConfig;
    use node_runtime::graph::NodeKind;
    let is_http = |tool: &str| {
        let name = tool.split('@').next().unwrap_or_default();
        name == "http_request" || name.starts_with("mcp.")
    };
    workflow.nodes.iter().any(|n| match &n.kind {
        NodeKind::Agent(c) => {
            !matches!(c.provider, ProviderConfig::Scripted { .. })
                || c.enabled_tools().iter().any(|t| is_http(t))
        }
        NodeKind::Tool(c) => is_http(&c.tool),
        _ => false,
    })
}
