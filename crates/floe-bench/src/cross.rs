//! Each side alone: the seed tests of `--against` (see `against.rs`) between every client and
//! server of floe and ZeroC Ice C++, so that floe's server is measured under Ice's client and
//! floe's client against Ice's server, beside the same-system pairs. An Ice shop adopts floe
//! one program at a time, so each side has to be fast on its own.
//!
//! - floe's server is `floe-interop-server` on its defaults;
//! - Ice's is `ice-tester-server` (`peers/ice-tester`), a typed C++11 servant of the same
//!   Slice file, built against Ice 3.7 and, as a second Ice peer, against Ice 3.8
//!   (`scripts/build-ice38`);
//! - floe's client is this binary with `--against`;
//! - Ice's is `ice-tester-client`.
//!
//! - the caps: a raw-socket server and client that replay pre-encoded messages and do no
//!   other work (`raw_tester.rs`), under Ice's client and against Ice's server, show how fast
//!   each test can go when only the Ice peer works.
//!
//! Every client runs as a process of its own (`--stepped`) against servers that stay up for
//! the whole stage: each warms up once, alone, and then runs the test it is told, so that the
//! pairs take turns test by test (round 1 twoway for each pair, then oneway, …, then round 2,
//! which takes the pairs in the reverse order).
//! The figures compared in a ratio are thus taken seconds apart rather than a whole client run
//! apart, and a slow phase of the host weighs on both sides of the ratio alike.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::against::TESTS;
use crate::report::ratio_cell as ratio;
use crate::stats::round_to;
use crate::charts::{Group, Spread};
use crate::suite::{Context, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Floe,
    /// ZeroC Ice 3.7's C++ peer.
    Ice,
    /// ZeroC Ice 3.8's C++ peer (the same sources built against Ice 3.8).
    Ice38,
    /// The raw replay side of the caps.
    Raw,
}

impl Side {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Floe => "floe",
            Side::Ice => "ice-cpp",
            Side::Ice38 => "ice-cpp-3.8",
            Side::Raw => "raw",
        }
    }
}

/// The pairs, in the order each round runs them: (client, server).
const PAIRS: [(Side, Side); 6] = [
    (Side::Ice, Side::Floe),
    (Side::Ice, Side::Ice),
    (Side::Ice, Side::Raw),
    (Side::Floe, Side::Ice),
    (Side::Raw, Side::Ice),
    (Side::Floe, Side::Floe),
];

/// The pairs with Ice 3.8's peer, after those, when it could be built.
const PAIRS_38: [(Side, Side); 3] = [(Side::Ice38, Side::Floe), (Side::Ice38, Side::Ice38), (Side::Floe, Side::Ice38)];

/// Where the Ice peers' binaries are: Ice 3.7's, and Ice 3.8's when it could be built.
#[derive(Debug, Clone)]
pub(crate) struct IcePeers {
    pub(crate) ice37: PathBuf,
    pub(crate) ice38: Option<PathBuf>,
}

impl IcePeers {
    /// The directory of `side`'s binaries (Ice's sides only).
    pub(crate) fn dir(&self, side: Side) -> Result<&Path, String> {
        match side {
            Side::Ice => Ok(&self.ice37),
            Side::Ice38 => self.ice38.as_deref().ok_or_else(|| "the Ice 3.8 peer is not built".to_string()),
            _ => Err(format!("{} is no Ice peer", side.name())),
        }
    }

    /// The pairs the stage runs with these peers.
    fn pairs(&self) -> Vec<(Side, Side)> {
        let mut pairs = PAIRS.to_vec();
        if self.ice38.is_some() {
            pairs.extend(PAIRS_38);
        }
        pairs
    }
}

/// The values of one test of one pair, over the rounds.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) client: Side,
    pub(crate) server: Side,
    pub(crate) test: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) values: Vec<f64>,
}

impl Series {
    fn median(&self) -> Option<f64> {
        crate::stats::middle(&self.values)
    }
}

