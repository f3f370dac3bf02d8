//! `floe-storm`: a drop-in for the IceStorm 3.7 service.
//!
//! `floe-storm [--Ice.Config=FILE] [--IceStorm.TopicManager.Endpoints=...] [--Name=value ...]`
//! Prints `floe-storm ready` once it listens; exits 0 on SIGTERM or SIGINT.

use floe_service::cli;
use floe_storm::{Storm, StormConfig};

fn main() -> std::process::ExitCode {
    // Every connection stays on the service's one runtime thread unless configured otherwise:
    // an event read from a publisher's connection is written to the subscribers' connections,
    // and a hop between threads would cost a wake-up per event (docs/storm.md).
    let defaults = [("Floe.Runtime.ConnectionThreads", "0")];
    let (communicator, _rest) = match cli::communicator(std::env::args(), &defaults) {
        Ok(c) => c,
        Err(e) => return cli::fail("floe-storm", e, cli::EXIT_USAGE),
    };
    let config = match StormConfig::from_properties(communicator.properties()) {
        Ok(c) => c,
        Err(e) => return cli::fail("floe-storm", e, cli::EXIT_USAGE),
    };
    // IceStorm.Trace.* turn on the service's log lines; RUST_LOG adds to them.
    let traced = config.trace_topic > 0 || config.trace_topic_manager > 0 || config.trace_subscriber > 0;
    let filter = match (std::env::var("RUST_LOG").ok(), traced) {
        (Some(env), true) => format!("floe::storm=info,{env}"),
        (Some(env), false) => env,
        (None, true) => "floe::storm=info,warn".into(),
        (None, false) => "warn".into(),
    };
    cli::init_tracing(Some(&filter), "warn");
    let result = communicator.block_on(async {
        let storm = Storm::new(communicator.clone(), config)?;
        storm.activate().await?;
        cli::ready("floe-storm ready");
        cli::wait_for_signal().await;
        storm.shutdown().await;
        communicator.destroy().await;
        Ok::<(), floe::Error>(())
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => cli::fail("floe-storm", e, cli::EXIT_FAILURE),
    }
}
