//! Scaling: twoway calls/s of 1…N clients at once against servers with 1…N threads, floe's
//! server against Ice C++'s and the raw Tester, for machines larger than this one. N is
//! `--max-threads` (the machine's CPU count by default; 2 here).
//!
//! - floe's server is `floe-interop-server` with `--Ice.ThreadPool.Server.Size=T` (the size of
//!   its runtime, as floe reads Ice's thread-pool properties);
//! - Ice's is `ice-tester-server` with `--Ice.ThreadPool.Server.Size=T` and `SizeMax=T`;
//! - the raw Tester serves each connection on a thread of its own, so it has one row per
//!   client count, whatever the thread count (it shows what the clients alone allow).
//!
//! The clients are Ice 3.7's C++ `ice-tester-client` processes, the same for every server:
//! all are asked for the twoway test at once, and the figure is the sum of their rates. Each
//! round takes the servers in turn for every configuration, so that the figures compared are
//! taken seconds apart.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::charts::{Group, Spread};
use crate::cross::{IcePeers, Server, Side, StepError, SteppedClient};
use crate::report::ratio_cell as ratio;
use crate::stats::round_to;
use crate::suite::{Context, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// The servers of the stage.
const SERVERS: [Side; 3] = [Side::Floe, Side::Ice, Side::Raw];

/// One configuration: `clients` client processes against a server with `threads` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    pub(crate) clients: usize,
    pub(crate) threads: usize,
}

impl Config {
    fn label(self) -> String {
        format!(
            "{} client{}, {} thread{}",
            self.clients,
            if self.clients == 1 { "" } else { "s" },
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        )
    }
}

/// The configurations for `max` threads: every client count with every thread count.
pub(crate) fn configs(max: usize) -> Vec<Config> {
    let max = max.max(1);
    (1..=max).flat_map(|threads| (1..=max).map(move |clients| Config { clients, threads })).collect()
}

/// The summed rates of one server and configuration, over the rounds.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) server: Side,
    pub(crate) config: Config,
    pub(crate) values: Vec<f64>,
}

fn start_server(side: Side, threads: usize, floe_server: &Path, peers: &IcePeers) -> Result<Server, String> {
    let port = crate::proc::free_port();
    let size = format!("--Ice.ThreadPool.Server.Size={threads}");
    let mut cmd = match side {
        Side::Floe => {
            let mut c = Command::new(floe_server);
            c.args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}"), &size]);
            crate::floe_system::forward_as_program_properties(&mut c);
            c
        }
        Side::Raw => {
            let mut c = Command::new(crate::proc::helper_exe()?);
            c.args(["--serve", "raw-tester", "--port", &port.to_string()]);
            c
        }
        _ => {
            let mut c = Command::new(peers.dir(side)?.join("ice-tester-server"));
            crate::proc::ice_malloc_env(&mut c);
            c.arg(port.to_string()).arg(&size).arg(format!("--Ice.ThreadPool.Server.SizeMax={threads}"));
            c
        }
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let child = cmd.spawn().map_err(|e| format!("cannot start the {} server: {e}", side.name()))?;
    let mut server = Server { child, port };
    let line = crate::proc::first_line(&mut server.child, crate::proc::READY_LIMIT)?;
    if !line.contains("ready") {
        return Err(format!("the {} server did not start: {line:?}", side.name()));
    }
    Ok(server)
}

/// Runs the twoway test on `clients` at once; the sum of their rates.
fn twoway_together(clients: &mut [SteppedClient], limit: Duration) -> Result<f64, String> {
    for c in clients.iter_mut() {
        c.ask("twoway").map_err(step_error)?;
    }
    let mut sum = 0.0;
    for c in clients.iter_mut() {
        sum += c.answer("twoway", limit).map_err(step_error)?;
    }
    Ok(sum)
}

fn step_error(e: StepError) -> String {
    match e {
        StepError::Test(e) | StepError::Client(e) => e,
    }
}

