//! The `router` test: the same client calls the same server directly, through floe-router and
//! through ZeroC's glacier2router, one after another in each round, rounds interleaved. It runs
//! for two pairs of client and server: Ice C++ (`peers/ice-router` calling `ice-tester-server`,
//! `peers/ice-tester`), as an Ice shop would put a router between its programs, and floe
//! (`floe-bench --router-client`, `src/router_client.rs`, calling `floe-interop-server`), whose
//! own time leaves more of each call to the router. Both routers run on their defaults with
//! `Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier` and stay up for the whole
//! stage; every client run makes a session of its own.
//!
//! The client measures, each for a fixed time after a warm-up: sequential twoway `ping()`
//! (calls/s, p50 and p99 latency), asynchronous pings with at most 100 in flight (calls/s),
//! oneway `incCounter` (msg/s until the server counted them all), sequential 500 kB
//! `sendByteSeq` (calls/s, latency) and sequential callbacks (`callEcho`: the server calls the
//! client's `Echo` back, through the router when the client uses one). "Added latency" is a
//! router run's latency minus the direct run's of the same round. Each round also runs the
//! client through the copy relay (`src/relay.rs`), which forwards whole messages unchanged
//! from a thread that never sleeps: what a router that only copies reaches on the host. Each
//! round also runs the asynchronous pings alone through each router and takes the router
//! process's CPU time per forwarded call, a figure that suffers less from a busy machine than
//! rates do. The tables give the medians over the rounds and the ratios floe-router /
//! glacier2router, per pair.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::report::{figure_cell as cell, ratio_cell as ratio};
use crate::stats::{middle as median, round_to};
use crate::charts::{Group, Spread};
use crate::suite::{Context, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// How a client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoutePath {
    Direct,
    Floe,
    Glacier2,
    /// The copy relay (`src/relay.rs`): the client calls the server through it as if directly.
    Relay,
}

impl RoutePath {
    /// The path's name in tables and records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RoutePath::Direct => "direct",
            RoutePath::Floe => "floe-router",
            RoutePath::Glacier2 => "glacier2router",
            RoutePath::Relay => "copy relay",
        }
    }
}

/// The order each round runs the paths in.
const PATHS: [RoutePath; 4] = [RoutePath::Direct, RoutePath::Floe, RoutePath::Glacier2, RoutePath::Relay];

/// The rate figures of the client (name, unit).
const RATES: [(&str, &str); 5] =
    [("twoway", "calls/s"), ("ami", "calls/s"), ("oneway", "msg/s"), ("bytes", "calls/s"), ("callback", "calls/s")];

/// The figures with latencies (sequential calls).
const LATENCIES: [(&str, &str); 3] =
    [("twoway", "twoway ping"), ("bytes", "500 kB sendByteSeq"), ("callback", "callback (callEcho)")];

/// Whose client calls whose server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pair {
    /// Ice C++ client → Ice C++ server.
    Ice,
    /// floe client → floe server.
    Floe,
}

impl Pair {
    fn title(self) -> &'static str {
        match self {
            Pair::Ice => "Ice C++ client → Ice C++ server",
            Pair::Floe => "floe client → floe server",
        }
    }

    /// The prefix of the pair's JSON test names.
    fn json_test(self) -> &'static str {
        match self {
            Pair::Ice => "router",
            Pair::Floe => "router-floe",
        }
    }
}

/// The pairs, in the order each round runs them.
const PAIRS: [Pair; 2] = [Pair::Ice, Pair::Floe];

/// One figure of one pair and path over the rounds (latency figures hold the added latency for
/// the routers, computed per round).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) pair: Pair,
    pub(crate) path: RoutePath,
    pub(crate) name: String,
    pub(crate) values: Vec<f64>,
}

/// floe-router, built beside this binary (`cargo build --release -p floe-router`, which
/// `scripts/bench` does).
pub(crate) fn floe_router_binary() -> Result<PathBuf, String> {
    crate::proc::beside_exe("floe-router", "cargo build --release -p floe-router")
}

