//! The `connections` test, after Henning's 80,000 clients on one Ice server: N connections
//! opened in bursts, then one `ice_ping` per connection every 4 s, against floe, Ice C++ and a
//! raw server. It reports how long the N connections took to be accepted and validated, the
//! server's RSS growth per connection, the ping latencies (p50, p99, max) and the errors.
//!
//! The load comes from separate processes of this binary (`--conn-load`), each with at most
//! `--conn-per-process` connections and a source address of its own (127.<run>.0.10, .11, …), so
//! that N can exceed one process's file limit and one source address's ephemeral ports. Every
//! system meets the same generator: it speaks the Ice protocol with pre-encoded requests and
//! no middleware. The server process's own file limit is the one N cannot exceed here; the
//! run lowers N to it and says so instead of failing.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::servers::{start_server, System};
use crate::stats::round_to;
use crate::charts::{Group, Spread};
use crate::suite::{Context, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// How a `connections` run is shaped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Connections to open.
    pub(crate) n: usize,
    /// Connections opened at once (spread over the load processes).
    pub(crate) burst: usize,
    /// Time between two pings of one connection.
    pub(crate) interval: Duration,
    /// How long the pings are measured once every connection is open.
    pub(crate) measure: Duration,
    /// The most connections one load process opens.
    pub(crate) per_process: usize,
}

impl Plan {
    /// The default plan: 19,000 connections (the most this machine's 20,000-descriptor limit
    /// leaves a server), measured for 20 s; 2,000 for 8 s with `--quick`.
    pub(crate) fn new(quick: bool, n: Option<usize>, per_process: Option<usize>) -> Plan {
        Plan {
            n: n.unwrap_or(if quick { 2_000 } else { 19_000 }),
            burst: 500,
            interval: Duration::from_secs(4),
            measure: Duration::from_secs(if quick { 8 } else { 20 }),
            per_process: per_process.unwrap_or(10_000).max(1),
        }
    }

    fn processes(&self) -> usize {
        self.n.div_ceil(self.per_process).max(1)
    }
}

/// What one run against one server measured.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The system's name.
    pub(crate) system: &'static str,
    /// Connections asked for (after lowering to the server's limit).
    pub(crate) n: usize,
    /// Connections accepted and validated.
    pub(crate) connected: usize,
    /// Seconds from the first connect to the last validation.
    pub(crate) connect_s: f64,
    /// Server RSS growth per validated connection, in bytes, at the end of the pings.
    pub(crate) rss_per_conn: f64,
    /// The server's RSS before and after, in kB.
    pub(crate) rss_kb: (u64, u64),
    /// Ping latencies in microseconds, sorted.
    pub(crate) latencies_us: Vec<u32>,
    /// The server's CPU time (user + system) per ping answered while pinging, in µs.
    pub(crate) cpu_us_per_ping: Option<f64>,
    /// Connects not validated, pings not answered, connections lost.
    pub(crate) errors: u64,
    /// The first error the load processes met, if any.
    pub(crate) first_error: Option<String>,
}

impl Outcome {
    fn percentile(&self, p: f64) -> Option<f64> {
        crate::stats::percentile(&self.latencies_us, p).map(|v| v as f64 / 1000.0)
    }
}