/// The stage: for each thread count, each server started once with it; for each client
/// count, its clients warmed up, then `runs` rounds in which the servers take turns.
pub(crate) fn run(quick: bool, runs: usize, max_threads: usize, peers: &IcePeers) -> (Vec<Series>, Vec<String>) {
    let mut notes = Vec::new();
    let mut series = Vec::new();
    let floe_server = match crate::cross::floe_server_binary() {
        Ok(p) => p,
        Err(e) => return (series, vec![format!("scaling skipped: {e}")]),
    };
    let limit = Duration::from_secs(if quick { 120 } else { 300 });
    for config in configs(max_threads) {
        // The raw Tester has no thread count: measured once per client count.
        let servers: Vec<Side> =
            SERVERS.iter().copied().filter(|s| *s != Side::Raw || config.threads == 1).collect();
        let mut setups = Vec::new();
        for side in servers {
            let server = match start_server(side, config.threads, &floe_server, peers) {
                Ok(s) => s,
                Err(e) => {
                    notes.push(format!("{}, {}: {e}", side.name(), config.label()));
                    continue;
                }
            };
            let clients: Result<Vec<SteppedClient>, String> =
                (0..config.clients).map(|_| SteppedClient::start(Side::Ice, server.port, quick, peers)).collect();
            match clients {
                Ok(clients) => setups.push((side, server, clients)),
                Err(e) => notes.push(format!("{} server, {}: {e}", side.name(), config.label())),
            }
        }
        let mut values: Vec<(Side, Vec<f64>)> = setups.iter().map(|(side, _, _)| (*side, Vec::new())).collect();
        for round in 0..runs {
            for (k, (side, _server, clients)) in setups.iter_mut().enumerate() {
                match twoway_together(clients, limit) {
                    Ok(v) => values[k].1.push(v),
                    Err(e) => notes.push(format!("{} server, {}, round {}: {e}", side.name(), config.label(), round + 1)),
                }
            }
            // The next round takes the servers in the reverse order.
            setups.reverse();
            values.reverse();
        }
        eprintln!("scaling: {} done", config.label());
        series.extend(values.into_iter().map(|(server, values)| Series { server, config, values }));
    }
    (series, notes)
}

fn values_of(series: &[Series], server: Side, config: Config) -> &[f64] {
    series.iter().find(|s| s.server == server && s.config == config).map_or(&[], |s| &s.values)
}

fn median_of(series: &[Series], server: Side, config: Config) -> Option<f64> {
    crate::stats::middle(values_of(series, server, config))
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1}k", v / 1e3))
}

/// The Markdown table: per configuration, each server's summed calls/s and floe's ratio to
/// Ice's; then how each server's rate grows from one client and thread to N of each.
pub(crate) fn table(series: &[Series], max_threads: usize, runs: usize, notes: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "scaling: twoway calls/s (summed over the clients) of Ice C++ client processes against servers with a given \
         number of threads, medians of {runs} round(s), up to {max_threads} thread(s) and client(s)\n"
    );
    s.push_str("| clients | server threads | floe | Ice C++ | floe / Ice | raw (a thread per connection) |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for config in configs(max_threads) {
        let floe = median_of(series, Side::Floe, config);
        let ice = median_of(series, Side::Ice, config);
        let raw = median_of(series, Side::Raw, Config { threads: 1, ..config });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            config.clients,
            config.threads,
            cell(floe),
            cell(ice),
            ratio(floe, ice),
            cell(raw)
        );
    }
    let n = max_threads.max(1);
    if n > 1 {
        let one = Config { clients: 1, threads: 1 };
        let all = Config { clients: n, threads: n };
        let growth = |side| Some(median_of(series, side, all)? / median_of(series, side, one)?);
        let shown = |g: Option<f64>| g.map_or_else(|| "–".into(), |g| format!("{g:.2}× ({:.0}% of linear)", 100.0 * g / n as f64));
        let _ = writeln!(
            s,
            "\nfrom 1 client and 1 thread to {n} of each: floe {}, Ice C++ {}",
            shown(growth(Side::Floe)),
            shown(growth(Side::Ice))
        );
    }
    for note in notes {
        let _ = writeln!(s, "note: {note}");
    }
    s
}

fn ratios(series: &[Series], max_threads: usize) -> Vec<Ratio> {
    configs(max_threads)
        .into_iter()
        .filter_map(|c| {
            of_runs(&c.label(), "Ice C++ server", values_of(series, Side::Floe, c), values_of(series, Side::Ice, c))
        })
        .collect()
}

fn charts(series: &[Series], max_threads: usize) -> String {
    let configs = configs(max_threads);
    let categories: Vec<String> = configs.iter().map(|c| c.label()).collect();
    let groups: Vec<Group> = SERVERS
        .iter()
        .map(|&side| Group {
            name: match side {
                Side::Raw => "raw (a thread per connection)".to_string(),
                other => other.name().to_string(),
            },
            values: configs
                .iter()
                .map(|&c| {
                    let c = if side == Side::Raw { Config { threads: 1, ..c } } else { c };
                    Spread::of(values_of(series, side, c))
                })
                .collect(),
        })
        .collect();
    crate::charts::bars("Scaling: twoway calls/s by clients and server threads (median, min–max)", "calls/s", &categories, &groups)
}

