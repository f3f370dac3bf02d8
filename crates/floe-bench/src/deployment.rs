//! The `deployment` test: on-demand activation through an IceGrid grid, timed as a client
//! sees it. A new client's first request on an indirect proxy (the well-known object of an
//! inactive on-demand server) is timed until its reply: the locate, the registry asking the
//! node to activate the server's adapter, the node writing the server's configuration and
//! spawning it, the server registering its endpoints (and its `Process` object), and the
//! call itself.
//!
//! The grids: floe's (floe-registry and floe-node), ZeroC's (`icegridregistry` and
//! `icegridnode` 3.7, Debian zeroc-icegrid), and the mixed one (icegridregistry and
//! floe-node), each on its defaults, on loopback. Every grid activates the same executable,
//! this crate's helper as a floe server (`floe-bench-helper --grid-server`, see
//! [`crate::roles::grid_server`]), so that the comparison is of the registry and the node.
//!
//! Per round every grid is started fresh (in temporary directories), an admin session adds
//! one application with one on-demand server on its node, and then, `activations` times: a
//! new client pings the object (timed), then `Admin::stopServer` stops the server and the
//! test waits until the registry reports it inactive (not timed). Rounds interleave the
//! grids; the table gives p50 and p99 over all activations, and ZeroC's p50 over each
//! grid's.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use floe::{Class, Communicator, Identity, Properties, Proxy};
use floe_registry::slice::ice_grid::{
    AdapterDescriptor, AdminPrx, ApplicationDescriptor, CommunicatorDescriptor, NodeDescriptor, ObjectDescriptor,
    PropertyDescriptor, PropertySetDescriptor, ServerDescriptor, ServerState,
};
use serde::Serialize;

use crate::charts::{Group, Spread};
use crate::stats::round_to;
use crate::suite::{Context, Suite};
use crate::summary::{per_run, Ratio, StageSummary};

const INSTANCE: &str = "BenchDeployGrid";
const APPLICATION: &str = "BenchDeployment";
const NODE: &str = "node1";
/// The on-demand server's id, and its well-known object.
const SERVER: &str = "BenchPinged";
const OBJECT: &str = "bench-pinged";
/// How long any one wait of the test may take: a start, a registration, a call, a stop.
const LIMIT: Duration = Duration::from_secs(30);

/// A grid under test: a registry and a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grid {
    /// floe-registry and floe-node.
    Floe,
    /// icegridregistry and floe-node.
    Mixed,
    /// icegridregistry and icegridnode.
    Zeroc,
}

const GRIDS: [Grid; 3] = [Grid::Floe, Grid::Mixed, Grid::Zeroc];

impl Grid {
    /// The grid's name in the table.
    fn name(self) -> &'static str {
        match self {
            Grid::Floe => "floe grid",
            Grid::Mixed => "mixed grid",
            Grid::Zeroc => "ZeroC grid",
        }
    }

    /// The grid's system name in the JSON records.
    fn key(self) -> &'static str {
        match self {
            Grid::Floe => "floe-registry+floe-node",
            Grid::Mixed => "icegridregistry+floe-node",
            Grid::Zeroc => "icegridregistry+icegridnode",
        }
    }

    fn zeroc_registry(self) -> bool {
        self != Grid::Floe
    }

    fn zeroc_node(self) -> bool {
        self == Grid::Zeroc
    }
}

/// A process ended when dropped: SIGTERM first, so that a node stops the servers it started
/// (a server left active by a failed round would outlive a killed node), then SIGKILL if it
/// has not exited within 5 s.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SAFETY: signals our own child, not yet reaped.
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A temporary directory removed when dropped, open to everyone: a node run as root runs
/// its servers as `nobody`, who must read their configuration and write their output.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Result<TempDir, String> {
        let dir = std::env::temp_dir().join(format!("floe-bench-deployment-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = TempDir(dir);
        d.sub("")?;
        Ok(d)
    }

    /// The subdirectory `name`, created.
    fn sub(&self, name: &str) -> Result<PathBuf, String> {
        use std::os::unix::fs::PermissionsExt;
        let d = self.0.join(name);
        std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).map_err(|e| e.to_string())?;
        Ok(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running grid. Fields drop in order: the node before the registry.
struct Running {
    _node: Process,
    _registry: Process,
    port: u16,
    _dir: TempDir,
}

/// Starts `cmd` with its standard error joined to its standard output (icegridnode prints its
/// ready line on stderr) and waits up to [`LIMIT`] until it prints a line containing `marker`;
/// the rest of its output is dropped.
fn start_until(program: &Path, args: &[String], marker: &str, what: &str) -> Result<Process, String> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("exec \"$0\" \"$@\" 2>&1").arg(program).args(args);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut process = Process(cmd.spawn().map_err(|e| format!("cannot start {what}: {e}"))?);
    let stdout = process.0.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let marker = marker.to_string();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut seen = false;
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if !seen && line.contains(&marker) {
                seen = true;
                let _ = tx.send(());
            }
            line.clear();
        }
    });
    rx.recv_timeout(LIMIT).map_err(|_| format!("{what} did not get ready within {LIMIT:?}"))?;
    Ok(process)
}