/// Runs one `connections` measurement against the server `server_pid` listening on `port`.
/// `exe` is this binary (the load processes are more of it).
pub(crate) fn run(system: &'static str, server_pid: u32, port: u16, plan: &Plan) -> Result<Outcome, String> {
    // Each run connects from addresses of its own (127.0.<k>.x), so that no run meets the
    // TIME_WAIT sockets of the one before.
    static RUNS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    let second_octet = 10 + RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 200;
    let exe = crate::proc::helper_exe()?;
    let mut plan = *plan;
    // What the server may hold: its file limit, less what it keeps open besides connections.
    if let Some(limit) = crate::proc::fd_limit_of(server_pid) {
        let room = limit.saturating_sub(64) as usize;
        if plan.n > room {
            plan.n = room;
        }
    }
    // Settle, then the baseline.
    std::thread::sleep(Duration::from_millis(300));
    let rss_before = crate::proc::rss_kb(server_pid);
    let processes = plan.processes();
    let burst = plan.burst.div_ceil(processes).max(1);
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    // Load processes are killed if this returns early (an error); otherwise they are waited
    // for below.
    let mut children = KillOnDrop(Vec::new());
    let mut stdins: Vec<ChildStdin> = Vec::new();
    let started = Instant::now();
    for i in 0..processes {
        let count = plan.n / processes + usize::from(i < plan.n % processes);
        let source = Ipv4Addr::new(127, second_octet.wrapping_add((i / 240) as u8), 0, (10 + i % 240) as u8);
        let mut child = Command::new(&exe)
            .args(["--conn-load", "--port", &port.to_string()])
            .args(["--conn-count", &count.to_string(), "--conn-source", &source.to_string()])
            .args(["--conn-burst", &burst.to_string()])
            .args(["--conn-interval-ms", &plan.interval.as_millis().to_string()])
            .args(["--duration-ms", &plan.measure.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a load process: {e}"))?;
        stdins.push(child.stdin.take().ok_or("no stdin")?);
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((i, line)).is_err() {
                    break;
                }
            }
            let _ = tx.send((i, "eof".into()));
        });
        children.0.push(child);
    }
    drop(tx);
    let mut connected = 0usize;
    let mut errors = 0u64;
    let mut first_error: Option<String> = None;
    let note_error = |e: &str, first_error: &mut Option<String>| {
        if first_error.is_none() && !e.is_empty() {
            *first_error = Some(e.to_string());
        }
    };
    // Phase 1: every process reports its connect phase.
    let limit = Duration::from_secs(60 + (plan.n / 200) as u64);
    let mut reported = 0;
    let mut connect_s = 0.0;
    while reported < processes {
        let (_, line) =
            rx.recv_timeout(limit).map_err(|_| "load processes did not report their connects".to_string())?;
        let mut it = line.splitn(4, ' ');
        match it.next() {
            Some("connected") => {
                let ok: usize = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                let failed: u64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                connected += ok;
                errors += failed;
                note_error(it.next().unwrap_or(""), &mut first_error);
                reported += 1;
                connect_s = started.elapsed().as_secs_f64();
            }
            Some("eof") => return Err("a load process ended before connecting".into()),
            _ => {}
        }
    }
    // Phase 2: every process pings for the measurement, starting together.
    let cpu_before = crate::proc::proc_stats(server_pid).0;
    for s in &mut stdins {
        let _ = s.write_all(b"go\n").and_then(|_| s.flush());
    }
    let mut latencies_us: Vec<u32> = Vec::new();
    let mut done = 0;
    let wait = plan.measure + plan.interval + Duration::from_secs(30);
    while done < processes {
        let (_, line) = rx.recv_timeout(wait).map_err(|_| "load processes did not report their pings".to_string())?;
        let mut it = line.splitn(2, ' ');
        match it.next() {
            Some("latencies") => {
                latencies_us.extend(it.next().unwrap_or("").split_whitespace().filter_map(|v| v.parse::<u32>().ok()))
            }
            Some("errors") => {
                let rest = it.next().unwrap_or("");
                let (count, first) = rest.split_once(' ').unwrap_or((rest, ""));
                errors += count.parse::<u64>().unwrap_or(0);
                note_error(first, &mut first_error);
            }
            Some("done") => done += 1,
            Some("eof") => return Err("a load process ended before reporting its pings".into()),
            _ => {}
        }
    }
    // Every connection is still open: the server's RSS now, then the load goes away.
    let rss_after = crate::proc::rss_kb(server_pid);
    let cpu = crate::proc::proc_stats(server_pid).0 - cpu_before;
    drop(stdins);
    for mut c in std::mem::take(&mut children.0) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    latencies_us.sort_unstable();
    let rss_per_conn =
        if connected > 0 { rss_after.saturating_sub(rss_before) as f64 * 1024.0 / connected as f64 } else { 0.0 };
    Ok(Outcome {
        system,
        n: plan.n,
        connected,
        connect_s,
        rss_per_conn,
        rss_kb: (rss_before, rss_after),
        cpu_us_per_ping: (!latencies_us.is_empty()).then(|| cpu * 1e6 / latencies_us.len() as f64),
        latencies_us,
        errors,
        first_error,
    })
}

