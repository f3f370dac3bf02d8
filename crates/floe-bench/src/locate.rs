//! The `locate` test: resolutions through a locator, as every Ice and floe client makes them
//! for indirect proxies: `Ice::Locator::findAdapterById` (of an adapter and of a replica group
//! of three) and `findObjectById`, answered by
//! floe-registry on its embedded store (redb), floe-registry on etcd (a one-member cluster
//! started here: lookups are answered from the replica's cache either way), and ZeroC's
//! `icegridregistry` 3.7 (Debian zeroc-icegrid), all on their defaults, on loopback.
//!
//! Each registry gets the same state: `ADAPTERS` adapters registered with
//! `setAdapterDirectProxy` and as many well-known objects added with `icegridadmin`. The
//! same client (floe, in this process) then keeps `IN_FLIGHT` requests in flight for a
//! while, each for a random adapter or object, and records every call's latency. Runs are
//! interleaved (every registry once per round), and the table gives the medians over the
//! rounds of the rate and of each round's p50 and p99.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use floe::{Communicator, Identity, Properties, Proxy};
use serde::Serialize;

use crate::stats::round_to;
use crate::charts::{Group, Spread};
use crate::suite::{Context, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// The Rust mapping of Ice's `Ice/Locator.ice`, generated at build time.
#[allow(missing_docs, unreachable_pub, dead_code, clippy::all)]
mod slice {
    include!(concat!(env!("OUT_DIR"), "/locator.rs"));
}

use slice::ice::LocatorPrx;

/// Registered adapters, and well-known objects.
const ADAPTERS: usize = 100;
/// Requests the client keeps in flight.
const IN_FLIGHT: usize = 16;
const INSTANCE: &str = "BenchGrid";

/// A registry under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Registry {
    /// floe-registry with its redb database.
    Embedded,
    /// floe-registry on etcd.
    Etcd,
    /// ZeroC's icegridregistry.
    IceGrid,
}

impl Registry {
    fn name(self) -> &'static str {
        match self {
            Registry::Embedded => "floe-registry (redb)",
            Registry::Etcd => "floe-registry (etcd)",
            Registry::IceGrid => "icegridregistry",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Registry::Embedded => "floe-registry",
            Registry::Etcd => "floe-registry-etcd",
            Registry::IceGrid => "icegridregistry",
        }
    }
}

const REGISTRIES: [Registry; 3] = [Registry::Embedded, Registry::Etcd, Registry::IceGrid];

/// The two calls measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Adapter,
    Object,
    /// `findAdapterById` of a replica group (its members' endpoints together).
    Group,
    /// `Admin::addApplication` of an application of 100 servers (see `applications`).
    Application,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Adapter => "findAdapterById",
            Call::Object => "findObjectById",
            Call::Group => "findAdapterById (replica group)",
            Call::Application => "addApplication (100 servers)",
        }
    }
}

const CALLS: [Call; 4] = [Call::Adapter, Call::Object, Call::Group, Call::Application];
/// Members of the replica group `BenchGroup`.
const GROUP_MEMBERS: usize = 3;

/// One round's figures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) rate: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

/// The samples of one registry and call.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) registry: Registry,
    pub(crate) call: Call,
    pub(crate) samples: Vec<Sample>,
}

fn median(v: Vec<f64>) -> Option<f64> {
    crate::stats::middle(&v)
}

impl Series {
    fn rate(&self) -> Option<f64> {
        median(self.samples.iter().map(|s| s.rate).collect())
    }
    fn p50(&self) -> Option<f64> {
        median(self.samples.iter().map(|s| s.p50_us).collect())
    }
    fn p99(&self) -> Option<f64> {
        median(self.samples.iter().map(|s| s.p99_us).collect())
    }
}