/// Builds the Ice C++ Tester peer (`peers/ice-tester`) into target/floe-bench/ice-tester.
pub(crate) fn build_tester_peer() -> Result<PathBuf, String> {
    crate::proc::build_cpp_peer("ice-tester", "Ice C++ Tester peer")
}

/// floe's interop server, built beside this binary (`cargo build --release -p floe-interop`,
/// which `scripts/bench` does).
pub(crate) fn floe_server_binary() -> Result<PathBuf, String> {
    crate::proc::beside_exe("floe-interop-server", "cargo build --release -p floe-interop")
}

/// A server that is killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(side: Side, floe_server: &Path, peers: &IcePeers) -> Result<Server, String> {
    let port = crate::proc::free_port();
    let mut cmd = match side {
        Side::Floe => {
            let mut c = Command::new(floe_server);
            c.args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}")]);
            // `--floe-property` settings, as the server's own command-line properties.
            crate::floe_system::forward_as_program_properties(&mut c);
            c
        }
        Side::Ice | Side::Ice38 => {
            let mut c = Command::new(peers.dir(side)?.join("ice-tester-server"));
            crate::proc::ice_malloc_env(&mut c);
            c.arg(port.to_string());
            c
        }
        Side::Raw => {
            let mut c = Command::new(crate::proc::helper_exe()?);
            c.args(["--serve", "raw-tester", "--port", &port.to_string()]);
            c
        }
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let child = cmd.spawn().map_err(|e| format!("cannot start the {} server: {e}", side.name()))?;
    // Killed when dropped, on the error paths too.
    let mut server = Server { child, port };
    let line = crate::proc::first_line(&mut server.child, crate::proc::READY_LIMIT)
        .map_err(|e| format!("the {} server: {e}", side.name()))?;
    if !line.contains("ready") {
        return Err(format!("the {} server did not start: {line:?}", side.name()));
    }
    Ok(server)
}

/// A client that runs the tests it is told, one at a time (`--stepped`); killed when dropped.
pub(crate) struct SteppedClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// The last lines it printed that were not the awaited one, for the notes on a failure.
    skipped: Vec<String>,
}

/// How many of a client's other lines a failure note quotes.
const QUOTED_LINES: usize = 3;