/// Child processes killed and reaped when dropped.
struct KillOnDrop(Vec<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Medians over the runs of each system, as table rows.
fn rows(outcomes: &[Outcome]) -> Vec<Row> {
    let mut systems: Vec<&'static str> = outcomes.iter().map(|o| o.system).collect();
    systems.dedup();
    let mut seen = Vec::new();
    systems.retain(|s| {
        let new = !seen.contains(s);
        seen.push(*s);
        new
    });
    systems
        .into_iter()
        .map(|system| {
            let runs: Vec<&Outcome> = outcomes.iter().filter(|o| o.system == system).collect();
            let med = |f: &dyn Fn(&Outcome) -> Option<f64>| {
                let v: Vec<f64> = runs.iter().filter_map(|o| f(o)).collect();
                crate::stats::middle(&v)
            };
            Row {
                system,
                runs: runs.len(),
                n: runs.iter().map(|o| o.n).max().unwrap_or(0),
                connected: runs.iter().map(|o| o.connected).min().unwrap_or(0),
                connect_s: med(&|o| Some(o.connect_s)),
                rss_per_conn: med(&|o| Some(o.rss_per_conn)),
                p50: med(&|o| o.percentile(0.5)),
                p99: med(&|o| o.percentile(0.99)),
                max: med(&|o| o.latencies_us.last().map(|v| *v as f64 / 1000.0)),
                cpu_us_per_ping: med(&|o| o.cpu_us_per_ping),
                pings: runs.iter().map(|o| o.latencies_us.len()).sum(),
                errors: runs.iter().map(|o| o.errors).sum(),
            }
        })
        .collect()
}

/// One system's line of the table.
#[derive(Debug)]
struct Row {
    system: &'static str,
    runs: usize,
    n: usize,
    connected: usize,
    connect_s: Option<f64>,
    rss_per_conn: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
    cpu_us_per_ping: Option<f64>,
    pings: usize,
    errors: u64,
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "–".into())
}