fn locator_string(port: u16) -> String {
    format!("{INSTANCE}/Locator:tcp -h 127.0.0.1 -p {port}")
}

/// Starts `grid`'s registry on a free port, then its node.
fn start(grid: Grid) -> Result<Running, String> {
    let dir = TempDir::new(grid.key())?;
    let port = crate::proc::free_port();
    let mut args = vec![
        format!("--IceGrid.InstanceName={INSTANCE}"),
        format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1".into(),
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1".into(),
        format!("--IceGrid.Registry.LMDB.Path={}", dir.sub("registry")?.display()),
        format!("--IceGrid.Registry.AdminPermissionsVerifier={INSTANCE}/NullPermissionsVerifier"),
    ];
    let registry = if grid.zeroc_registry() {
        args.extend([
            "--IceGrid.Registry.LMDB.MapSize=64".into(),
            "--IceGrid.Registry.Discovery.Enabled=0".into(),
            "--Ice.PrintAdapterReady=1".into(),
        ]);
        start_until(Path::new("icegridregistry"), &args, "IceGrid.Registry.Client ready", "icegridregistry")?
    } else {
        let exe = crate::proc::beside_exe("floe-registry", "cargo build --release -p floe-registry")?;
        start_until(&exe, &args, "floe-registry ready", "floe-registry")?
    };
    let node_exe = if grid.zeroc_node() {
        let exe = PathBuf::from("/usr/bin/icegridnode");
        if !exe.exists() {
            return Err("/usr/bin/icegridnode is missing (Debian zeroc-icegrid, see scripts/install-deps)".into());
        }
        exe
    } else {
        crate::proc::beside_exe("floe-node", "cargo build --release -p floe-node")?
    };
    let node_args = [
        format!("--Ice.Default.Locator={}", locator_string(port)),
        format!("--IceGrid.Node.Name={NODE}"),
        "--IceGrid.Node.Endpoints=tcp -h 127.0.0.1".into(),
        format!("--IceGrid.Node.Data={}", dir.sub("node-data")?.display()),
        format!("--IceGrid.Node.Output={}", dir.sub("node-out")?.display()),
        "--IceGrid.Node.PrintServersReady=bench-node".into(),
    ];
    let node = start_until(
        &node_exe,
        &node_args,
        "bench-node ready",
        if grid.zeroc_node() { "icegridnode" } else { "floe-node" },
    )?;
    Ok(Running { _node: node, _registry: registry, port, _dir: dir })
}

/// The application: one on-demand server on the node, the helper as a floe server, with one
/// adapter and its well-known object.
fn descriptor(exe: &Path) -> ApplicationDescriptor {
    let property = |name: &str, value: &str| PropertyDescriptor { name: name.into(), value: value.into() };
    let server = ServerDescriptor {
        base: CommunicatorDescriptor {
            adapters: vec![AdapterDescriptor {
                name: "Pinged".into(),
                id: "${server}.Pinged".into(),
                server_lifetime: true,
                objects: vec![ObjectDescriptor {
                    id: Identity::new(OBJECT),
                    r#type: "::Bench::Perf".into(),
                    proxy_options: String::new(),
                }],
                ..Default::default()
            }],
            property_set: PropertySetDescriptor {
                references: Vec::new(),
                properties: vec![property("Pinged.Endpoints", "tcp -h 127.0.0.1"), property("Pinged.Identity", OBJECT)],
            },
            ..Default::default()
        },
        id: SERVER.into(),
        exe: exe.display().to_string(),
        options: vec![crate::roles::GRID_SERVER.into()],
        activation: "on-demand".into(),
        activation_timeout: "20".into(),
        deactivation_timeout: "10".into(),
        ..Default::default()
    };
    let node = NodeDescriptor { servers: vec![Some(Class::new(server))], ..Default::default() };
    ApplicationDescriptor { name: APPLICATION.into(), nodes: [(NODE.to_string(), node)].into(), ..Default::default() }
}