impl Drop for SteppedClient {
    fn drop(&mut self) {
        // The end of its input ends the client; one that does not end soon is killed.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why a stepped client gave no value.
pub(crate) enum StepError {
    /// The test failed; the client goes on.
    Test(String),
    /// The client is gone or stuck; it gets no more tests.
    Client(String),
}

impl SteppedClient {
    /// Starts a `side` client against `port` and waits for the end of its warm-up.
    pub(crate) fn start(side: Side, port: u16, quick: bool, peers: &IcePeers) -> Result<SteppedClient, String> {
        let proxy = format!("tester:tcp -h 127.0.0.1 -p {port}");
        let mut cmd = match side {
            Side::Floe => {
                let mut c = Command::new(crate::proc::helper_exe()?);
                c.args(["--against", &proxy]);
                crate::floe_system::forward_properties(&mut c);
                c
            }
            Side::Ice | Side::Ice38 => {
                let mut c = Command::new(peers.dir(side)?.join("ice-tester-client"));
                crate::proc::ice_malloc_env(&mut c);
                c.arg(&proxy);
                c
            }
            Side::Raw => {
                let mut c = Command::new(crate::proc::helper_exe()?);
                c.args(["--raw-against", &port.to_string()]);
                c
            }
        };
        cmd.arg("--stepped");
        if quick {
            cmd.arg("--quick");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the {} client: {e}", side.name()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            // Line by line until the end of its output (or a read error); bytes that are not
            // UTF-8 do not end the reading.
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                let text = String::from_utf8_lossy(&line).trim_end_matches(['\r', '\n']).to_string();
                line.clear();
                if tx.send(text).is_err() {
                    break;
                }
            }
        });
        // Killed when dropped, on the error paths too.
        let mut client = SteppedClient { child, stdin, lines, skipped: Vec::new() };
        let limit = Duration::from_secs(if quick { 120 } else { 600 });
        let deadline = Instant::now() + limit;
        loop {
            match client.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.trim() == "warm" => return Ok(client),
                Ok(line) => client.skip(line),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "the {} client did not warm up within {limit:?}{}",
                        side.name(),
                        client.last_words()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "the {} client's output ended during its warm-up{}",
                        side.name(),
                        client.last_words()
                    ));
                }
            }
        }
    }

    /// Keeps one of the lines that were not awaited.
    fn skip(&mut self, line: String) {
        if self.skipped.len() == QUOTED_LINES {
            self.skipped.remove(0);
        }
        self.skipped.push(line);
    }

    /// The client's exit status if it ended (waiting for it briefly) and its last other lines.
    fn last_words(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break format!("; it exited: {status}"),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => break "; it is still running".to_string(),
                Err(e) => break format!("; its status is unknown: {e}"),
            }
        };
        if self.skipped.is_empty() {
            status
        } else {
            format!("{status}; it last printed {:?}", self.skipped)
        }
    }

    /// Runs `test`; its value, or why there is none.
    pub(crate) fn run(&mut self, test: &str, limit: Duration) -> Result<f64, StepError> {
        self.ask(test)?;
        self.answer(test, limit)
    }

    /// Tells the client to run `test` (see [`answer`](Self::answer)), so that several clients
    /// can run it at once.
    pub(crate) fn ask(&mut self, test: &str) -> Result<(), StepError> {
        let stdin = self.stdin.as_mut().ok_or_else(|| StepError::Client("its input is closed".into()))?;
        writeln!(stdin, "{test}")
            .and_then(|()| stdin.flush())
            .map_err(|e| StepError::Client(format!("cannot tell it the test: {e}")))
    }

    /// The value of the `test` it was asked to run, or why there is none.
    pub(crate) fn answer(&mut self, test: &str, limit: Duration) -> Result<f64, StepError> {
        let deadline = Instant::now() + limit;
        loop {
            let line = match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(StepError::Client(format!("no result within {limit:?}{}", self.last_words())));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(StepError::Client(format!("its output ended{}", self.last_words())))
                }
            };
            let Some(result) = line.strip_prefix("RESULT ") else {
                self.skip(line);
                continue;
            };
            let mut it = result.splitn(3, ' ');
            if it.next() != Some(test) {
                self.skip(line);
                continue;
            }
            return match it.next() {
                Some("error") => Err(StepError::Test(it.next().unwrap_or("").to_string())),
                Some(v) => v.parse::<f64>().map_err(|e| StepError::Test(format!("{v:?}: {e}"))),
                None => Err(StepError::Test(format!("a RESULT line without a value: {line:?}"))),
            };
        }
    }
}