#[derive(Debug, Serialize)]
struct Record {
    system: String,
    test: String,
    metric: &'static str,
    clients: usize,
    threads: usize,
    unit: &'static str,
    median: f64,
    runs: usize,
}

fn json_records(series: &[Series]) -> Vec<serde_json::Value> {
    series
        .iter()
        .filter_map(|s| {
            let median = crate::stats::middle(&s.values)?;
            Some(crate::json::record(&Record {
                system: format!("{} server", s.server.name()),
                test: format!("scaling/{}c{}t", s.config.clients, s.config.threads),
                metric: "scaling",
                clients: s.config.clients,
                threads: s.config.threads,
                unit: "calls/s",
                median: round_to(median, 1),
                runs: s.values.len(),
            }))
        })
        .collect()
}

/// The scaling stage, with the Ice peer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scaling;

impl Scaling {
    fn max_threads(ctx: &Context) -> usize {
        ctx.args
            .max_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
            .max(1)
    }
}

impl Suite for Scaling {
    type Results = Result<(Vec<Series>, Vec<String>), String>;

    fn name(&self) -> &'static str {
        "scaling"
    }

    fn title(&self) -> &'static str {
        "Scaling"
    }

    fn selected(&self, ctx: &Context) -> bool {
        ctx.args.peer("ice") && ctx.args.runs_suite(self.name())
    }

    fn systems(&self, _ctx: &Context) -> Vec<String> {
        SERVERS.iter().map(|s| format!("{} server", s.name())).collect()
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        let ice37 = crate::cross::build_tester_peer()?;
        let peers = IcePeers { ice37, ice38: None };
        Ok(run(ctx.args.quick, ctx.stage_rounds(), Self::max_threads(ctx), &peers))
    }

    fn table(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok((series, notes)) => table(series, Self::max_threads(ctx), ctx.stage_rounds(), notes),
            Err(_) => String::new(),
        }
    }

    fn terminal(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok(_) => format!("\n{}\n", self.table(ctx, r)),
            Err(e) => format!("note: scaling skipped: {e}\n"),
        }
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        match r {
            Ok((series, _)) => {
                let mut s = format!("<h2 id=\"scaling\">{}</h2>\n", self.title());
                s.push_str(&charts(series, Self::max_threads(ctx)));
                s.push_str(&crate::suite::table_html(&self.table(ctx, r)));
                s
            }
            Err(_) => String::new(),
        }
    }

    fn summary(&self, ctx: &Context, r: &Self::Results) -> Option<StageSummary> {
        let (series, _) = r.as_ref().ok()?;
        StageSummary::new("scaling", "configurations", ratios(series, Self::max_threads(ctx)))
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
    fn configurations_cover_every_client_and_thread_count() {
        assert_eq!(configs(2).len(), 4);
        assert_eq!(configs(3).len(), 9);
        assert_eq!(configs(0), vec![Config { clients: 1, threads: 1 }]);
    }

    #[test]
    fn the_table_gives_floes_ratio_and_the_growth_to_n() {
        let mk = |server, clients, threads, v: f64| Series { server, config: Config { clients, threads }, values: vec![v] };
        let series = vec![
            mk(Side::Floe, 1, 1, 40_000.0),
            mk(Side::Ice, 1, 1, 20_000.0),
            mk(Side::Raw, 1, 1, 50_000.0),
            mk(Side::Floe, 2, 2, 72_000.0),
            mk(Side::Ice, 2, 2, 30_000.0),
            mk(Side::Raw, 2, 1, 90_000.0),
        ];
        let t = table(&series, 2, 1, &[]);
        assert!(t.contains("| 1 | 1 | 40.0k | 20.0k | 2.00 | 50.0k |"), "{t}");
        assert!(t.contains("| 2 | 2 | 72.0k | 30.0k | 2.40 | 90.0k |"), "{t}");
        assert!(t.contains("floe 1.80× (90% of linear), Ice C++ 1.50× (75% of linear)"), "{t}");
        assert_eq!(json_records(&series).len(), 6);
    }
}
