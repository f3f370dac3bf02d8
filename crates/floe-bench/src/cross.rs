//! Each side alone: the seed tests of `--against` (see `against.rs`) between every client and
//! server of floe and ZeroC Ice C++, so that floe's server is measured under Ice's client and
//! floe's client against Ice's server, beside the same-system pairs. An Ice shop adopts floe
//! one program at a time, so each side has to be fast on its own.
//!
//! - floe's server is `floe-interop-server` on its defaults;
//! - Ice's is `ice-tester-server` (`peers/ice-tester`), a typed C++11 servant of the same
//!   Slice file;
//! - floe's client is this binary with `--against`;
//! - Ice's is `ice-tester-client`.
//!
//! - the caps: a raw-socket server and client that replay pre-encoded messages and do no
//!   other work (`raw_tester.rs`), under Ice's client and against Ice's server, show how fast
//!   each test can go when only the Ice peer works.
//!
//! Every client runs as a process of its own against servers that stay up for the whole
//! stage, one pair after another in each round, rounds interleaved.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::against::TESTS;
use crate::report::ratio_cell as ratio;

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Floe,
    Ice,
    /// The raw replay side of the caps.
    Raw,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Floe => "floe",
            Side::Ice => "ice-cpp",
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
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    }
}

/// Builds the Ice C++ Tester peer (`peers/ice-tester`) into target/floe-bench/ice-tester.
pub(crate) fn build_tester_peer() -> Result<PathBuf, String> {
    crate::build_cpp_peer("ice-tester", "Ice C++ Tester peer")
}

/// floe's interop server, built beside this binary (`cargo build --release -p floe-interop`,
/// which `scripts/bench` does).
pub(crate) fn floe_server_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name("floe-interop-server");
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} is not built (cargo build --release -p floe-interop)", path.display()))
    }
}

/// A server that is killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(side: Side, floe_server: &Path, ice_dir: &Path) -> Result<Server, String> {
    let port = crate::free_port();
    let mut cmd = match side {
        Side::Floe => {
            let mut c = Command::new(floe_server);
            c.args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}")]);
            // `--floe-property` settings, as the server's own command-line properties.
            crate::floe_system::forward_as_program_properties(&mut c);
            c
        }
        Side::Ice => {
            let mut c = Command::new(ice_dir.join("ice-tester-server"));
            crate::ice_malloc_env(&mut c);
            c.arg(port.to_string());
            c
        }
        Side::Raw => {
            let mut c = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
            c.args(["--serve", "raw-tester", "--port", &port.to_string()]);
            c
        }
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let child = cmd.spawn().map_err(|e| format!("cannot start the {} server: {e}", side.name()))?;
    // Killed when dropped, on the error paths too.
    let mut server = Server { child, port };
    let line = crate::first_line(&mut server.child, crate::READY_LIMIT)
        .map_err(|e| format!("the {} server: {e}", side.name()))?;
    if !line.contains("ready") {
        return Err(format!("the {} server did not start: {line:?}", side.name()));
    }
    Ok(server)
}

/// A client's `RESULT` lines: each test's name with its value or its error.
type Results = Vec<(String, Result<f64, String>)>;

/// Runs one client against `port`; returns its `RESULT` values by test name.
fn client(side: Side, port: u16, quick: bool, ice_dir: &Path) -> Result<Results, String> {
    let proxy = format!("tester:tcp -h 127.0.0.1 -p {port}");
    let mut cmd = match side {
        Side::Floe => {
            let mut c = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
            c.args(["--against", &proxy]);
            crate::floe_system::forward_properties(&mut c);
            c
        }
        Side::Ice => {
            let mut c = Command::new(ice_dir.join("ice-tester-client"));
            crate::ice_malloc_env(&mut c);
            c.arg(&proxy);
            c
        }
        Side::Raw => {
            let mut c = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
            c.args(["--raw-against", &port.to_string()]);
            c
        }
    };
    if quick {
        cmd.arg("--quick");
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the {} client: {e}", side.name()))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let limit = Duration::from_secs(if quick { 180 } else { 900 });
    let started = Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the {} client did not finish within {limit:?}", side.name()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = reader.join().map_err(|_| "client output reader panicked")?;
    let results: Results = text
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let name = it.next()?.to_string();
            let value = it.next()?;
            Some(match value {
                "error" => (name, Err(it.next().unwrap_or("").to_string())),
                v => (name, v.parse::<f64>().map_err(|e| format!("{v:?}: {e}"))),
            })
        })
        .collect();
    if results.is_empty() {
        return Err(format!("the {} client printed no RESULT line: {text:?}", side.name()));
    }
    Ok(results)
}

/// The stage: `runs` rounds of the four pairs. Returns the series and notes on what failed.
pub(crate) fn run(quick: bool, runs: usize, ice_dir: &Path) -> (Vec<Series>, Vec<String>) {
    let mut notes = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for (client, server) in PAIRS {
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
    let servers = [Side::Floe, Side::Ice, Side::Raw].map(|s| start(s, &floe_server, ice_dir).map_err(|e| (s, e)));
    let started = Instant::now();
    for round in 0..runs {
        for (client_side, server_side) in PAIRS {
            let at = match server_side {
                Side::Floe => 0,
                Side::Ice => 1,
                Side::Raw => 2,
            };
            let server = match &servers[at] {
                Ok(s) => s,
                Err((_, e)) => {
                    if round == 0 {
                        notes.push(format!("{} server: {e}", server_side.name()));
                    }
                    continue;
                }
            };
            match client(client_side, server.port, quick, ice_dir) {
                Ok(results) => {
                    for (name, value) in results {
                        match value {
                            Ok(v) => {
                                if let Some(s) = series
                                    .iter_mut()
                                    .find(|s| s.client == client_side && s.server == server_side && s.test == name)
                                {
                                    s.values.push(v);
                                }
                            }
                            Err(e) => notes.push(format!(
                                "{} client → {} server, {name}, round {}: {e}",
                                client_side.name(),
                                server_side.name(),
                                round + 1
                            )),
                        }
                    }
                    eprintln!(
                        "[{:>4.0}s] round {} cross {} client → {} server done",
                        started.elapsed().as_secs_f64(),
                        round + 1,
                        client_side.name(),
                        server_side.name()
                    );
                }
                Err(e) => notes.push(format!(
                    "{} client → {} server, round {}: {e}",
                    client_side.name(),
                    server_side.name(),
                    round + 1
                )),
            }
        }
    }
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
        "each side alone: Interop::Tester ({} workload), client → server, medians of {runs} round(s)\n",
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
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// JSON records, one per pair and test, for the report's array.
pub(crate) fn json_records(series: &[Series]) -> Vec<String> {
    series
        .iter()
        .filter_map(|s| {
            let median = s.median()?;
            Some(format!(
                "{{\"system\": \"{} client → {} server\", \"test\": \"cross/{}\", \"metric\": \"cross\", \"client\": \"{}\", \"server\": \"{}\", \"unit\": \"{}\", \"median\": {median:.3}, \"runs\": {}}}",
                s.client.name(),
                s.server.name(),
                s.test,
                s.client.name(),
                s.server.name(),
                s.unit,
                s.values.len()
            ))
        })
        .collect()
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