/// A process killed when dropped.
pub(crate) struct Process {
    /// The process.
    pub(crate) child: Child,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and waits for a stdout line containing `ready`.
pub(crate) fn start(mut cmd: Command, what: &str) -> Result<Process, String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| format!("cannot start {what}: {e}"))?;
    let mut p = Process { child };
    let line = crate::proc::first_line(&mut p.child, crate::proc::READY_LIMIT).map_err(|e| format!("{what}: {e}"))?;
    if !line.contains("ready") {
        return Err(format!("{what} did not start: {line:?}"));
    }
    Ok(p)
}

/// The router's arguments (glacier2router's property names, which floe-router reads too).
fn router_args(port: u16) -> Vec<String> {
    vec![
        format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--Glacier2.Server.Endpoints=tcp -h 127.0.0.1".into(),
        "--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".into(),
        "--Ice.MessageSizeMax=100000".into(),
    ]
}

pub(crate) fn start_router(path: RoutePath, floe_router: &Path) -> Result<(Process, u16), String> {
    let port = crate::proc::free_port();
    let mut cmd = match path {
        RoutePath::Floe => {
            let mut c = Command::new(floe_router);
            // `--floe-property` settings apply to floe-router too.
            crate::floe_system::forward_as_program_properties(&mut c);
            c
        }
        RoutePath::Glacier2 => {
            let mut c = Command::new("glacier2router");
            // glacier2router prints "Glacier2.Client ready" once its client adapter is active.
            c.arg("--Ice.PrintAdapterReady=1");
            crate::proc::ice_malloc_env(&mut c);
            c
        }
        RoutePath::Direct | RoutePath::Relay => return Err("no router".into()),
    };
    cmd.args(router_args(port));
    let p = start(cmd, path.name())?;
    // glacier2router's first ready line may be its server adapter's: wait for the client
    // endpoint to accept connections.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(format!("{} does not accept connections on port {port}", path.name()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((p, port))
}

/// The command of `pair`'s client: the Ice C++ one at `ice_exe`, or this binary's
/// `--router-client`.
pub(crate) fn client_command(
    pair: Pair,
    ice_exe: &Path,
    server_port: u16,
    router_port: Option<u16>,
    ms: u64,
    only: Option<&str>,
) -> Result<Command, String> {
    let proxy = format!("tester:tcp -h 127.0.0.1 -p {server_port}");
    let router = router_port.map(|port| format!("Glacier2/router:tcp -h 127.0.0.1 -p {port}"));
    Ok(match pair {
        Pair::Ice => {
            let mut cmd = Command::new(ice_exe);
            crate::proc::ice_malloc_env(&mut cmd);
            cmd.arg(proxy).arg(ms.to_string());
            if let Some(test) = only {
                cmd.arg(format!("--only={test}"));
            }
            if let Some(r) = router {
                cmd.arg(format!("--Ice.Default.Router={r}"));
            }
            cmd
        }
        Pair::Floe => {
            let mut cmd = Command::new(crate::proc::helper_exe()?);
            cmd.args(["--router-client", &proxy, "--duration-ms", &ms.to_string()]);
            if let Some(test) = only {
                cmd.args(["--tests", test]);
            }
            if let Some(r) = router {
                cmd.args(["--router", &r]);
            }
            crate::floe_system::forward_properties(&mut cmd);
            cmd
        }
    })
}

/// Runs a client once; returns its RESULT values by name.
pub(crate) fn client(mut cmd: Command, ms: u64) -> Result<Vec<(String, f64)>, String> {
    let mut child =
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("router client: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let out = std::thread::spawn(move || {
        let mut t = String::new();
        let _ = stdout.read_to_string(&mut t);
        t
    });
    let err = std::thread::spawn(move || {
        let mut t = String::new();
        let _ = stderr.read_to_string(&mut t);
        t
    });
    // Five tests of `ms` each, warm-ups, and up to 10 s for oneways to arrive.
    let limit = Duration::from_millis(ms * 5) + Duration::from_secs(90);
    let started = Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the client did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = out.join().unwrap_or_default();
    let errors = err.join().unwrap_or_default();
    let mut values = Vec::new();
    let mut failures = Vec::new();
    for l in text.lines().filter_map(|l| l.strip_prefix("RESULT ")) {
        let mut it = l.splitn(3, ' ');
        let (Some(name), Some(value)) = (it.next(), it.next()) else { continue };
        match value.parse::<f64>() {
            Ok(v) => values.push((name.to_string(), v)),
            Err(_) => failures.push(format!("{name}: {}", it.next().unwrap_or(value))),
        }
    }
    if !failures.is_empty() || values.is_empty() {
        return Err(format!("{} {}", failures.join("; "), errors.trim()));
    }
    Ok(values)
}