/// The stage: the pairs' clients (six, and three more with Ice 3.8), warmed up one after the
/// other, then `runs` rounds in which the pairs take turns at each test. Returns the series and
/// notes on what failed.
pub(crate) fn run(quick: bool, runs: usize, peers: &IcePeers) -> (Vec<Series>, Vec<String>) {
    let mut notes = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let pairs = peers.pairs();
    for &(client, server) in &pairs {
        for (test, unit) in TESTS {
            series.push(Series { client, server, test, unit, values: Vec::new() });
        }
    }
    let floe_server = match floe_server_binary() {
        Ok(p) => p,
        Err(e) => {
            notes.push(format!("cross pairs skipped: {e}"));
            return (Vec::new(), notes);
        }
    };
    let mut server_sides: Vec<Side> = Vec::new();
    for &(_, server) in &pairs {
        if !server_sides.contains(&server) {
            server_sides.push(server);
        }
    }
    let servers: Vec<(Side, Result<Server, String>)> =
        server_sides.iter().map(|&s| (s, start(s, &floe_server, peers))).collect();
    let started = Instant::now();
    let mut clients: Vec<Option<SteppedClient>> = Vec::new();
    for &(client_side, server_side) in &pairs {
        let server = &servers.iter().find(|(s, _)| *s == server_side).expect("a server per side").1;
        let client = match server {
            Err(e) => {
                let note = format!("{} server: {e}", server_side.name());
                if !notes.contains(&note) {
                    notes.push(note);
                }
                None
            }
            Ok(server) => match SteppedClient::start(client_side, server.port, quick, peers) {
                Ok(c) => Some(c),
                Err(e) => {
                    notes.push(format!("{} client → {} server: {e}", client_side.name(), server_side.name()));
                    None
                }
            },
        };
        clients.push(client);
    }
    eprintln!("[{:>4.0}s] cross clients warmed up", started.elapsed().as_secs_f64());
    let limit = Duration::from_secs(if quick { 120 } else { 300 });
    for round in 0..runs {
        for (test, _) in TESTS {
            // Odd rounds take the pairs in reverse, so that no pair always follows the same one.
            let mut turns: Vec<(&mut Option<SteppedClient>, (Side, Side))> =
                clients.iter_mut().zip(pairs.iter().copied()).collect();
            if round % 2 == 1 {
                turns.reverse();
            }
            for (slot, (client_side, server_side)) in turns {
                let Some(client) = slot.as_mut() else { continue };
                let pair = format!("{} client → {} server", client_side.name(), server_side.name());
                match client.run(test, limit) {
                    Ok(v) => {
                        if let Some(s) = series
                            .iter_mut()
                            .find(|s| s.client == client_side && s.server == server_side && s.test == *test)
                        {
                            s.values.push(v);
                        }
                    }
                    Err(StepError::Test(e)) => notes.push(format!("{pair}, {test}, round {}: {e}", round + 1)),
                    Err(StepError::Client(e)) => {
                        notes.push(format!("{pair}, {test}, round {}: {e}; no more tests for it", round + 1));
                        *slot = None;
                    }
                }
            }
            eprintln!("[{:>4.0}s] round {} cross {test} done", started.elapsed().as_secs_f64(), round + 1);
        }
    }
    drop(clients);
    (series, notes)
}

fn median_of(series: &[Series], client: Side, server: Side, test: &str) -> Option<f64> {
    series.iter().find(|s| s.client == client && s.server == server && s.test == test).and_then(Series::median)
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 1e6 => format!("{:.3}M", v / 1e6),
        Some(v) if v >= 1e4 => format!("{:.1}k", v / 1e3),
        Some(v) => format!("{v:.0}"),
        None => "–".into(),
    }
}

/// The Markdown table: per test, the server ratio (floe's server / Ice's, both under Ice's
/// client) and the client ratio (floe's client / Ice's, both against Ice's server), each
/// beside its cap (the raw replay side in floe's place) and floe's ratio to that cap.
pub(crate) fn table(series: &[Series], quick: bool, runs: usize, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "each side alone: Interop::Tester ({} workload), client → server, medians of {runs} round(s), the pairs taking turns test by test\n",
        if quick { "quick" } else { "full" }
    );
    s.push_str(
        "| test | unit | Ice → floe | Ice → Ice | floe server / Ice server | cap: Ice → raw | floe server / cap \
         | floe → Ice | floe client / Ice client | cap: raw → Ice | floe client / cap | floe → floe |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (test, unit) in TESTS {
        let ice_floe = median_of(series, Side::Ice, Side::Floe, test);
        let ice_ice = median_of(series, Side::Ice, Side::Ice, test);
        let ice_raw = median_of(series, Side::Ice, Side::Raw, test);
        let floe_ice = median_of(series, Side::Floe, Side::Ice, test);
        let raw_ice = median_of(series, Side::Raw, Side::Ice, test);
        let floe_floe = median_of(series, Side::Floe, Side::Floe, test);
        let _ = writeln!(
            s,
            "| {test} | {unit} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(ice_floe),
            cell(ice_ice),
            ratio(ice_floe, ice_ice),
            cell(ice_raw),
            ratio(ice_floe, ice_raw),
            cell(floe_ice),
            ratio(floe_ice, ice_ice),
            cell(raw_ice),
            ratio(floe_ice, raw_ice),
            cell(floe_floe)
        );
    }
    if series.iter().any(|x| x.client == Side::Ice38 && !x.values.is_empty()) {
        s.push_str(
            "\nwith Ice 3.8.2's C++ peer (the same sources built against Ice 3.8):\n\n\
             | test | unit | Ice 3.8 → floe | Ice 3.8 → Ice 3.8 | floe server / Ice 3.8 server \
             | floe → Ice 3.8 | floe client / Ice 3.8 client |\n|---|---|---|---|---|---|---|\n",
        );
        for (test, unit) in TESTS {
            let ice_floe = median_of(series, Side::Ice38, Side::Floe, test);
            let ice_ice = median_of(series, Side::Ice38, Side::Ice38, test);
            let floe_ice = median_of(series, Side::Floe, Side::Ice38, test);
            let _ = writeln!(
                s,
                "| {test} | {unit} | {} | {} | {} | {} | {} |",
                cell(ice_floe),
                cell(ice_ice),
                ratio(ice_floe, ice_ice),
                cell(floe_ice),
                ratio(floe_ice, ice_ice)
            );
        }
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn values_of<'a>(series: &'a [Series], client: Side, server: Side, test: &str) -> &'a [f64] {
    series.iter().find(|s| s.client == client && s.server == server && s.test == test).map_or(&[], |s| &s.values)
}

