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

use crate::report::{figure_cell as cell, median_of_values as median, ratio_cell as ratio};

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
    fn name(self) -> &'static str {
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
fn floe_router_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name("floe-router");
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} is not built (cargo build --release -p floe-router)", path.display()))
    }
}

/// A process killed when dropped.
struct Process {
    child: Child,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and waits for a stdout line containing `ready`.
fn start(mut cmd: Command, what: &str) -> Result<Process, String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| format!("cannot start {what}: {e}"))?;
    let mut p = Process { child };
    let line = crate::first_line(&mut p.child, crate::READY_LIMIT).map_err(|e| format!("{what}: {e}"))?;
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

fn start_router(path: RoutePath, floe_router: &Path) -> Result<(Process, u16), String> {
    let port = crate::free_port();
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
            crate::ice_malloc_env(&mut c);
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
fn client_command(
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
            crate::ice_malloc_env(&mut cmd);
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
            let mut cmd = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
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
fn client(mut cmd: Command, ms: u64) -> Result<Vec<(String, f64)>, String> {
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
    let port = crate::free_port();
    let cmd = match pair {
        Pair::Ice => {
            let mut c = Command::new(tester.join("ice-tester-server"));
            crate::ice_malloc_env(&mut c);
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
    let port = crate::free_port();
    let mut cmd = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
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
        let client = crate::build_cpp_peer("ice-router", "Ice C++ router client")?.join("ice-router-client");
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
                    let (cpu0, _) = crate::proc_stats(pid);
                    if let Ok(values) = command(Some("ami")).and_then(|c| client(c, ms)) {
                        let (cpu1, _) = crate::proc_stats(pid);
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

/// JSON records, one per path and figure, for the report's array.
pub(crate) fn json_records(series: &[Series]) -> Vec<String> {
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
            Some(format!(
                "{{\"system\": \"{}\", \"test\": \"{}/{}\", \"metric\": \"router\", \"unit\": \"{unit}\", \"median\": {m:.3}, \"runs\": {}}}",
                s.path.name(),
                s.pair.json_test(),
                s.name,
                s.values.len()
            ))
        })
        .collect()
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

/// What the `router-sessions` test measured for one router.
#[derive(Debug, Clone)]
pub(crate) struct SessionsOutcome {
    /// The router's name.
    pub(crate) router: &'static str,
    /// Sessions asked for (after lowering to the router's file limit).
    pub(crate) n: usize,
    /// Sessions created (`createSession` answered with success).
    pub(crate) created: usize,
    /// Seconds from the first connect to the last session created.
    pub(crate) create_s: f64,
    /// The router's RSS before and with the sessions, in kB.
    pub(crate) rss_kb: (u64, u64),
    /// The Ice C++ client's twoway ping (calls/s, p50 µs) and callback (calls/s) through the
    /// router, before the sessions were created and while they are held.
    pub(crate) probe_before: Option<(f64, f64, f64)>,
    /// The same, while the sessions are held.
    pub(crate) probe_during: Option<(f64, f64, f64)>,
    /// Connects or sessions that failed.
    pub(crate) errors: usize,
    /// The first of those errors.
    pub(crate) first_error: Option<String>,
}

impl SessionsOutcome {
    fn per_session_bytes(&self) -> f64 {
        if self.created == 0 {
            return 0.0;
        }
        (self.rss_kb.1.saturating_sub(self.rss_kb.0) * 1024) as f64 / self.created as f64
    }
}

/// The `createSession("u<i>", "x")` request of the router on identity `Glacier2/router`.
fn create_session_request(i: usize) -> Vec<u8> {
    use floe::encoding::{EncodingVersion, Identity};
    use floe::protocol::request::encode_request;
    use floe::protocol::{OperationMode, RequestPrefix};
    let prefix =
        RequestPrefix::new(&Identity::with_category("Glacier2", "router"), "", "createSession", OperationMode::Normal);
    encode_request(1, &prefix, &Default::default(), EncodingVersion::V1_1, |e| {
        e.write_str(&format!("u{i}"));
        e.write_str("x");
    })
    .to_vec()
}

/// Opens one connection from `source`, reads the router's ValidateConnection and creates a
/// session; returns the connection, to be held.
async fn open_session(port: u16, source: std::net::Ipv4Addr, i: usize) -> Result<tokio::net::TcpStream, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
    socket.bind((source, 0).into()).map_err(|e| format!("bind {source}: {e}"))?;
    let mut s = socket.connect(([127, 0, 0, 1], port).into()).await.map_err(|e| format!("connect: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut header = [0u8; 14];
    s.read_exact(&mut header).await.map_err(|e| format!("validate: {e}"))?;
    s.write_all(&create_session_request(i)).await.map_err(|e| format!("createSession: {e}"))?;
    s.read_exact(&mut header).await.map_err(|e| format!("createSession reply: {e}"))?;
    let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]);
    if header[8] != 2 || !(19..=1 << 20).contains(&size) {
        return Err(format!("createSession: unexpected message {header:?}"));
    }
    let mut body = vec![0u8; size as usize - 14];
    s.read_exact(&mut body).await.map_err(|e| format!("createSession reply: {e}"))?;
    if body[4] != 0 {
        return Err(format!("createSession failed: reply status {}", body[4]));
    }
    Ok(s)
}

/// Twoway calls/s, twoway p50 (µs) and callbacks/s of the Ice C++ client through the router.
fn probe(client_exe: &Path, server_port: u16, router_port: u16) -> Option<(f64, f64, f64)> {
    let command = client_command(Pair::Ice, client_exe, server_port, Some(router_port), 300, None).ok()?;
    let values = client(command, 300).ok()?;
    let get = |n: &str| values.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    Some((get("twoway")?, get("twoway_p50")?, get("callback")?))
}

/// The `router-sessions` test: `n` sessions on one router (floe-router, then glacier2router),
/// opened 500 at a time from source addresses 127.<k>.0.x, each with its own connection and
/// `createSession`, then held while the Ice C++ client measures calls through the router.
pub(crate) fn run_sessions(n: usize, quick: bool) -> (Vec<SessionsOutcome>, Vec<String>) {
    let mut notes = Vec::new();
    let mut outcomes = Vec::new();
    let setup = (|| {
        let tester = crate::cross::build_tester_peer()?;
        let client = crate::build_cpp_peer("ice-router", "Ice C++ router client")?.join("ice-router-client");
        Ok::<_, String>((tester, client, floe_router_binary()?))
    })();
    let (tester, client_exe, floe_router) = match setup {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("router-sessions skipped: {e}"));
            return (outcomes, notes);
        }
    };
    let server_port = crate::free_port();
    let mut server_cmd = Command::new(tester.join("ice-tester-server"));
    server_cmd.arg(server_port.to_string());
    let _server = match start(server_cmd, "ice-tester-server") {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("router-sessions skipped: {e}"));
            return (outcomes, notes);
        }
    };
    let mut routers = vec![RoutePath::Floe];
    if !quick {
        routers.push(RoutePath::Glacier2);
    }
    for (k, path) in routers.into_iter().enumerate() {
        let (router, port) = match start_router(path, &floe_router) {
            Ok(r) => r,
            Err(e) => {
                notes.push(e);
                continue;
            }
        };
        let pid = router.child.id();
        let mut n = n;
        if let Some(limit) = crate::connections::fd_limit_of(pid) {
            let room = limit.saturating_sub(100) as usize;
            if n > room {
                notes.push(format!("{}: {n} sessions asked, its file limit allows {room}", path.name()));
                n = room;
            }
        }
        let probe_before = probe(&client_exe, server_port, port);
        std::thread::sleep(Duration::from_millis(300));
        let rss_before = crate::connections::rss_kb(pid);
        let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                notes.push(e.to_string());
                continue;
            }
        };
        let second_octet = 100 + 10 * k as u8;
        let started = Instant::now();
        let (held, errors, first_error) = runtime.block_on(async {
            let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(500));
            let mut tasks = Vec::with_capacity(n);
            for i in 0..n {
                // 5,000 connections per source address at most.
                let source = std::net::Ipv4Addr::new(127, second_octet, 0, 10 + (i / 5_000) as u8);
                let gate = gate.clone();
                tasks.push(tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await;
                    tokio::time::timeout(Duration::from_secs(30), open_session(port, source, i))
                        .await
                        .unwrap_or_else(|_| Err("no session within 30 s".into()))
                }));
            }
            let mut held = Vec::with_capacity(n);
            let mut errors = 0;
            let mut first_error = None;
            for t in tasks {
                match t.await {
                    Ok(Ok(s)) => held.push(s),
                    Ok(Err(e)) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e.to_string());
                    }
                }
            }
            (held, errors, first_error)
        });
        let create_s = started.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(500));
        let rss_after = crate::connections::rss_kb(pid);
        let probe_during = probe(&client_exe, server_port, port);
        let outcome = SessionsOutcome {
            router: path.name(),
            n,
            created: held.len(),
            create_s,
            rss_kb: (rss_before, rss_after),
            probe_before,
            probe_during,
            errors,
            first_error,
        };
        eprintln!(
            "router-sessions {}: {}/{} sessions in {:.2} s, RSS {} → {} kB ({:.0} B/session), {} errors",
            outcome.router,
            outcome.created,
            outcome.n,
            outcome.create_s,
            rss_before,
            rss_after,
            outcome.per_session_bytes(),
            errors
        );
        outcomes.push(outcome);
        runtime.block_on(async { drop(held) });
        drop(runtime);
        drop(router);
    }
    (outcomes, notes)
}