/// The plain-text (and Markdown) table of a `connections` run, with floe's ratios to Ice C++.
pub(crate) fn table(plan: &Plan, outcomes: &[Outcome], notes: &[String]) -> String {
    let rows = rows(outcomes);
    let mut s = String::new();
    let n = rows.iter().map(|r| r.n).max().unwrap_or(plan.n);
    let _ = writeln!(
        s,
        "connections: {n} connections opened in bursts of {}, then one ice_ping per connection every {} s for {} s; medians of {} run(s)\n",
        plan.burst,
        plan.interval.as_secs(),
        plan.measure.as_secs(),
        rows.iter().map(|r| r.runs).max().unwrap_or(0)
    );
    s.push_str("| server | validated | connect time (s) | RSS per connection (bytes) | p50 (ms) | p99 (ms) | max (ms) | pings | errors | server CPU per ping (µs) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &rows {
        let _ = writeln!(
            s,
            "| {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.system,
            r.connected,
            r.n,
            fmt(r.connect_s, 2),
            fmt(r.rss_per_conn, 0),
            fmt(r.p50, 3),
            fmt(r.p99, 3),
            fmt(r.max, 2),
            r.pings,
            r.errors,
            fmt(r.cpu_us_per_ping, 1)
        );
    }
    let floe = rows.iter().find(|r| r.system == "floe");
    let ice = rows.iter().find(|r| r.system == "ice-cpp");
    if let (Some(f), Some(i)) = (floe, ice) {
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "\nfloe/Ice C++: RSS per connection {}, p99 {}, connect time {}",
            ratio(f.rss_per_conn, i.rss_per_conn),
            ratio(f.p99, i.p99),
            ratio(f.connect_s, i.connect_s)
        );
    }
    // What 100,000 connections pinging at the same interval would cost, from the measured
    // per-connection memory and per-ping CPU.
    let pings_per_s = 100_000.0 / plan.interval.as_secs_f64();
    for r in &rows {
        if let (Some(bytes), Some(cpu)) = (r.rss_per_conn, r.cpu_us_per_ping) {
            let _ = writeln!(
                s,
                "{} at 100,000 connections (projected): {:.0} MB of user-space memory, {:.0}% of one core for {:.0} pings/s",
                r.system,
                bytes * 100_000.0 / 1e6,
                cpu * pings_per_s / 1e4,
                pings_per_s
            );
        }
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// One figure of a run, if it has it.
type Figure = fn(&Outcome) -> Option<f64>;

/// A named figure of the runs.
type Named = (&'static str, Figure);

/// One figure of every run of `system`.
fn per_run(outcomes: &[Outcome], system: &str, f: Figure) -> Vec<f64> {
    outcomes.iter().filter(|o| o.system == system).filter_map(f).collect()
}

/// floe's ratios to Ice C++ and the raw baseline: RSS per connection, p99 and connect time,
/// each turned over (less is better).
fn ratios(outcomes: &[Outcome]) -> Vec<Ratio> {
    let figures: [Named; 3] = [
        ("RSS per connection", |o| Some(o.rss_per_conn)),
        ("ping p99", |o| o.percentile(0.99)),
        ("connect time", |o| Some(o.connect_s)),
    ];
    let mut out = Vec::new();
    for (name, f) in figures {
        for (system, peer) in [("ice-cpp", "Ice C++"), ("raw", "raw")] {
            let r = of_runs(name, peer, &per_run(outcomes, "floe", f), &per_run(outcomes, system, f));
            out.extend(r.and_then(Ratio::inverted));
        }
    }
    out
}

/// The stage's charts: each server's memory per connection, ping latency percentiles and
/// connect time, with the spread of the runs.
fn charts(outcomes: &[Outcome]) -> String {
    let systems: Vec<&'static str> = rows(outcomes).iter().map(|r| r.system).collect();
    let by_system = |cats: &[Named]| -> Vec<Group> {
        systems
            .iter()
            .map(|sys| Group {
                name: sys.to_string(),
                values: cats.iter().map(|(_, f)| Spread::of(&per_run(outcomes, sys, *f))).collect(),
            })
            .collect()
    };
    let latency: [Named; 3] = [
        ("p50", |o| o.percentile(0.5)),
        ("p99", |o| o.percentile(0.99)),
        ("max", |o| o.latencies_us.last().map(|v| *v as f64 / 1000.0)),
    ];
    let labels = |cats: &[Named]| cats.iter().map(|(l, _)| l.to_string()).collect::<Vec<_>>();
    let mut s = crate::charts::bars("Connections: ping latency percentiles", "ms", &labels(&latency), &by_system(&latency));
    let memory: [Named; 1] = [("RSS per connection", |o| Some(o.rss_per_conn))];
    s.push_str(&crate::charts::bars("Connections: server memory per connection", "bytes", &labels(&memory), &by_system(&memory)));
    let connect: [Named; 1] = [("connect time", |o| Some(o.connect_s))];
    s.push_str(&crate::charts::bars("Connections: time to open every connection", "s", &labels(&connect), &by_system(&connect)));
    s
}

/// The JSON record of one system's `connections` runs.
#[derive(Debug, Serialize)]
struct Record {
    system: &'static str,
    test: &'static str,
    metric: &'static str,
    runs: usize,
    connections: usize,
    validated: usize,
    connect_s: Option<f64>,
    rss_bytes_per_connection: Option<f64>,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    max_ms: Option<f64>,
    pings: usize,
    errors: u64,
    server_cpu_us_per_ping: Option<f64>,
}

/// JSON records of a `connections` run, one per system (medians), for the report's array.
pub(crate) fn json_records(outcomes: &[Outcome]) -> Vec<serde_json::Value> {
    let num = |v: Option<f64>| v.map(|v| round_to(v, 4));
    rows(outcomes)
        .iter()
        .map(|r| {
            crate::json::record(&Record {
                system: r.system,
                test: "connections",
                metric: "connections",
                runs: r.runs,
                connections: r.n,
                validated: r.connected,
                connect_s: num(r.connect_s),
                rss_bytes_per_connection: num(r.rss_per_conn),
                p50_ms: num(r.p50),
                p99_ms: num(r.p99),
                max_ms: num(r.max),
                pings: r.pings,
                errors: r.errors,
                server_cpu_us_per_ping: num(r.cpu_us_per_ping),
            })
        })
        .collect()
}

/// The connections test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connections;

/// The systems of the connections test: floe, the raw baseline and Ice C++ when it was built
/// (tonic and the tokio baseline serve no Ice pings).
fn systems(ctx: &Context) -> Vec<System> {
    let mut systems = vec![System::Floe, System::Raw];
    if ctx.ice_dir.is_some() {
        systems.push(System::Ice);
    }
    systems
}

/// The run's plan: `--connections`, `--conn-per-process` and `--conn-measure-ms`, or the
/// defaults.
fn plan(ctx: &Context) -> Plan {
    let args = &ctx.args;
    let plan = Plan::new(args.quick, args.connections, args.conn_per_process);
    Plan { measure: args.conn_measure_ms.map(Duration::from_millis).unwrap_or(plan.measure), ..plan }
}

impl Suite for Connections {
    type Results = (Vec<Outcome>, Vec<String>);

    fn name(&self) -> &'static str {
        "connections"
    }

    fn title(&self) -> &'static str {
        "Connections"
    }

    fn systems(&self, ctx: &Context) -> Vec<String> {
        systems(ctx).iter().map(|s| s.name().to_string()).collect()
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        let runs = ctx.args.runs.unwrap_or(if ctx.args.quick { 1 } else { 3 }).clamp(1, 3);
        run_connections(&plan(ctx), &systems(ctx), ctx.ice_dir(), runs)
    }

    fn table(&self, ctx: &Context, (outcomes, notes): &Self::Results) -> String {
        table(&plan(ctx), outcomes, notes)
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        crate::suite::charts_section(self.title(), &charts(&r.0), &self.table(ctx, r))
    }

    fn summary(&self, _ctx: &Context, (outcomes, _): &Self::Results) -> Option<StageSummary> {
        StageSummary::new("connections", "figures", ratios(outcomes))
    }

    fn records(&self, (outcomes, _): &Self::Results) -> Vec<serde_json::Value> {
        json_records(outcomes)
    }
}