/// floe's ratios per test: its server over Ice's (both under Ice's client) and its client
/// over Ice's (both against Ice's server), with the spread of the rounds' ratios; with
/// `caps`, also each side over its cap.
fn ratios(series: &[Series], caps: bool) -> Vec<Ratio> {
    let mut out = Vec::new();
    for (test, _) in TESTS {
        let v = |client, server| values_of(series, client, server, test);
        out.extend(of_runs(test, "Ice C++ server", v(Side::Ice, Side::Floe), v(Side::Ice, Side::Ice)));
        if caps {
            out.extend(of_runs(test, "cap: raw server", v(Side::Ice, Side::Floe), v(Side::Ice, Side::Raw)));
        }
        out.extend(of_runs(test, "Ice C++ client", v(Side::Floe, Side::Ice), v(Side::Ice, Side::Ice)));
        if caps {
            out.extend(of_runs(test, "cap: raw client", v(Side::Floe, Side::Ice), v(Side::Raw, Side::Ice)));
        }
        out.extend(of_runs(test, "Ice 3.8 C++ server", v(Side::Ice38, Side::Floe), v(Side::Ice38, Side::Ice38)));
        out.extend(of_runs(test, "Ice 3.8 C++ client", v(Side::Floe, Side::Ice38), v(Side::Ice38, Side::Ice38)));
    }
    out
}

/// The stage's charts: floe's side over Ice's and over the caps, and every pair's figure per
/// test.
fn charts(series: &[Series]) -> String {
    let r = ratios(series, true);
    let rows: Vec<(String, &Ratio)> = r.iter().map(|x| (x.test.clone(), x)).collect();
    let mut s = crate::summary::ratio_chart("Each side alone: floe's server and client against Ice C++'s and the caps", &rows);
    let categories: Vec<String> = TESTS.iter().map(|(t, u)| format!("{t} ({u})")).collect();
    let mut pairs: Vec<(Side, Side)> = Vec::new();
    for x in series.iter().filter(|x| !x.values.is_empty()) {
        if !pairs.contains(&(x.client, x.server)) {
            pairs.push((x.client, x.server));
        }
    }
    let groups: Vec<Group> = pairs
        .iter()
        .map(|(c, sv)| Group {
            name: format!("{} → {}", c.name(), sv.name()),
            values: TESTS.iter().map(|(t, _)| Spread::of(values_of(series, *c, *sv, t))).collect(),
        })
        .collect();
    s.push_str(&crate::charts::bars("Each pair, client → server (median, min–max of the rounds)", "rate", &categories, &groups));
    s
}

/// The JSON record of one pair and test.
#[derive(Debug, Serialize)]
struct Record {
    system: String,
    test: String,
    metric: &'static str,
    client: &'static str,
    server: &'static str,
    unit: &'static str,
    median: f64,
    runs: usize,
}

