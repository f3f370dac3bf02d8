//! `floe-registry`: an IceGrid-compatible registry, a drop-in for `icegridregistry` 3.7 for
//! servers that register their adapters dynamically. See the crate's README.

use std::process::ExitCode;

use floe::Communicator;
use floe_registry::{Config, RegistryService};

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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().collect();
    if args.iter().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args.iter().skip(1).any(|a| a == "--version" || a == "-v") {
        println!("{}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    // Two runtime threads unless Floe.Runtime.Threads says otherwise.
    let threads = floe::Properties::from_args(args.iter().skip(1).cloned(), &["IceGrid"])
        .ok()
        .and_then(|(p, _)| p.get_int("Floe.Runtime.Threads", 2).ok())
        .unwrap_or(2)
        .clamp(1, 64) as usize;
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("floe-registry: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args))
}

async fn run(args: Vec<String>) -> ExitCode {
    let (communicator, rest) = match Communicator::from_args(args.into_iter().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe-registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !rest.is_empty() {
        eprintln!("floe-registry: unknown arguments {rest:?}\n{USAGE}");
        return ExitCode::FAILURE;
    }
    let config = match Config::from_properties(communicator.properties()) {
        Ok(c) if c.data_dir.is_none() && c.etcd_endpoints.is_empty() => {
            eprintln!("floe-registry: property `IceGrid.Registry.LMDB.Path' is not set");
            return ExitCode::FAILURE;
        }
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe-registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    let service = match RegistryService::start(communicator.clone(), config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("floe-registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    let c = communicator.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        c.shutdown();
    });
    println!("floe-registry ready: {}", service.locator());
    service.wait().await;
    communicator.destroy().await;
    ExitCode::SUCCESS
}