/// The Markdown table of the `router-sessions` test.
pub(crate) fn sessions_table(outcomes: &[SessionsOutcome], notes: &[String]) -> String {
    let mut s = String::new();
    let n = outcomes.iter().map(|o| o.n).max().unwrap_or(0);
    let _ = writeln!(
        s,
        "router sessions: {n} sessions (one connection and createSession each, 500 at a time), held while the Ice C++ client calls through the router\n"
    );
    s.push_str("| router | sessions | created in (s) | sessions/s | RSS before → with (MB) | RSS per session (bytes) | twoway calls/s, p50 µs before | with the sessions | callbacks/s before | with the sessions | errors |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    let probe = |p: Option<(f64, f64, f64)>| match p {
        Some((c, l, _)) => format!("{}, {}", cell(Some(c)), cell(Some(l))),
        None => "–".into(),
    };
    for o in outcomes {
        let _ = writeln!(
            s,
            "| {} | {} / {} | {:.2} | {:.0} | {:.1} → {:.1} | {:.0} | {} | {} | {} | {} | {} |",
            o.router,
            o.created,
            o.n,
            o.create_s,
            o.created as f64 / o.create_s.max(1e-9),
            o.rss_kb.0 as f64 / 1024.0,
            o.rss_kb.1 as f64 / 1024.0,
            o.per_session_bytes(),
            probe(o.probe_before),
            probe(o.probe_during),
            cell(o.probe_before.map(|p| p.2)),
            cell(o.probe_during.map(|p| p.2)),
            o.errors
        );
        if let Some(e) = &o.first_error {
            let _ = writeln!(s, "note: {}: first error: {e}", o.router);
        }
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// JSON records of the `router-sessions` test.
pub(crate) fn sessions_json(outcomes: &[SessionsOutcome]) -> Vec<String> {
    outcomes
        .iter()
        .map(|o| {
            format!(
                "{{\"system\": \"{}\", \"test\": \"router-sessions\", \"metric\": \"router-sessions\", \"sessions\": {}, \"created\": {}, \"create_s\": {:.3}, \"rss_per_session_bytes\": {:.0}, \"errors\": {}}}",
                o.router,
                o.n,
                o.created,
                o.create_s,
                o.per_session_bytes(),
                o.errors
            )
        })
        .collect()
}
