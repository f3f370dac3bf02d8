//! `floe-node`: an IceGrid node, a drop-in for `icegridnode` 3.7. See the crate's README.

use std::process::ExitCode;
use std::time::Duration;

use floe_node::{NodeConfig, NodeService};
use floe_service::cli;

const USAGE: &str = "usage: floe-node [--Ice.Config=FILE] [--Name=value ...]
  --IceGrid.Node.Name=NAME                 (required)
  --IceGrid.Node.Endpoints=ENDPOINTS       (required)
  --IceGrid.Node.Data=DIR                  (required, an existing directory)
  --Ice.Default.Locator=PROXY              (required: the registry's locator)
  --IceGrid.Node.Output=DIR  --IceGrid.Node.RedirectErrToOut=1
  --IceGrid.Node.WaitTime=SECONDS          (default 60)
  --IceGrid.Node.PrintServersReady=NAME    (prints `NAME ready' once `always' servers are active)
  --IceGrid.Node.AllowRunningServersAsRoot=1  --IceGrid.Node.PropertiesOverride=\"N=V ...\"
See docs/registry.md.";

fn main() -> ExitCode {
    cli::init_tracing(None, "warn");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = cli::help_or_version(&args, USAGE, env!("CARGO_PKG_VERSION")) {
        return code;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return cli::fail("floe-node", format!("cannot start the runtime: {e}"), cli::EXIT_FAILURE),
    };
    runtime.block_on(run(args))
}

async fn run(args: Vec<String>) -> ExitCode {
    let (communicator, rest) = match cli::communicator(args, &[]) {
        Ok(c) => c,
        Err(e) => return cli::fail("floe-node", e, cli::EXIT_FAILURE),
    };
    if !rest.is_empty() {
        return cli::fail("floe-node", format!("unknown arguments {rest:?}\n{USAGE}"), cli::EXIT_FAILURE);
    }
    let config = match NodeConfig::from_properties(communicator.properties()) {
        Ok(c) => c,
        Err(e) => return cli::fail("floe-node", e, cli::EXIT_FAILURE),
    };
    if config.collocate_registry {
        return cli::fail(
            "floe-node",
            "IceGrid.Node.CollocateRegistry is not supported: run floe-registry beside the node",
            cli::EXIT_FAILURE,
        );
    }
    if communicator.default_locator().is_none() {
        return cli::fail("floe-node", "property `Ice.Default.Locator' is not set", cli::EXIT_FAILURE);
    }
    let print_ready = config.print_servers_ready.clone();
    let service = match NodeService::start(communicator.clone(), config).await {
        Ok(s) => s,
        Err(e) => return cli::fail("floe-node", e, cli::EXIT_FAILURE),
    };
    let c = communicator.clone();
    tokio::spawn(async move {
        cli::wait_for_signal().await;
        c.shutdown();
    });
    cli::ready(&format!("floe-node ready: {}", service.proxy()));
    if let Some(bundle) = print_ready {
        // As icegridnode: once the servers the registry loaded with activation `always` are
        // active (or after a minute, whichever comes first).
        service.wait_for_servers_ready(Duration::from_secs(60)).await;
        cli::ready(&format!("{bundle} ready"));
    }
    service.wait().await;
    communicator.destroy().await;
    ExitCode::SUCCESS
}
