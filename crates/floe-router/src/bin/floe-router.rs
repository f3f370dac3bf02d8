//! `floe-router`: a drop-in for glacier2router 3.7.
//!
//! `floe-router [--Ice.Config=FILE] [--Glacier2.Client.Endpoints=...] [--Name=value ...]`
//! Prints `floe-router ready` once it accepts clients; exits 0 on SIGTERM or SIGINT.

use floe_router::{RouterConfig, RouterCore};
use floe_service::cli;

fn main() -> std::process::ExitCode {
    cli::init_tracing(None, "error");
    // Every connection stays on the router's one runtime thread unless configured otherwise:
    // a forwarded call reads from one connection and writes to another, and a hop between
    // threads would cost a wake-up each way. Its thread busy-polls for up to 300 µs before it
    // sleeps, as a router's every hop waits on a peer, whether or not the machine has a CPU
    // to spare (docs/router.md).
    let defaults = [
        ("Floe.Runtime.ConnectionThreads", "0"),
        ("Floe.Runtime.BusyPoll", "300"),
        ("Floe.Runtime.BusyPoll.SpareCpuOnly", "0"),
    ];
    let (communicator, config) =
        match cli::configure("floe-router", std::env::args(), &defaults, RouterConfig::from_properties) {
            Ok(c) => c,
            Err(code) => return code,
        };
    let start = async {
        let core = RouterCore::new(communicator.clone(), config)?;
        core.activate().await?;
        Ok(core)
    };
    cli::run_until_signal("floe-router", &communicator, "floe-router ready", start, |_core| async {})
}
