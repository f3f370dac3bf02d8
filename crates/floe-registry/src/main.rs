//! `floe-registry`: an IceGrid-compatible registry, a drop-in for `icegridregistry` 3.7 for
//! servers that register their adapters dynamically. See the crate's README.

use std::process::ExitCode;

use floe_registry::{Config, RegistryService};
use floe_service::cli;

const USAGE: &str = "usage: floe-registry [--Ice.Config=FILE] [--Name=value ...]
  --IceGrid.InstanceName=NAME                    (default IceGrid)
  --IceGrid.Registry.Client.Endpoints=ENDPOINTS  (required)
  --IceGrid.Registry.Server.Endpoints=ENDPOINTS
  --IceGrid.Registry.Internal.Endpoints=ENDPOINTS
  --IceGrid.Registry.LMDB.Path=DIR               (required; or IceGrid.Registry.Data)
  --Floe.Registry.Etcd.Endpoints=URL,...          (instead: the state in etcd, shared by replicas)
  --IceGrid.Registry.DynamicRegistration=1
  --IceGrid.Registry.PermissionsVerifier=PROXY / AdminPermissionsVerifier=PROXY
See docs/registry.md.";

fn main() -> ExitCode {
    cli::init_tracing(None, "warn");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = cli::help_or_version(&args, USAGE, env!("CARGO_PKG_VERSION")) {
        return code;
    }
    // Two runtime threads unless Floe.Runtime.Threads says otherwise.
    let threads = floe::Properties::from_args(args.iter().cloned(), &["IceGrid"])
        .ok()
        .and_then(|(p, _)| p.get_int("Floe.Runtime.Threads", 2).ok())
        .unwrap_or(2)
        .clamp(1, 64) as usize;
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build() {
        Ok(r) => r,
        Err(e) => return cli::fail("floe-registry", format!("cannot start the runtime: {e}"), cli::EXIT_FAILURE),
    };
    runtime.block_on(run(args))
}

async fn run(args: Vec<String>) -> ExitCode {
    let (communicator, rest) = match cli::communicator(args, &[]) {
        Ok(c) => c,
        Err(e) => return cli::fail("floe-registry", e, cli::EXIT_FAILURE),
    };
    if !rest.is_empty() {
        return cli::fail("floe-registry", format!("unknown arguments {rest:?}\n{USAGE}"), cli::EXIT_FAILURE);
    }
    let config = match Config::for_service(communicator.properties()) {
        Ok(c) => c,
        Err(e) => return cli::fail("floe-registry", e, cli::EXIT_FAILURE),
    };
    let service = match RegistryService::start(communicator.clone(), config).await {
        Ok(s) => s,
        Err(e) => return cli::fail("floe-registry", e, cli::EXIT_FAILURE),
    };
    let c = communicator.clone();
    tokio::spawn(async move {
        cli::wait_for_signal().await;
        c.shutdown();
    });
    cli::ready(&format!("floe-registry ready: {}", service.locator()));
    service.wait().await;
    communicator.destroy().await;
    ExitCode::SUCCESS
}