/// The `connections` test: `runs` rounds, each starting every system's scale server afresh and
/// measuring it under the same load, systems interleaved within a round.
fn run_connections(
    plan: &Plan,
    systems: &[System],
    ice_dir: Option<&Path>,
    runs: usize,
) -> (Vec<Outcome>, Vec<String>) {
    let mut outcomes = Vec::new();
    let mut notes = Vec::new();
    let started = Instant::now();
    for run in 0..runs {
        // tonic and the tokio baseline serve no Ice pings.
        for &system in systems.iter().filter(|s| !matches!(s, System::Tonic | System::Tokio)) {
            let server = match start_server(system, 1, false, ice_dir, true) {
                Ok(s) => s,
                Err(e) => {
                    notes.push(format!("{} / connections run {}: {e}", system.name(), run + 1));
                    continue;
                }
            };
            match crate::connections::run(system.name(), server.child.id(), server.port, plan) {
                Ok(o) => {
                    eprintln!(
                        "[{:>4.0}s] run {} connections {:<8} {}/{} validated in {:.2} s, RSS {} → {} kB ({:.0} B/connection), {} pings, {} errors",
                        started.elapsed().as_secs_f64(),
                        run + 1,
                        system.name(),
                        o.connected,
                        o.n,
                        o.connect_s,
                        o.rss_kb.0,
                        o.rss_kb.1,
                        o.rss_per_conn,
                        o.latencies_us.len(),
                        o.errors
                    );
                    if o.n < plan.n {
                        let note = format!(
                            "{}: {} connections asked, {} opened: the server's file limit allows no more",
                            system.name(),
                            plan.n,
                            o.n
                        );
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                    }
                    if let Some(e) = &o.first_error {
                        notes.push(format!("{} / connections run {}: first error: {e}", system.name(), run + 1));
                    }
                    outcomes.push(o);
                }
                Err(e) => notes.push(format!("{} / connections run {}: {e}", system.name(), run + 1)),
            }
        }
    }
    (outcomes, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(system: &'static str, latencies: Vec<u32>, rss: f64) -> Outcome {
        Outcome {
            system,
            n: 10,
            connected: 10,
            connect_s: 0.5,
            rss_per_conn: rss,
            rss_kb: (0, 0),
            cpu_us_per_ping: Some(20.0),
            latencies_us: latencies,
            errors: 0,
            first_error: None,
        }
    }

    #[test]
    fn percentiles_come_from_the_sorted_latencies() {
        let o = outcome("floe", (1..=100).collect(), 1.0);
        assert_eq!(o.percentile(0.5), Some(0.051));
        assert_eq!(o.percentile(0.99), Some(0.099));
        assert_eq!(outcome("floe", vec![], 1.0).percentile(0.99), None);
    }

    #[test]
    fn the_table_has_a_row_per_system_with_medians_and_the_ratio_to_ice() {
        let outcomes = vec![
            outcome("floe", vec![100, 200], 1000.0),
            outcome("ice-cpp", vec![100, 400], 4000.0),
            outcome("floe", vec![100, 200], 3000.0),
            outcome("floe", vec![100, 200], 2000.0),
        ];
        let t = table(&Plan::new(true, Some(10), None), &outcomes, &[]);
        assert!(t.contains("| floe | 10 / 10 | 0.50 | 2000 |"), "{t}");
        assert!(t.contains("| ice-cpp | 10 / 10 | 0.50 | 4000 |"), "{t}");
        assert!(t.contains("RSS per connection 0.50, p99 0.50"), "{t}");
        assert_eq!(json_records(&outcomes).len(), 2);
    }

    #[test]
    fn load_is_split_over_processes_of_at_most_the_cap() {
        assert_eq!(Plan::new(false, Some(19_000), None).processes(), 2);
        assert_eq!(Plan::new(true, Some(2_000), None).processes(), 1);
        assert_eq!(Plan::new(true, Some(2_001), Some(1_000)).processes(), 3);
    }
}
