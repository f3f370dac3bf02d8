//! `floe-storm`: a drop-in for the IceStorm 3.7 service.
//!
//! `floe-storm [--Ice.Config=FILE] [--IceStorm.TopicManager.Endpoints=...] [--Name=value ...]`
//! Prints `floe-storm ready` once it listens; exits 0 on SIGTERM or SIGINT.

use floe::Communicator;
use floe_storm::{Storm, StormConfig};

fn main() -> std::process::ExitCode {
    // Every connection stays on the service's one runtime thread unless configured otherwise:
    // an event read from a publisher's connection is written to the subscribers' connections,
    // and a hop between threads would cost a wake-up per event (docs/storm.md).
    let defaults = [("Floe.Runtime.ConnectionThreads", "0")];
    let (communicator, _rest) = match Communicator::from_args_with_defaults(std::env::args(), &defaults) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe-storm: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let config = match StormConfig::from_properties(communicator.properties()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe-storm: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // IceStorm.Trace.* turn on the service's log lines; RUST_LOG adds to them.
    let traced = config.trace_topic > 0 || config.trace_topic_manager > 0 || config.trace_subscriber > 0;
    let filter = match (std::env::var("RUST_LOG").ok(), traced) {
        (Some(env), true) => format!("floe::storm=info,{env}"),
        (Some(env), false) => env,
        (None, true) => "floe::storm=info,warn".into(),
        (None, false) => "warn".into(),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
    let result = communicator.block_on(async {
        let storm = Storm::new(communicator.clone(), config)?;
        storm.activate().await?;
        println!("floe-storm ready");
        wait_for_signal().await;
        storm.shutdown().await;
        communicator.destroy().await;
        Ok::<(), floe::Error>(())
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floe-storm: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Waits for SIGTERM or SIGINT.
async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