/// A process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Result<TempDir, String> {
        let dir = std::env::temp_dir().join(format!("floe-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running registry: its process, client port, and what it needs (data, etcd).
struct Running {
    _process: Process,
    port: u16,
    _etcd: Option<Process>,
    _data: TempDir,
}

/// floe-registry, built beside this binary (`cargo build --release -p floe-registry`, which
/// `scripts/bench` does).
fn floe_registry_binary() -> Result<PathBuf, String> {
    crate::proc::beside_exe("floe-registry", "cargo build --release -p floe-registry")
}

/// Starts `cmd` and waits until it prints a line containing `marker`; the rest of its output
/// is dropped.
fn start_until(mut cmd: Command, marker: &str, what: &str) -> Result<Process, String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
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
    rx.recv_timeout(crate::proc::READY_LIMIT).map_err(|_| format!("{what} did not get ready"))?;
    Ok(process)
}

/// A one-member etcd cluster on loopback, with its data in `dir`; returns it and its URL.
fn start_etcd(dir: &Path) -> Result<(Process, String), String> {
    let etcd = Path::new("/usr/bin/etcd");
    if !etcd.exists() {
        return Err("/usr/bin/etcd is missing (Debian etcd-server, see scripts/install-deps)".into());
    }
    let (client, peer) = (crate::proc::free_port(), crate::proc::free_port());
    let url = format!("http://127.0.0.1:{client}");
    let mut cmd = Command::new(etcd);
    cmd.args([
        "--name=bench".to_string(),
        format!("--data-dir={}", dir.join("etcd").display()),
        format!("--listen-client-urls={url}"),
        format!("--advertise-client-urls={url}"),
        format!("--listen-peer-urls=http://127.0.0.1:{peer}"),
        format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"),
        format!("--initial-cluster=bench=http://127.0.0.1:{peer}"),
        "--logger=zap".into(),
        "--log-level=error".into(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let process = Process(cmd.spawn().map_err(|e| format!("cannot start etcd: {e}"))?);
    Ok((process, url))
}

fn start(registry: Registry) -> Result<Running, String> {
    let data = TempDir::new(registry.key())?;
    let port = crate::proc::free_port();
    let common = [
        format!("--IceGrid.InstanceName={INSTANCE}"),
        format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1".into(),
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1".into(),
        "--IceGrid.Registry.DynamicRegistration=1".into(),
        format!("--IceGrid.Registry.AdminPermissionsVerifier={INSTANCE}/NullPermissionsVerifier"),
    ];
    let mut etcd = None;
    let (cmd, marker) = match registry {
        Registry::IceGrid => {
            let mut c = Command::new("icegridregistry");
            c.args(&common).args([
                format!("--IceGrid.Registry.LMDB.Path={}", data.0.display()),
                "--IceGrid.Registry.Discovery.Enabled=0".into(),
                "--Ice.PrintAdapterReady=1".into(),
            ]);
            (c, "IceGrid.Registry.Client ready")
        }
        Registry::Embedded => {
            let mut c = Command::new(floe_registry_binary()?);
            c.args(&common).arg(format!("--IceGrid.Registry.LMDB.Path={}", data.0.display()));
            (c, "floe-registry ready")
        }
        Registry::Etcd => {
            let (process, url) = start_etcd(&data.0)?;
            etcd = Some(process);
            let mut c = Command::new(floe_registry_binary()?);
            c.args(&common).arg(format!("--Floe.Registry.Etcd.Endpoints={url}"));
            (c, "floe-registry ready")
        }
    };
    let process = start_until(cmd, marker, registry.name())?;
    Ok(Running { _process: process, port, _etcd: etcd, _data: data })
}

fn locator_string(port: u16) -> String {
    format!("{INSTANCE}/Locator:tcp -h 127.0.0.1 -p {port}")
}

/// Registers the adapters and adds the objects.
async fn fill(c: &Communicator, port: u16) -> Result<(), String> {
    let locator = LocatorPrx::from_object(c.string_to_proxy(&locator_string(port)).map_err(|e| e.to_string())?);
    let registry = locator.get_registry().await.map_err(|e| format!("getRegistry: {e}"))?.ok_or("no registry")?;
    for i in 0..ADAPTERS {
        let proxy =
            c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {}", 20000 + i)).map_err(|e| e.to_string())?;
        registry
            .set_adapter_direct_proxy(&format!("Bench-{i}"), Some(&proxy))
            .await
            .map_err(|e| format!("setAdapterDirectProxy: {e}"))?;
    }
    for i in 0..GROUP_MEMBERS {
        let proxy =
            c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {}", 21000 + i)).map_err(|e| e.to_string())?;
        registry
            .set_replicated_adapter_direct_proxy(&format!("BenchGroup-{i}"), "BenchGroup", Some(&proxy))
            .await
            .map_err(|e| format!("setReplicatedAdapterDirectProxy: {e}"))?;
    }
    let commands: Vec<String> =
        (0..ADAPTERS).map(|i| format!("object add 'bench-{i} @ Bench-{i}' ::Bench::Object")).collect();
    let out = Command::new("timeout")
        .args(["60", "icegridadmin", &format!("--Ice.Default.Locator={}", locator_string(port))])
        .args(["-u", "bench", "-p", "bench", "-e", &commands.join("; ")])
        .output()
        .map_err(|e| format!("cannot run icegridadmin: {e}"))?;
    if !out.status.success() {
        return Err(format!("icegridadmin: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    // Every registry answers both calls before the clock starts.
    locator.find_adapter_by_id("Bench-0").await.map_err(|e| format!("findAdapterById: {e}"))?;
    let group = locator.find_adapter_by_id("BenchGroup").await.map_err(|e| format!("findAdapterById: {e}"))?;
    let members = group.map(|g| g.reference().wire.endpoints.len()).unwrap_or(0);
    if members != GROUP_MEMBERS {
        return Err(format!("the replica group resolves to {members} endpoints, not {GROUP_MEMBERS}"));
    }
    let last = Identity::new(format!("bench-{}", ADAPTERS - 1));
    locator.find_object_by_id(&last).await.map_err(|e| format!("findObjectById: {e}"))?;
    Ok(())
}

/// Keeps `IN_FLIGHT` calls in flight for `duration`; returns the round's figures.
async fn measure(locator: &LocatorPrx, call: Call, duration: Duration) -> Result<Sample, String> {
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for t in 0..IN_FLIGHT {
        let locator = locator.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies: Vec<u32> = Vec::with_capacity(65536);
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
            let ids: Vec<String> = (0..ADAPTERS).map(|i| format!("Bench-{i}")).collect();
            let objects: Vec<Identity> = (0..ADAPTERS).map(|i| Identity::new(format!("bench-{i}"))).collect();
            while Instant::now() < deadline {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let i = (seed % ADAPTERS as u64) as usize;
                let begin = Instant::now();
                let ok = match call {
                    Call::Adapter => {
                        locator.find_adapter_by_id(&ids[i]).await.map(|p| p.is_some()).map_err(|e| e.to_string())
                    }
                    Call::Object => {
                        locator.find_object_by_id(&objects[i]).await.map(|p| p.is_some()).map_err(|e| e.to_string())
                    }
                    Call::Group => {
                        locator.find_adapter_by_id("BenchGroup").await.map(|p| p.is_some()).map_err(|e| e.to_string())
                    }
                    Call::Application => return Err("addApplication is measured by `applications`".into()),
                };
                match ok {
                    Ok(true) => latencies.push(begin.elapsed().as_micros().min(u128::from(u32::MAX)) as u32),
                    Ok(false) => return Err(format!("{}: null proxy", call.name())),
                    Err(e) => return Err(format!("{}: {e}", call.name())),
                }
            }
            Ok(latencies)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.map_err(|e| e.to_string())??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    if all.is_empty() {
        return Err("no call completed".into());
    }
    all.sort_unstable();
    let pct = |p: f64| crate::stats::percentile(&all, p).map_or(0.0, f64::from);
    Ok(Sample { rate: all.len() as f64 / elapsed, p50_us: pct(0.50), p99_us: pct(0.99) })
}

/// The stage: starts the registries, fills them, then `runs` interleaved rounds. Returns
/// the series and notes on what failed.
pub(crate) fn run(quick: bool, runs: usize) -> (Vec<Series>, Vec<String>) {
    let mut notes = Vec::new();
    let duration = Duration::from_millis(if quick { 400 } else { 1500 });
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return (Vec::new(), vec![format!("locate skipped: {e}")]),
    };
    let props = Properties::new();
    props.set("Ice.Default.InvocationTimeout", "10000");
    let communicator = match runtime.block_on(async { Communicator::with_properties(props) }) {
        Ok(c) => c,
        Err(e) => return (Vec::new(), vec![format!("locate skipped: {e}")]),
    };
    let started = Instant::now();
    let mut running = Vec::new();
    for registry in REGISTRIES {
        let ready = start(registry).and_then(|r| runtime.block_on(fill(&communicator, r.port)).map(|()| r));
        match ready {
            Ok(r) => {
                let proxy = match communicator.string_to_proxy(&locator_string(r.port)) {
                    Ok(p) => LocatorPrx::from_object(p),
                    Err(e) => {
                        notes.push(format!("{}: {e}", registry.name()));
                        continue;
                    }
                };
                running.push((registry, r, proxy));
            }
            Err(e) => notes.push(format!("{}: {e}", registry.name())),
        }
    }
    let mut series: Vec<Series> = Vec::new();
    for (registry, _, _) in &running {
        for call in CALLS {
            series.push(Series { registry: *registry, call, samples: Vec::new() });
        }
    }
    for round in 0..runs {
        for (registry, running, locator) in &running {
            for call in CALLS {
                let sample = match call {
                    Call::Application => runtime.block_on(crate::applications::measure(
                        &communicator,
                        INSTANCE,
                        running.port,
                        duration,
                    )),
                    _ => runtime.block_on(measure(locator, call, duration)),
                };
                match sample {
                    Ok(sample) => {
                        eprintln!(
                            "[{:>4.0}s] round {} locate {} {}: {:.0}/s, p50 {:.0} µs, p99 {:.0} µs",
                            started.elapsed().as_secs_f64(),
                            round + 1,
                            registry.name(),
                            call.name(),
                            sample.rate,
                            sample.p50_us,
                            sample.p99_us
                        );
                        if let Some(s) = series.iter_mut().find(|s| s.registry == *registry && s.call == call) {
                            s.samples.push(sample);
                        }
                    }
                    Err(e) => notes.push(format!("{} / {} round {}: {e}", registry.name(), call.name(), round + 1)),
                }
            }
        }
    }
    runtime.block_on(communicator.destroy());
    drop(running);
    (series, notes)
}

fn find(series: &[Series], registry: Registry, call: Call) -> Option<&Series> {
    series.iter().find(|s| s.registry == registry && s.call == call)
}

fn rate_cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 1e4 => format!("{:.1}k", v / 1e3),
        Some(v) => format!("{v:.0}"),
        None => "–".into(),
    }
}

fn us_cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into())
}

/// The Markdown table: per registry and call, the rate, p50 and p99 (medians over the
/// rounds) and the rate's ratio to icegridregistry's.
pub(crate) fn table(series: &[Series], quick: bool, runs: usize, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "locate: Ice::Locator resolutions of {ADAPTERS} registered adapters / well-known objects, {IN_FLIGHT} requests \
         in flight from one floe client, every registry on its defaults on loopback ({} rounds of {} s, medians)\n",
        runs,
        if quick { "0.4" } else { "1.5" }
    );
    s.push_str("| registry | call | resolutions/s | p50 µs | p99 µs | rate / icegridregistry |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for call in CALLS {
        let ice = find(series, Registry::IceGrid, call).and_then(Series::rate);
        for registry in REGISTRIES {
            let Some(x) = find(series, registry, call) else { continue };
            let ratio = match (x.rate(), ice) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                _ => "–".into(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {ratio} |",
                registry.name(),
                call.name(),
                rate_cell(x.rate()),
                us_cell(x.p50()),
                us_cell(x.p99())
            );
        }
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// A figure of `registry`'s rounds on `call`.
fn values(series: &[Series], registry: Registry, call: Call, f: fn(&Sample) -> f64) -> Vec<f64> {
    find(series, registry, call).map(|s| s.samples.iter().map(f).collect()).unwrap_or_default()
}

/// floe-registry's ratios to icegridregistry per store and call: the rate, and the p99
/// turned over (less is better).
fn ratios(series: &[Series]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for call in CALLS {
        for registry in [Registry::Embedded, Registry::Etcd] {
            let of = |r, f| values(series, r, call, f);
            let store = if registry == Registry::Embedded { "redb" } else { "etcd" };
            let rate = |x: &Sample| x.rate;
            let p99 = |x: &Sample| x.p99_us;
            let test = format!("{} rate ({store})", call.name());
            out.extend(of_runs(&test, "icegridregistry", &of(registry, rate), &of(Registry::IceGrid, rate)));
            let test = format!("{} p99 ({store})", call.name());
            out.extend(
                of_runs(&test, "icegridregistry", &of(registry, p99), &of(Registry::IceGrid, p99)).and_then(Ratio::inverted),
            );
        }
    }
    out
}

/// The stage's charts: each registry's rate per call, and its p50 and p99.
fn charts(series: &[Series]) -> String {
    type Figure = fn(&Sample) -> f64;
    let (rate, p50, p99): (Figure, Figure, Figure) = (|x| x.rate, |x| x.p50_us, |x| x.p99_us);
    let groups = |cats: &[(Call, Figure)]| -> Vec<Group> {
        REGISTRIES
            .iter()
            .map(|r| Group {
                name: r.name().to_string(),
                values: cats.iter().map(|(c, f)| Spread::of(&values(series, *r, *c, *f))).collect(),
            })
            .collect()
    };
    // Resolutions and the add of an application are charted apart: their scales differ by
    // thousands.
    let lookups = [Call::Adapter, Call::Object, Call::Group];
    let calls: Vec<String> = lookups.iter().map(|c| c.name().to_string()).collect();
    let mut s = crate::charts::bars(
        "Locate: resolutions per second (median, min–max of the rounds)",
        "resolutions/s",
        &calls,
        &groups(&[(Call::Adapter, rate), (Call::Object, rate), (Call::Group, rate)]),
    );
    let cats: Vec<(Call, Figure)> = lookups.iter().flat_map(|c| [(*c, p50), (*c, p99)]).collect();
    let labels: Vec<String> =
        lookups.iter().flat_map(|c| [format!("{} p50", c.name()), format!("{} p99", c.name())]).collect();
    s.push_str(&crate::charts::bars(
        "Locate: latency percentiles (median, min–max of the rounds)",
        "µs",
        &labels,
        &groups(&cats),
    ));
    let ms: Figure = |x| x.p50_us / 1000.0;
    s.push_str(&crate::charts::bars(
        "Deploy: addApplication of 100 servers, ms (median, min–max of the rounds)",
        "ms",
        &[Call::Application.name().to_string()],
        &groups(&[(Call::Application, ms)]),
    ));
    s
}

/// The JSON record of one registry and call.
#[derive(Debug, Serialize)]
struct Record {
    system: &'static str,
    test: String,
    metric: &'static str,
    unit: &'static str,
    median: f64,
    p50_us: f64,
    p99_us: f64,
    runs: usize,
}

/// JSON records, one per registry and call, for the report's array.
pub(crate) fn json_records(series: &[Series]) -> Vec<serde_json::Value> {
    series
        .iter()
        .filter_map(|s| {
            Some(crate::json::record(&Record {
                system: s.registry.key(),
                test: format!("locate/{}", s.call.name()),
                metric: "locate",
                unit: "calls/s",
                median: round_to(s.rate()?, 1),
                p50_us: round_to(s.p50()?, 1),
                p99_us: round_to(s.p99()?, 1),
                runs: s.samples.len(),
            }))
        })
        .collect()
}

/// The locate test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Locate;

/// The rounds of the locate test: `--runs`, or 5 (3 with `--quick`).
fn rounds(ctx: &Context) -> usize {
    ctx.args.runs.unwrap_or(if ctx.args.quick { 3 } else { 5 }).max(1)
}

impl Suite for Locate {
    type Results = (Vec<Series>, Vec<String>);

    fn name(&self) -> &'static str {
        "locate"
    }

    fn title(&self) -> &'static str {
        "Locate"
    }

    fn systems(&self, _ctx: &Context) -> Vec<String> {
        REGISTRIES.iter().map(|r| r.key().to_string()).collect()
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        run(ctx.args.quick, rounds(ctx))
    }

    fn table(&self, ctx: &Context, (series, notes): &Self::Results) -> String {
        table(series, ctx.args.quick, rounds(ctx), notes)
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        crate::suite::charts_section(self.title(), &charts(&r.0), &self.table(ctx, r))
    }

    fn summary(&self, _ctx: &Context, (series, _): &Self::Results) -> Option<StageSummary> {
        StageSummary::new("locate", "figures", ratios(series))
    }

    fn records(&self, (series, _): &Self::Results) -> Vec<serde_json::Value> {
        json_records(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_medians_and_the_ratio_to_icegrid() {
        let sample = |rate, p50_us, p99_us| Sample { rate, p50_us, p99_us };
        let series = vec![
            Series {
                registry: Registry::Embedded,
                call: Call::Adapter,
                samples: vec![
                    sample(40_000.0, 300.0, 900.0),
                    sample(50_000.0, 200.0, 800.0),
                    sample(45_000.0, 250.0, 700.0),
                ],
            },
            Series { registry: Registry::IceGrid, call: Call::Adapter, samples: vec![sample(15_000.0, 900.0, 3000.0)] },
        ];
        let t = table(&series, true, 3, &[]);
        assert!(t.contains("| floe-registry (redb) | findAdapterById | 45.0k | 250 | 800 | 3.00 |"), "{t}");
        assert!(t.contains("| icegridregistry | findAdapterById | 15.0k | 900 | 3000 | 1.00 |"), "{t}");
        assert_eq!(json_records(&series).len(), 2);
    }
}
