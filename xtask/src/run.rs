//! `cargo xtask run`: install, build the app and the server, then become the
//! server (exec), so Ctrl-C reaches it directly and stops it cleanly.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::install;
use crate::phase::{workspace_root, Phases};

struct RunArgs {
    port: u16,
    bind: IpAddr,
    data_dir: Option<String>,
}

fn parse(args: &[String]) -> Result<RunArgs, String> {
    let mut out = RunArgs {
        port: std::env::var("GLASSBOX_PORT")
            .ok()
            .map(|p| {
                p.parse()
                    .map_err(|_| format!("GLASSBOX_PORT=`{p}` is not a port number"))
            })
            .transpose()?
            .unwrap_or(8080),
        bind: std::env::var("GLASSBOX_BIND")
            .ok()
            .map(|b| {
                b.parse()
                    .map_err(|_| format!("GLASSBOX_BIND=`{b}` is not an IP address"))
            })
            .transpose()?
            .unwrap_or(IpAddr::from([127, 0, 0, 1])),
        data_dir: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--port" => {
                let v = value("--port")?;
                out.port = v
                    .parse()
                    .map_err(|_| format!("--port `{v}` is not a port number (0-65535)"))?;
            }
            "--bind" => {
                let v = value("--bind")?;
                out.bind = v
                    .parse()
                    .map_err(|_| format!("--bind `{v}` is not an IP address"))?;
            }
            "--data-dir" => out.data_dir = Some(value("--data-dir")?),
            other => return Err(format!("unknown option `{other}` for `cargo xtask run`")),
        }
    }
    Ok(out)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let args = parse(args)?;
    let root = workspace_root();
    let mut phases = Phases::default();

    // Fail in a second, not after a ten-minute build, when the port is taken.
    phases.run("check port", || {
        let addr = SocketAddr::new(args.bind, args.port);
        match TcpListener::bind(addr) {
            Ok(_) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => Err(format!(
                "port {} on {} is already in use. Start Glassbox on another port with \
                 `cargo xtask run --port <PORT>` (or GLASSBOX_PORT=<PORT>).",
                args.port, args.bind
            )),
            Err(err) => Err(format!("cannot listen on {addr}: {err}")),
        }
    })?;

    install::prepend_cargo_bin_to_path();
    let logs = install::target_dir(&root).join("xtask-logs");
    crate::phase::log_to(&logs)?;
    println!(
        "    compiler output goes to {}/ (shown here if a step fails)",
        logs.display()
    );
    // The server builds beside the tools and the app: it needs none of
    // them, and two builds keep both cores busy through each one's serial
    // tail.
    let server_phase = format!(
        "build server (cargo build --profile {})",
        install::SERVER_PROFILE
    );
    println!(
        "==> {server_phase} (alongside the steps below; about 10 to 20 minutes on a fresh machine with 2 cores, seconds later)"
    );
    let server = {
        let (root, name) = (root.clone(), server_phase.clone());
        std::thread::spawn(move || crate::phase::timed(&name, || install::build_server(&root)))
    };
    let steps = (|| {
        phases.run("install: wasm32 target", install::ensure_wasm_target)?;
        phases.run("install: wasm-bindgen-cli", install::ensure_wasm_bindgen)?;
        phases.run("install: wasm-opt", install::ensure_wasm_opt)?;
        phases.run("install: wasm-split-cli", install::ensure_wasm_split)?;
        println!("    the app's first build takes about 10 minutes beside the server build; later ones seconds");
        phases.run("build app (wasm32 release, split, wasm-opt)", || {
            install::build_app(&root)
        })
    })();
    let (built, took) = server
        .join()
        .map_err(|_| "the server build thread panicked".to_string())?;
    match &built {
        Ok(()) => println!(
            "<== {server_phase}: ok in {}",
            crate::phase::fmt_duration(took)
        ),
        Err(_) => println!(
            "<== {server_phase}: FAILED after {}",
            crate::phase::fmt_duration(took)
        ),
    }
    phases.record(&server_phase, took);
    steps?;
    built?;
    phases.print_summary();

    let bin = install::server_bin(&root);
    let mut cmd = Command::new(&bin);
    cmd.current_dir(&root)
        .arg("serve")
        .args(["--port", &args.port.to_string()])
        .args(["--bind", &args.bind.to_string()])
        .arg("--static-dir")
        .arg(root.join("dist"));
    if let Some(dir) = &args.data_dir {
        cmd.args(["--data-dir", dir]);
    }
    println!("==> starting {} (Ctrl-C stops it)", bin.display());
    let err = cmd.exec();
    Err(format!("cannot start {}: {err}", bin.display()))
}