/// A server of the stage: `ice-tester-server` for the Ice pair, `floe-interop-server` for
/// floe's.
fn start_server(pair: Pair, tester: &Path) -> Result<(Process, u16), String> {
    let port = crate::proc::free_port();
    let cmd = match pair {
        Pair::Ice => {
            let mut c = Command::new(tester.join("ice-tester-server"));
            crate::proc::ice_malloc_env(&mut c);
            c.arg(port.to_string());
            c
        }
        Pair::Floe => {
            let mut c = Command::new(crate::cross::floe_server_binary()?);
            c.args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}")]);
            c
        }
    };
    let what = match pair {
        Pair::Ice => "ice-tester-server",
        Pair::Floe => "floe-interop-server",
    };
    Ok((start(cmd, what)?, port))
}

/// Starts the copy relay (`floe-bench --relay`) in front of the server on `target`.
fn start_relay(target: u16) -> Result<(Process, u16), String> {
    let port = crate::proc::free_port();
    let mut cmd = Command::new(crate::proc::helper_exe()?);
    cmd.args(["--relay", &target.to_string(), "--port", &port.to_string()]);
    Ok((start(cmd, "copy relay")?, port))
}

/// The stage: `runs` rounds of direct, floe-router, glacier2router and the copy relay, for
/// each pair. Returns
/// the series (rates as measured; `<test>_p50` / `<test>_p99` of the routers as added latency)
/// and notes.
pub(crate) fn run(quick: bool, runs: usize) -> (Vec<Series>, Vec<String>) {
    let mut notes = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let setup = (|| {
        let tester = crate::cross::build_tester_peer()?;
        let client = crate::proc::build_cpp_peer("ice-router", "Ice C++ router client")?.join("ice-router-client");
        let floe_router = floe_router_binary()?;
        if Command::new("glacier2router").arg("--version").output().is_err() {
            return Err("glacier2router is not installed (Debian: zeroc-glacier2)".to_string());
        }
        Ok((tester, client, floe_router))
    })();
    let (tester, client_exe, floe_router) = match setup {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("router test skipped: {e}"));
            return (series, notes);
        }
    };
    let mut servers = Vec::new();
    for pair in PAIRS {
        match start_server(pair, &tester) {
            Ok(s) => servers.push((pair, s)),
            Err(e) => notes.push(format!("router test, {}: skipped: {e}", pair.title())),
        }
    }
    let mut routers = Vec::new();
    for path in [RoutePath::Floe, RoutePath::Glacier2] {
        match start_router(path, &floe_router) {
            Ok(r) => routers.push((path, r)),
            Err(e) => notes.push(e),
        }
    }
    let mut relays = Vec::new();
    for (pair, (_, server_port)) in &servers {
        match start_relay(*server_port) {
            Ok(r) => relays.push((*pair, r)),
            Err(e) => notes.push(format!("router test, {}: no copy relay: {e}", pair.title())),
        }
    }
    let ms = if quick { 300 } else { 700 };
    let started = Instant::now();
    let mut push = |pair: Pair, path: RoutePath, name: &str, v: f64| match series
        .iter_mut()
        .find(|s| s.pair == pair && s.path == path && s.name == name)
    {
        Some(s) => s.values.push(v),
        None => series.push(Series { pair, path, name: name.to_string(), values: vec![v] }),
    };
    for round in 0..runs {
        for (pair, (_, server_port)) in &servers {
            let (pair, server_port) = (*pair, *server_port);
            let mut direct: Option<Vec<(String, f64)>> = None;
            for path in PATHS {
                let (target_port, router_port, router_pid) = match path {
                    RoutePath::Direct => (server_port, None, None),
                    // The relay is called as the server; its CPU time is a spinning thread's.
                    RoutePath::Relay => match relays.iter().find(|(p, _)| *p == pair) {
                        Some((_, (_, port))) => (*port, None, None),
                        None => continue,
                    },
                    p => match routers.iter().find(|(rp, _)| *rp == p) {
                        Some((_, (process, port))) => (server_port, Some(*port), Some(process.child.id())),
                        None => continue,
                    },
                };
                let command = |only| client_command(pair, &client_exe, target_port, router_port, ms, only);
                // The router's CPU time per forwarded call, over asynchronous pings alone.
                if let Some(pid) = router_pid {
                    let (cpu0, _) = crate::proc::proc_stats(pid);
                    if let Ok(values) = command(Some("ami")).and_then(|c| client(c, ms)) {
                        let (cpu1, _) = crate::proc::proc_stats(pid);
                        if let Some((_, rate)) = values.iter().find(|(n, _)| n == "ami") {
                            let calls = rate * ms as f64 / 1000.0;
                            if calls > 0.0 {
                                push(pair, path, "cpu_per_call", (cpu1 - cpu0) * 1e6 / calls);
                            }
                        }
                    }
                }
                match command(None).and_then(|c| client(c, ms)) {
                    Ok(values) => {
                        for (name, v) in &values {
                            if name.ends_with("_p50") || name.ends_with("_p99") {
                                if path == RoutePath::Direct {
                                    push(pair, path, name, *v);
                                } else if let Some(d) =
                                    direct.as_ref().and_then(|d| d.iter().find(|(n, _)| n == name)).map(|(_, d)| *d)
                                {
                                    push(pair, path, name, v - d);
                                }
                            } else {
                                push(pair, path, name, *v);
                            }
                        }
                        eprintln!(
                            "[{:>4.0}s] round {} router, {}, {:<14} twoway {:.0} calls/s",
                            started.elapsed().as_secs_f64(),
                            round + 1,
                            pair.title(),
                            path.name(),
                            values.iter().find(|(n, _)| n == "twoway").map_or(0.0, |(_, v)| *v)
                        );
                        if path == RoutePath::Direct {
                            direct = Some(values);
                        }
                    }
                    Err(e) => notes.push(format!("{}, {} round {}: {e}", pair.title(), path.name(), round + 1)),
                }
            }
        }
    }
    (series, notes)
}

