//! `floe-router`: a drop-in for glacier2router 3.7.
//!
//! `floe-router [--Ice.Config=FILE] [--Glacier2.Client.Endpoints=...] [--Name=value ...]`
//! Prints `floe-router ready` once it accepts clients; exits 0 on SIGTERM or SIGINT.

use floe::Communicator;
use floe_router::{RouterConfig, RouterCore};

fn main() -> std::process::ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    // Every connection stays on the router's one runtime thread unless configured otherwise:
    // a forwarded call reads from one connection and writes to another, and a hop between
    // threads would cost a wake-up each way (docs/router.md). Its thread busy-polls for up to
    // 300 µs rather than 50 before it sleeps: a router's every hop waits on a peer, and Ice
    // programs answer a hop in 60–150 µs, which a 50 µs spin misses (docs/router.md).
    // It spins whether or not the machine has a CPU to spare: the router sits on two of the
    // four hops of every call, so a wake-up it saves saves one for the call's both ends, and
    // its spins still yield to other threads and give way to sleeping when they keep meeting
    // them (docs/router.md, "The floe pair's tail, and the spare-CPU rule").
    let defaults = [
        ("Floe.Runtime.ConnectionThreads", "0"),
        ("Floe.Runtime.BusyPoll", "300"),
        ("Floe.Runtime.BusyPoll.SpareCpuOnly", "0"),
    ];
    let communicator = match Communicator::from_args_with_defaults(std::env::args(), &defaults) {
        Ok((c, _rest)) => c,
        Err(e) => {
            eprintln!("floe-router: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let config = match RouterConfig::from_properties(communicator.properties()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe-router: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = communicator.block_on(async {
        let core = RouterCore::new(communicator.clone(), config)?;
        core.activate().await?;
        println!("floe-router ready");
        wait_for_signal().await;
        communicator.destroy().await;
        Ok::<(), floe::Error>(())
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floe-router: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Waits for SIGTERM or SIGINT.
async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        // Without signal handlers, run until killed.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
