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
    let configured = cli::configure("floe-storm", std::env::args(), &defaults, StormConfig::from_properties);
    let (communicator, config) = match configured {
        Ok(c) => c,
        Err(code) => return code,
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
    let start = async {
        let storm = Storm::new(communicator.clone(), config)?;
        storm.activate().await?;
        Ok(storm)
    };
    cli::run_until_signal("floe-storm", &communicator, "floe-storm ready", start, |storm| async move {
        storm.shutdown().await;
    })
}
