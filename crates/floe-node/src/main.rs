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
  --IceGrid.Node.PrintServersReady=NAME    (prints `NAME ready' on stderr once `always' servers are active)
  --IceGrid.Node.AllowRunningServersAsRoot=1  --IceGrid.Node.PropertiesOverride=\"N=V ...\"
  --IceGrid.Node.CollocateRegistry=1       (runs floe-registry in the node: IceGrid.Registry.* apply)
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

/// With `IceGrid.Node.CollocateRegistry=1` and no `Ice.Default.Locator`, the locator of the
/// registry run in the node: `<instance>/Locator` at `IceGrid.Registry.Client.Endpoints`.
fn collocated_locator(args: &[String]) -> Result<Option<String>, String> {
    let (props, _) = floe::Properties::from_args(args.iter().cloned(), &["IceGrid"]).map_err(|e| e.to_string())?;
    if props.get_int("IceGrid.Node.CollocateRegistry", 0).unwrap_or(0) <= 0
        || props.get("Ice.Default.Locator").is_some_and(|l| !l.is_empty())
    {
        return Ok(None);
    }
    let endpoints = props
        .get("IceGrid.Registry.Client.Endpoints")
        .filter(|e| !e.is_empty())
        .ok_or("IceGrid.Node.CollocateRegistry needs `IceGrid.Registry.Client.Endpoints' with a fixed port")?;
    let instance = props.get("IceGrid.InstanceName").filter(|i| !i.is_empty()).unwrap_or_else(|| "IceGrid".into());
    Ok(Some(format!("{instance}/Locator:{endpoints}")))
}

async fn run(args: Vec<String>) -> ExitCode {
    let defaults = match collocated_locator(&args) {
        Ok(Some(locator)) => vec![("Ice.Default.Locator".to_string(), locator)],
        Ok(None) => Vec::new(),
        Err(e) => return cli::fail("floe-node", e, cli::EXIT_FAILURE),
    };
    let defaults: Vec<(&str, &str)> = defaults.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let (communicator, rest) = match cli::communicator(args, &defaults) {
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
    // As icegridnode: a registry in the node for small deployments, started first.
    let registry = if config.collocate_registry {
        let registry_config = match floe_registry::Config::for_service(communicator.properties()) {
            Ok(c) => c,
            Err(e) => return cli::fail("floe-node", e, cli::EXIT_FAILURE),
        };
        match floe_registry::RegistryService::start(communicator.clone(), registry_config).await {
            Ok(r) => Some(r),
            Err(e) => return cli::fail("floe-node", e, cli::EXIT_FAILURE),
        }
    } else {
        None
    };
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
        // As icegridnode 3.7: once the servers the registry loaded with activation `always`
        // are active (or after a minute, whichever comes first), on standard error (which
        // `Ice.StdErr` may have redirected to a file).
        service.wait_for_servers_ready(Duration::from_secs(60)).await;
        eprintln!("{bundle} ready");
    }
    service.wait().await;
    if let Some(r) = registry {
        r.wait().await;
    }
    communicator.destroy().await;
    ExitCode::SUCCESS
}