fn median_of(series: &[Series], pair: Pair, path: RoutePath, name: &str) -> Option<f64> {
    series.iter().find(|s| s.pair == pair && s.path == path && s.name == name).and_then(|s| median(&s.values))
}

fn values_of<'a>(series: &'a [Series], pair: Pair, path: RoutePath, name: &str) -> &'a [f64] {
    series.iter().find(|s| s.pair == pair && s.path == path && s.name == name).map_or(&[], |s| &s.values)
}

/// floe-router's ratios to glacier2router per pair: each rate, and the added p50 latency of
/// the twoway pings turned over (less is better).
fn ratios(series: &[Series]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for pair in PAIRS {
        let who = if pair == Pair::Ice { "Ice pair" } else { "floe pair" };
        let v = |path, name: &str| values_of(series, pair, path, name);
        for (name, _) in RATES {
            let test = format!("{who}, {name}");
            out.extend(of_runs(&test, "glacier2router", v(RoutePath::Floe, name), v(RoutePath::Glacier2, name)));
        }
        let (f, g) = (v(RoutePath::Floe, "twoway_p50"), v(RoutePath::Glacier2, "twoway_p50"));
        out.extend(of_runs(&format!("{who}, added p50 latency"), "glacier2router", f, g).and_then(Ratio::inverted));
    }
    out
}