/// Polls `check` every 5 ms until it holds, for at most [`LIMIT`].
async fn until<F, Fut>(what: &str, mut check: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + LIMIT;
    while !check().await {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting until {what}"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// The server's state, or `None` when the registry cannot say.
async fn state(admin: &AdminPrx) -> Option<ServerState> {
    admin.get_server_state(SERVER).await.ok()
}

/// Waits for the node to register, then adds the application.
async fn deploy(c: &Communicator, port: u16, exe: &Path) -> Result<AdminPrx, String> {
    let admin = crate::applications::admin(c, INSTANCE, port).await?.ice_invocation_timeout(Some(LIMIT));
    until("the node is registered", || async { admin.ping_node(NODE).await.unwrap_or(false) }).await?;
    admin.add_application(&descriptor(exe)).await.map_err(|e| format!("addApplication: {e}"))?;
    until("the server is loaded, inactive", || async { state(&admin).await == Some(ServerState::Inactive) }).await?;
    Ok(admin)
}

/// One activation, timed: a new client (its connection to the registry opened first) pings
/// the server's well-known object.
async fn first_call(port: u16) -> Result<Duration, String> {
    let props = Properties::new();
    props.set("Ice.Default.Locator", &locator_string(port));
    props.set("Ice.Warn.Connections", "0");
    let c = Communicator::with_properties(props).map_err(|e| e.to_string())?;
    let timed = async {
        let locator = c.string_to_proxy(&locator_string(port)).map_err(|e| e.to_string())?;
        locator.ice_invocation_timeout(Some(LIMIT)).ice_ping().await.map_err(|e| format!("locator: {e}"))?;
        let proxy = c.string_to_proxy(OBJECT).map_err(|e| e.to_string())?.ice_invocation_timeout(Some(LIMIT));
        let begin = Instant::now();
        proxy.ice_ping().await.map_err(|e| format!("first call: {e}"))?;
        Ok(begin.elapsed())
    }
    .await;
    c.destroy().await;
    timed
}

/// Stops the server and waits until the registry reports it inactive.
async fn stop(admin: &AdminPrx) -> Result<(), String> {
    admin.stop_server(SERVER).await.map_err(|e| format!("stopServer: {e}"))?;
    until("the server is inactive", || async { state(admin).await == Some(ServerState::Inactive) }).await
}

/// One round of `grid`: started fresh, deployed, activated `activations` times; the first
/// calls' latencies in µs.
async fn round(grid: Grid, exe: &Path, activations: usize) -> Result<Vec<f64>, String> {
    let running = start(grid)?;
    let props = Properties::new();
    props.set("Ice.Warn.Connections", "0");
    let c = Communicator::with_properties(props).map_err(|e| e.to_string())?;
    let measured = async {
        let admin = deploy(&c, running.port, exe).await?;
        let mut us = Vec::with_capacity(activations);
        for _ in 0..activations {
            us.push(first_call(running.port).await?.as_secs_f64() * 1e6);
            until("the server is active", || async { state(&admin).await == Some(ServerState::Active) }).await?;
            stop(&admin).await?;
        }
        Ok(us)
    }
    .await;
    c.destroy().await;
    drop(running);
    measured
}

/// The activations of one grid: each round's first-call latencies, in µs.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) grid: Grid,
    pub(crate) rounds: Vec<Vec<f64>>,
}

impl Series {
    /// Every activation, sorted.
    fn all(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.rounds.iter().flatten().copied().collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The fraction `p` of every activation, in µs.
    fn at(&self, p: f64) -> Option<f64> {
        crate::stats::percentile(&self.all(), p)
    }

    /// Each round's fraction `p`, in µs.
    fn per_round(&self, p: f64) -> Vec<f64> {
        self.rounds
            .iter()
            .filter_map(|r| {
                let mut r = r.clone();
                r.sort_by(f64::total_cmp);
                crate::stats::percentile(&r, p)
            })
            .collect()
    }
}

/// Activations per grid and round: 30, or 5 with `--quick`.
fn activations(ctx: &Context) -> usize {
    if ctx.args.quick {
        5
    } else {
        30
    }
}

/// The rounds: `--runs`, or 3 (2 with `--quick`).
fn rounds(ctx: &Context) -> usize {
    ctx.args.runs.unwrap_or(if ctx.args.quick { 2 } else { 3 }).max(1)
}

/// The stage: `runs` rounds, each of every grid in turn. Returns the series and notes on
/// what failed.
pub(crate) fn run(runs: usize, activations: usize) -> (Vec<Series>, Vec<String>) {
    let exe = match crate::proc::helper_exe() {
        Ok(e) => e,
        Err(e) => return (Vec::new(), vec![format!("deployment skipped: {e}")]),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return (Vec::new(), vec![format!("deployment skipped: {e}")]),
    };
    let started = Instant::now();
    let mut series: Vec<Series> = GRIDS.iter().map(|g| Series { grid: *g, rounds: Vec::new() }).collect();
    let mut notes = Vec::new();
    for r in 0..runs {
        for s in series.iter_mut() {
            match runtime.block_on(round(s.grid, &exe, activations)) {
                Ok(us) => {
                    let mut sorted = us.clone();
                    sorted.sort_by(f64::total_cmp);
                    let pct = |p| crate::stats::percentile(&sorted, p).unwrap_or(0.0) / 1000.0;
                    eprintln!(
                        "[{:>4.0}s] round {} deployment {}: {} activations, p50 {:.1} ms, max {:.1} ms",
                        started.elapsed().as_secs_f64(),
                        r + 1,
                        s.grid.name(),
                        us.len(),
                        pct(0.5),
                        pct(1.0)
                    );
                    s.rounds.push(us);
                }
                Err(e) => notes.push(format!("{} round {}: {e}", s.grid.name(), r + 1)),
            }
        }
    }
    series.retain(|s| !s.rounds.is_empty());
    (series, notes)
}

fn find(series: &[Series], grid: Grid) -> Option<&Series> {
    series.iter().find(|s| s.grid == grid)
}

fn ms_cell(us: Option<f64>) -> String {
    us.map(|v| format!("{:.1}", v / 1000.0)).unwrap_or_else(|| "–".into())
}

/// The Markdown table: per grid, the activations, p50 and p99 over all of them, and ZeroC's
/// p50 over the grid's.
pub(crate) fn table(series: &[Series], runs: usize, activations: usize, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "deployment: the first call to an on-demand IceGrid server (a new client's ice_ping of its well-known \
         object: locate, activation by the node, the server's start and registration, the call), every grid on \
         its defaults on loopback, the same server executable; {runs} rounds of {activations} activations per grid, \
         p50 and p99 over all of them\n"
    );
    s.push_str("| grid | registry + node | activations | p50 ms | p99 ms | ZeroC p50 / p50 |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    let zeroc = find(series, Grid::Zeroc).and_then(|z| z.at(0.5));
    for grid in GRIDS {
        let Some(x) = find(series, grid) else { continue };
        let ratio = match (zeroc, x.at(0.5)) {
            (Some(z), Some(v)) if v > 0.0 => format!("{:.2}", z / v),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {ratio} |",
            grid.name(),
            grid.key().replace('+', " + "),
            x.all().len(),
            ms_cell(x.at(0.5)),
            ms_cell(x.at(0.99))
        );
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The floe grid's and the mixed grid's ratios to ZeroC's, p50 and p99 turned over (less is
/// better), with the spread of the per-round ratios.
fn ratios(series: &[Series]) -> Vec<Ratio> {
    let Some(zeroc) = find(series, Grid::Zeroc) else { return Vec::new() };
    let mut out = Vec::new();
    for grid in [Grid::Floe, Grid::Mixed] {
        let Some(x) = find(series, grid) else { continue };
        for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
            let test = format!("first call {label} ({})", grid.name());
            let spread = per_run(&x.per_round(p), &zeroc.per_round(p));
            out.extend(Ratio::new(&test, "ZeroC grid", x.at(p), zeroc.at(p), &spread).and_then(Ratio::inverted));
        }
    }
    out
}

/// The stage's chart: each grid's p50 and p99 (over each round, the median of the rounds and
/// their range).
fn charts(series: &[Series]) -> String {
    let groups: Vec<Group> = series
        .iter()
        .map(|s| Group {
            name: s.grid.name().to_string(),
            values: [0.5, 0.99]
                .iter()
                .map(|p| Spread::of(&s.per_round(*p).iter().map(|v| v / 1000.0).collect::<Vec<_>>()))
                .collect(),
        })
        .collect();
    crate::charts::bars(
        "Deployment: first call to an on-demand server, ms (median, min–max of the rounds)",
        "ms",
        &["p50".to_string(), "p99".to_string()],
        &groups,
    )
}

/// The JSON record of one grid.
#[derive(Debug, Serialize)]
struct Record {
    system: &'static str,
    test: &'static str,
    metric: &'static str,
    unit: &'static str,
    median: f64,
    p50_ms: f64,
    p99_ms: f64,
    samples: usize,
    runs: usize,
}

/// JSON records, one per grid.
pub(crate) fn json_records(series: &[Series]) -> Vec<serde_json::Value> {
    series
        .iter()
        .filter_map(|s| {
            let (p50, p99) = (s.at(0.5)? / 1000.0, s.at(0.99)? / 1000.0);
            Some(crate::json::record(&Record {
                system: s.grid.key(),
                test: "deployment/first-call",
                metric: "latency",
                unit: "ms",
                median: round_to(p50, 2),
                p50_ms: round_to(p50, 2),
                p99_ms: round_to(p99, 2),
                samples: s.all().len(),
                runs: s.rounds.len(),
            }))
        })
        .collect()
}

/// The deployment test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deployment;

impl Suite for Deployment {
    type Results = (Vec<Series>, Vec<String>);

    fn name(&self) -> &'static str {
        "deployment"
    }

    fn title(&self) -> &'static str {
        "Deployment"
    }

    fn systems(&self, _ctx: &Context) -> Vec<String> {
        GRIDS.iter().map(|g| g.key().to_string()).collect()
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        run(rounds(ctx), activations(ctx))
    }

    fn table(&self, ctx: &Context, (series, notes): &Self::Results) -> String {
        table(series, rounds(ctx), activations(ctx), notes)
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        crate::suite::charts_section(self.title(), &charts(&r.0), &self.table(ctx, r))
    }

    fn summary(&self, _ctx: &Context, (series, _): &Self::Results) -> Option<StageSummary> {
        StageSummary::new("deployment", "figures", ratios(series))
    }

    fn records(&self, (series, _): &Self::Results) -> Vec<serde_json::Value> {
        json_records(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_percentiles_over_all_activations_and_zerocs_ratio() {
        let series = vec![
            Series { grid: Grid::Floe, rounds: vec![vec![10_000.0, 12_000.0, 11_000.0], vec![9_000.0]] },
            Series { grid: Grid::Zeroc, rounds: vec![vec![30_000.0, 40_000.0], vec![35_000.0]] },
        ];
        let t = table(&series, 2, 3, &["mixed grid round 1: failed".into()]);
        assert!(t.contains("| floe grid | floe-registry + floe-node | 4 | 11.0 | 12.0 | 3.18 |"), "{t}");
        assert!(t.contains("| ZeroC grid | icegridregistry + icegridnode | 3 | 35.0 | 40.0 | 1.00 |"), "{t}");
        assert!(t.contains("note: mixed grid round 1"), "{t}");
        let r = ratios(&series);
        assert_eq!(r.len(), 2);
        assert!((r[0].median - 35.0 / 11.0).abs() < 1e-9, "{r:?}");
        assert_eq!(json_records(&series).len(), 2);
    }

    #[test]
    fn the_application_has_one_on_demand_server_started_as_the_grid_server() {
        let app = descriptor(Path::new("/bin/helper"));
        let server = app.nodes[NODE].servers[0].as_ref().unwrap().read();
        assert_eq!(
            (server.activation.as_str(), server.options.as_slice()),
            ("on-demand", &["--grid-server".to_string()][..])
        );
        assert_eq!(server.base.adapters[0].objects[0].id, Identity::new(OBJECT));
    }
}