/// JSON records, one per pair and test, for the report's array.
pub(crate) fn json_records(series: &[Series]) -> Vec<serde_json::Value> {
    series
        .iter()
        .filter_map(|s| {
            let median = s.median()?;
            Some(crate::json::record(&Record {
                system: format!("{} client → {} server", s.client.name(), s.server.name()),
                test: format!("cross/{}", s.test),
                metric: "cross",
                client: s.client.name(),
                server: s.server.name(),
                unit: s.unit,
                median: round_to(median, 3),
                runs: s.values.len(),
            }))
        })
        .collect()
}

/// The cross pairs, with the Ice peer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cross;

impl Suite for Cross {
    /// The series and notes, or why the stage could not run.
    type Results = Result<(Vec<Series>, Vec<String>), String>;

    fn name(&self) -> &'static str {
        "cross"
    }

    fn title(&self) -> &'static str {
        "Each side alone"
    }

    fn selected(&self, ctx: &Context) -> bool {
        // Each side alone needs the Ice peer: it runs where Ice C++ is a peer.
        ctx.args.peer("ice") && ctx.args.runs_suite(self.name())
    }

    fn systems(&self, _ctx: &Context) -> Vec<String> {
        PAIRS.iter().chain(&PAIRS_38).map(|(c, s)| format!("{} client → {} server", c.name(), s.name())).collect()
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        let ice37 = build_tester_peer()?;
        let (ice38, note) = match crate::proc::build_cpp_peer_ice38("ice-tester", "Ice C++ Tester peer") {
            Ok(dir) => (Some(dir), None),
            Err(e) => (None, Some(format!("no Ice 3.8 pairs: {e}"))),
        };
        let (series, mut notes) = run(ctx.args.quick, ctx.stage_rounds(), &IcePeers { ice37, ice38 });
        notes.extend(note);
        Ok((series, notes))
    }

    fn table(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok((series, notes)) => table(series, ctx.args.quick, ctx.stage_rounds(), notes),
            Err(_) => String::new(),
        }
    }

    fn terminal(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok(_) => format!("\n{}\n", self.table(ctx, r)),
            Err(e) => format!("note: cross pairs skipped: {e}\n"),
        }
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok((series, _)) => {
                let mut s = format!("<h2 id=\"cross\">{}</h2>\n", self.title());
                s.push_str(&charts(series));
                s.push_str(&crate::suite::table_html(&self.table(ctx, r)));
                s
            }
            Err(_) => String::new(),
        }
    }

    fn summary(&self, _ctx: &Context, r: &Self::Results) -> Option<StageSummary> {
        let (series, _) = r.as_ref().ok()?;
        StageSummary::new("cross", "tests", ratios(series, false))
    }

    fn records(&self, r: &Self::Results) -> Vec<serde_json::Value> {
        r.as_ref().map(|(series, _)| json_records(series)).unwrap_or_default()
    }

    fn markdown(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok(_) => format!("\n{}", self.table(ctx, r)),
            Err(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_each_sides_ratio_under_the_same_peer() {
        let mk = |client, server, test, values: Vec<f64>| Series { client, server, test, unit: "calls/s", values };
        let series = vec![
            mk(Side::Ice, Side::Floe, "twoway", vec![30_000.0, 20_000.0, 26_000.0]),
            mk(Side::Ice, Side::Ice, "twoway", vec![20_000.0]),
            mk(Side::Floe, Side::Ice, "twoway", vec![10_000.0]),
            mk(Side::Ice, Side::Raw, "twoway", vec![52_000.0]),
            mk(Side::Raw, Side::Ice, "twoway", vec![12_500.0]),
        ];
        let t = table(&series, true, 3, &[]);
        assert!(
            t.contains("| twoway | calls/s | 26.0k | 20.0k | 1.30 | 52.0k | 0.50 | 10.0k | 0.50 | 12.5k | 0.80 | – |"),
            "{t}"
        );
        assert_eq!(json_records(&series).len(), 5);
    }
}