/// The stage's charts, per pair: each path's rates, and each router's added latency.
fn charts(series: &[Series]) -> String {
    let mut s = String::new();
    for pair in PAIRS {
        if !series.iter().any(|x| x.pair == pair) {
            continue;
        }
        let rates: Vec<String> = RATES.iter().map(|(n, u)| format!("{n} ({u})")).collect();
        let groups: Vec<Group> = PATHS
            .iter()
            .map(|p| Group {
                name: p.name().to_string(),
                values: RATES.iter().map(|(n, _)| Spread::of(values_of(series, pair, *p, n))).collect(),
            })
            .collect();
        let title = format!("Router, {}: rates by path (median, min–max of the rounds)", pair.title());
        s.push_str(&crate::charts::bars(&title, "rate", &rates, &groups));
        let figures: Vec<(String, String)> = LATENCIES
            .iter()
            .flat_map(|(n, what)| ["p50", "p99"].map(|q| (format!("{n}_{q}"), format!("{what} {q}"))))
            .collect();
        let labels: Vec<String> = figures.iter().map(|(_, l)| l.clone()).collect();
        let groups: Vec<Group> = [RoutePath::Floe, RoutePath::Glacier2, RoutePath::Relay]
            .iter()
            .map(|p| Group {
                name: p.name().to_string(),
                values: figures.iter().map(|(n, _)| Spread::of(values_of(series, pair, *p, n))).collect(),
            })
            .collect();
        let title = format!("Router, {}: added latency over the direct path", pair.title());
        s.push_str(&crate::charts::bars(&title, "µs added", &labels, &groups));
    }
    s
}

/// The Markdown tables, per pair: rates per path with floe-router / glacier2router, then the
/// added latencies with the same ratio.
pub(crate) fn table(series: &[Series], quick: bool, runs: usize, notes: &[String]) -> String {
    let mut s = String::new();
    for pair in PAIRS {
        let of_pair: Vec<&Series> = series.iter().filter(|x| x.pair == pair).collect();
        if of_pair.is_empty() {
            continue;
        }
        let rounds = of_pair.iter().map(|s| s.values.len()).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "router: {}, direct and through each router ({} ms per test), medians of {rounds} of {runs} round(s)\n",
            pair.title(),
            if quick { 300 } else { 700 }
        );
        // The cap: what a router that cost nothing would reach against glacier2router, i.e.
        // the direct rate over glacier2router's. Where it is below a target ratio, the
        // client's and server's own time make the target unreachable for any router. The copy
        // relay's ratio is what a router that only copies, spinning on a CPU of its own,
        // reaches.
        s.push_str("| test | unit | direct | floe-router | glacier2router | copy relay | floe-router / glacier2router | cap (direct / glacier2router) | copy relay / glacier2router |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        for (name, unit) in RATES {
            let d = median_of(series, pair, RoutePath::Direct, name);
            let f = median_of(series, pair, RoutePath::Floe, name);
            let g = median_of(series, pair, RoutePath::Glacier2, name);
            let r = median_of(series, pair, RoutePath::Relay, name);
            let _ = writeln!(
                s,
                "| {name} | {unit} | {} | {} | {} | {} | {} | {} | {} |",
                cell(d),
                cell(f),
                cell(g),
                cell(r),
                ratio(f, g),
                ratio(d, g),
                ratio(r, g)
            );
        }
        let f = median_of(series, pair, RoutePath::Floe, "cpu_per_call");
        let g = median_of(series, pair, RoutePath::Glacier2, "cpu_per_call");
        let _ = writeln!(
            s,
            "| router CPU per forwarded call (ami, user + system) | µs | – | {} | {} | – | {} | – | – |",
            cell(f),
            cell(g),
            ratio(f, g)
        );
        s.push_str("\n| added latency | direct p50 / p99 (µs) | floe-router p50 / p99 (µs) | glacier2router p50 / p99 (µs) | copy relay p50 / p99 (µs) | floe-router / glacier2router p50 / p99 |\n");
        s.push_str("|---|---|---|---|---|---|\n");
        for (name, what) in LATENCIES {
            let get = |p, q: &str| median_of(series, pair, p, &format!("{name}_{q}"));
            let _ = writeln!(
                s,
                "| {what} | {} / {} | +{} / +{} | +{} / +{} | +{} / +{} | {} / {} |",
                cell(get(RoutePath::Direct, "p50")),
                cell(get(RoutePath::Direct, "p99")),
                cell(get(RoutePath::Floe, "p50")),
                cell(get(RoutePath::Floe, "p99")),
                cell(get(RoutePath::Glacier2, "p50")),
                cell(get(RoutePath::Glacier2, "p99")),
                cell(get(RoutePath::Relay, "p50")),
                cell(get(RoutePath::Relay, "p99")),
                ratio(get(RoutePath::Floe, "p50"), get(RoutePath::Glacier2, "p50")),
                ratio(get(RoutePath::Floe, "p99"), get(RoutePath::Glacier2, "p99")),
            );
        }
        s.push('\n');
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The JSON record of one path and figure.
#[derive(Debug, Serialize)]
struct Record {
    system: &'static str,
    test: String,
    metric: &'static str,
    unit: &'static str,
    median: f64,
    runs: usize,
}

/// JSON records, one per path and figure, for the report's array.
pub(crate) fn json_records(series: &[Series]) -> Vec<serde_json::Value> {
    series
        .iter()
        .filter_map(|s| {
            let m = median(&s.values)?;
            let latency = s.name.ends_with("_p50") || s.name.ends_with("_p99");
            let unit = if latency {
                if s.path == RoutePath::Direct {
                    "us"
                } else {
                    "us added"
                }
            } else if s.name == "cpu_per_call" {
                "us"
            } else {
                RATES.iter().find(|(n, _)| *n == s.name).map_or("", |(_, u)| *u)
            };
            Some(crate::json::record(&Record {
                system: s.path.name(),
                test: format!("{}/{}", s.pair.json_test(), s.name),
                metric: "router",
                unit,
                median: round_to(m, 3),
                runs: s.values.len(),
            }))
        })
        .collect()
}

/// The router test, with the Ice peer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Router;

impl Suite for Router {
    type Results = (Vec<Series>, Vec<String>);

    fn name(&self) -> &'static str {
        "router"
    }

    fn title(&self) -> &'static str {
        "Router"
    }

    fn selected(&self, ctx: &Context) -> bool {
        ctx.args.peer("ice") && ctx.args.runs_suite(self.name())
    }

    fn systems(&self, _ctx: &Context) -> Vec<String> {
        PATHS.iter().map(|p| p.name().to_string()).collect()
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        run(ctx.args.quick, ctx.stage_rounds())
    }

    fn table(&self, ctx: &Context, (series, notes): &Self::Results) -> String {
        table(series, ctx.args.quick, ctx.stage_rounds(), notes)
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        crate::suite::charts_section(self.title(), &charts(&r.0), &self.table(ctx, r))
    }

    fn summary(&self, _ctx: &Context, (series, _): &Self::Results) -> Option<StageSummary> {
        StageSummary::new("router", "figures", ratios(series))
    }

    fn records(&self, (series, _): &Self::Results) -> Vec<serde_json::Value> {
        json_records(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_rates_added_latencies_and_ratios() {
        let mk = |path, name: &str, values: Vec<f64>| Series { pair: Pair::Ice, path, name: name.into(), values };
        let series = vec![
            mk(RoutePath::Direct, "twoway", vec![40_000.0]),
            mk(RoutePath::Floe, "twoway", vec![30_000.0, 20_000.0, 26_000.0]),
            mk(RoutePath::Glacier2, "twoway", vec![13_000.0]),
            mk(RoutePath::Direct, "twoway_p50", vec![15.0]),
            mk(RoutePath::Floe, "twoway_p50", vec![10.0]),
            mk(RoutePath::Glacier2, "twoway_p50", vec![25.0]),
            mk(RoutePath::Relay, "twoway", vec![32_500.0]),
            mk(RoutePath::Relay, "twoway_p50", vec![5.0]),
        ];
        let t = table(&series, true, 3, &[]);
        assert!(t.contains("| twoway | calls/s | 40.0k | 26.0k | 13.0k | 32.5k | 2.00 | 3.08 | 2.50 |"), "{t}");
        assert!(t.contains("| twoway ping | 15.0 / – | +10.0 / +– | +25.0 / +– | +5.0 / +– | 0.40 / – |"), "{t}");
        assert_eq!(json_records(&series).len(), 8);
    }
}
