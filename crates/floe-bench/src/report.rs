//! The rate tests' reports: their records (medians and ranges per system × test), the
//! terminal table, the JSON records, the HTML table and SVG charts, and the README's Markdown
//! tables; and the cells the other suites' tables share.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::charts::{self, Group, Spread};
use crate::stats::{median, pooled_steps, round_to, spread, StepStats};
use crate::summary::{Ratio, StageSummary};
use crate::tests::{Kind, Test};

/// One measurement.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// The run (0, 1, …) the measurement belongs to.
    pub(crate) run: usize,
    /// System name.
    pub(crate) system: &'static str,
    /// Test name.
    pub(crate) test: &'static str,
    /// Operations per second.
    pub(crate) rate: f64,
    /// Server CPU seconds per 100,000 operations.
    pub server_cpu_per_100k: f64,
    /// Server peak RSS so far, kB.
    pub(crate) server_peak_rss_kb: u64,
    /// Demarey statistics of the series: per-call µs (mean, min, max, std-dev).
    pub(crate) steps: Option<StepStats>,
}

/// Summary of one system × test.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// System.
    pub(crate) system: &'static str,
    /// Test.
    pub(crate) test: &'static str,
    /// Unit of the rate.
    pub(crate) unit: &'static str,
    /// Median rate.
    pub(crate) median: f64,
    /// Smallest rate.
    pub(crate) min: f64,
    /// Largest rate.
    pub(crate) max: f64,
    /// Number of runs.
    pub(crate) runs: usize,
    /// Median server CPU seconds per 100k operations.
    pub cpu_per_100k: f64,
    /// Largest server peak RSS seen, kB.
    pub(crate) peak_rss_kb: u64,
    /// Payload bytes per operation (throughput tests).
    pub(crate) payload: usize,
    /// Bytes on the wire for one request and its reply.
    pub(crate) wire: (usize, usize),
    /// Demarey statistics over all series (mean, min, max, std-dev of per-call µs).
    pub(crate) steps: Option<StepStats>,
    /// What the client process used (measured for the twoway test).
    pub(crate) client: Option<ClientResources>,
}

/// A client process's resource use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientResources {
    /// CPU seconds (user + system) per 100,000 operations.
    pub(crate) cpu_per_100k: f64,
    /// Peak RSS, kB.
    pub(crate) peak_rss_kb: u64,
}

fn samples_steps(records: &[Record], system: &str) -> Vec<StepStats> {
    records.iter().filter(|r| r.system == system && r.test == "demarey").filter_map(|r| r.steps).collect()
}

/// The systems of the rate tables, in their columns' order: floe, the raw-socket baseline, the
/// bare tokio baseline (`src/tokio_baseline.rs`, twoway tests only), Ice C++ and tonic.
const SYSTEMS: [&str; 5] = ["floe", "raw", "tokio", "ice-cpp", "tonic"];

/// Medians and ranges per system × test.
pub(crate) fn summarize(tests: &[Test], samples: &[Sample]) -> Vec<Record> {
    let mut out = Vec::new();
    for t in tests {
        for system in SYSTEMS {
            let s: Vec<&Sample> = samples.iter().filter(|s| s.test == t.name && s.system == system).collect();
            if s.is_empty() {
                continue;
            }
            let rates: Vec<f64> = s.iter().map(|x| x.rate).collect();
            let cpu: Vec<f64> = s.iter().map(|x| x.server_cpu_per_100k).collect();
            let (min, max) = spread(&rates);
            let steps: Vec<StepStats> = s.iter().filter_map(|x| x.steps).collect();
            out.push(Record {
                system,
                test: t.name,
                unit: t.unit,
                median: median(&rates),
                min,
                max,
                runs: s.len(),
                cpu_per_100k: median(&cpu),
                peak_rss_kb: s.iter().map(|x| x.server_peak_rss_kb).max().unwrap_or(0),
                payload: t.payload,
                wire: crate::raw::wire_sizes(t),
                // Every step of every series pooled.
                steps: pooled_steps(&steps),
                client: None,
            });
        }
    }
    out
}

fn find<'a>(records: &'a [Record], test: &str, system: &str) -> Option<&'a Record> {
    records.iter().find(|r| r.test == test && r.system == system)
}

fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}

/// The machine the run was taken on.
pub(crate) fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    format!("{cpu}, {cores} cores")
}

/// The terminal table.
pub(crate) fn table(tests: &[Test], records: &[Record], machine: &str, elapsed: Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nfloe-bench on {machine} ({:.0} s); medians over interleaved runs, min–max in brackets",
        elapsed.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "{:<20} {:>24} {:>24} {:>24} {:>24} {:>24} {:>9} {:>10} {:>9} {:>10} {:>10} {:>16}",
        "test",
        "floe",
        "raw socket",
        "tokio",
        "ice-cpp",
        "tonic",
        "floe/raw",
        "floe/tokio",
        "floe/ice",
        "floe/tonic",
        "floe Mbit/s",
        "wire req/reply B"
    );
    for t in tests {
        let cell = |sys: &str| match find(records, t.name, sys) {
            Some(r) => format!("{} [{}–{}]", human(r.median), human(r.min), human(r.max)),
            None => "-".into(),
        };
        let f = find(records, t.name, "floe");
        let ratio = |sys: &str| match (f, find(records, t.name, sys)) {
            (Some(a), Some(b)) if b.median > 0.0 => format!("{:.2}", a.median / b.median),
            _ => "-".into(),
        };
        let mbit = match f {
            Some(r) if t.payload > 0 => format!("{:.0}", r.median * t.payload as f64 * 8.0 / 1e6),
            _ => "".into(),
        };
        let (req, rep) = crate::raw::wire_sizes(t);
        let _ = writeln!(
            s,
            "{:<20} {:>24} {:>24} {:>24} {:>24} {:>24} {:>9} {:>10} {:>9} {:>10} {:>10} {:>16}",
            t.name,
            cell("floe"),
            cell("raw"),
            cell("tokio"),
            cell("ice-cpp"),
            cell("tonic"),
            ratio("raw"),
            ratio("tokio"),
            ratio("ice-cpp"),
            ratio("tonic"),
            mbit,
            format!("{req}/{rep}")
        );
    }
    let _ = writeln!(s, "\nDemarey method (per-call µs over every step of every series: mean, min, max, std-dev):");
    for sys in SYSTEMS {
        let v: Vec<StepStats> = samples_steps(records, sys);
        if let Some((mean, min, max, sd)) = v.first() {
            let _ = writeln!(s, "  {sys:<8} mean {mean:>7.2}  min {min:>7.2}  max {max:>7.2}  std-dev {sd:>6.2}");
        }
    }
    let _ = writeln!(
        s,
        "\nresources (CPU seconds per 100k twoway calls; peak RSS: the server's over the run, the twoway client's):"
    );
    for r in resources(records) {
        let _ = writeln!(
            s,
            "  {:<8} server: CPU {:>6} s, peak RSS {:>5.1} MB   client: CPU {:>6} s, peak RSS {:>8}",
            r.system, r.server_cpu, r.server_rss_mb, r.client_cpu, r.client_rss
        );
    }
    s
}

/// One system's resource figures, formatted: server CPU seconds per 100k twoway calls, server
/// peak RSS over the run (MB), and the twoway client's CPU and peak RSS ("-" when not measured).
struct ResourceRow {
    system: &'static str,
    server_cpu: String,
    server_rss_mb: f64,
    client_cpu: String,
    client_rss: String,
}

fn resources(records: &[Record]) -> Vec<ResourceRow> {
    let mut rows = Vec::new();
    for system in SYSTEMS {
        let rs: Vec<&Record> = records.iter().filter(|r| r.system == system).collect();
        if rs.is_empty() {
            continue;
        }
        let peak = rs.iter().map(|r| r.peak_rss_kb).max().unwrap_or(0);
        let twoway = rs.iter().find(|r| r.test == "twoway");
        let (client_cpu, client_rss) = match twoway.and_then(|r| r.client) {
            Some(c) => (format!("{:.2}", c.cpu_per_100k), format!("{:.1} MB", c.peak_rss_kb as f64 / 1024.0)),
            None => ("-".into(), "-".into()),
        };
        rows.push(ResourceRow {
            system,
            server_cpu: twoway.map(|r| format!("{:.2}", r.cpu_per_100k)).unwrap_or("-".into()),
            server_rss_mb: peak as f64 / 1024.0,
            client_cpu,
            client_rss,
        });
    }
    rows
}

/// The HTML table of resources: server CPU per 100k twoway calls and peak RSS over the run,
/// and the same for the twoway client when it was measured.
fn resources_table(s: &mut String, records: &[Record]) {
    s.push_str("<h3>Resources</h3><table><tr><th>system</th><th>server CPU s / 100k twoway calls</th><th>server peak RSS</th><th>client CPU s / 100k twoway calls</th><th>client peak RSS</th></tr>");
    for r in resources(records) {
        let _ = write!(
            s,
            "<tr><td style=\"text-align:left\">{}</td><td>{}</td><td>{:.1} MB</td><td>{}</td><td>{}</td></tr>",
            r.system, r.server_cpu, r.server_rss_mb, r.client_cpu, r.client_rss
        );
    }
    s.push_str("</table>");
}

/// The HTML table of the rate tests: per test, its seed, unit, every system's median and
/// floe's ratios.
fn html_table(s: &mut String, tests: &[Test], records: &[Record]) {
    s.push_str("<table><tr><th>test</th><th>seed</th><th>unit</th><th>floe</th><th>raw socket</th><th>tokio</th><th>ice-cpp</th><th>tonic</th><th>floe/raw</th><th>floe/tokio</th><th>floe/ice</th><th>floe/tonic</th></tr>");
    for t in tests {
        let f = find(records, t.name, "floe");
        let cell = |sys: &str| find(records, t.name, sys).map(|r| human(r.median)).unwrap_or("-".into());
        let ratio = |sys: &str| match (f, find(records, t.name, sys)) {
            (Some(a), Some(b)) if b.median > 0.0 => format!("{:.2}", a.median / b.median),
            _ => "-".into(),
        };
        let _ = write!(
            s,
            "<tr><td style=\"text-align:left\">{}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(t.title),
            html_escape(t.seed),
            t.unit,
            cell("floe"),
            cell("raw"),
            cell("tokio"),
            cell("ice-cpp"),
            cell("tonic"),
            ratio("raw"),
            ratio("tokio"),
            ratio("ice-cpp"),
            ratio("tonic")
        );
    }
    s.push_str("</table>");
}

/// The JSON record of one system × test.
#[derive(Debug, Serialize)]
struct JsonRecord<'a> {
    system: &'a str,
    test: &'a str,
    metric: &'a str,
    unit: &'a str,
    median: f64,
    min: f64,
    max: f64,
    runs: usize,
    server_cpu_s_per_100k: f64,
    server_peak_rss_kb: u64,
    client_cpu_s_per_100k: Option<f64>,
    client_peak_rss_kb: Option<u64>,
    payload_bytes: usize,
    request_bytes: usize,
    reply_bytes: usize,
}

/// One JSON record per system × test.
pub(crate) fn json_records(records: &[Record]) -> Vec<serde_json::Value> {
    records
        .iter()
        .map(|r| {
            crate::json::record(&JsonRecord {
                system: r.system,
                test: r.test,
                metric: "rate",
                unit: r.unit,
                median: round_to(r.median, 3),
                min: round_to(r.min, 3),
                max: round_to(r.max, 3),
                runs: r.runs,
                server_cpu_s_per_100k: round_to(r.cpu_per_100k, 4),
                server_peak_rss_kb: r.peak_rss_kb,
                client_cpu_s_per_100k: r.client.map(|c| round_to(c.cpu_per_100k, 4)),
                client_peak_rss_kb: r.client.map(|c| c.peak_rss_kb),
                payload_bytes: r.payload,
                request_bytes: r.wire.0,
                reply_bytes: r.wire.1,
            })
        })
        .collect()
}

/// The start of the HTML report, up to its body.
pub(crate) const HTML_HEAD: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>floe-bench</title><style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#eee}pre{font-size:12px;overflow-x:auto;background:#f8f8f8;padding:6px}figure.chart{margin:1em 0}figcaption{font-size:13px;color:#444;max-width:900px}ul.verdicts{font-size:15px;line-height:1.5}details{margin:1em 0}</style></head><body>";

/// The peers of floe in the rate tests, with the names the report gives them.
const PEERS: [(&str, &str); 4] = [("raw", "raw"), ("ice-cpp", "Ice C++"), ("tonic", "tonic"), ("tokio", "tokio")];

/// The rate of every run of `system` on `test`, by run.
fn runs_of(samples: &[Sample], test: &str, system: &str) -> Vec<(usize, f64)> {
    samples.iter().filter(|s| s.test == test && s.system == system).map(|s| (s.run, s.rate)).collect()
}

/// floe's ratio to each peer on each of `tests`: the ratio of the medians, with the spread of
/// the ratios of the runs (floe's rate in a run over the peer's in the same run).
fn ratios(tests: &[&Test], records: &[Record], samples: &[Sample]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for t in tests {
        let floe = runs_of(samples, t.name, "floe");
        for (system, peer) in PEERS {
            let of_peer = runs_of(samples, t.name, system);
            let per_run: Vec<f64> = floe
                .iter()
                .filter_map(|(run, f)| {
                    of_peer.iter().find(|(r, _)| r == run).filter(|(_, p)| *p > 0.0).map(|(_, p)| f / p)
                })
                .collect();
            let median = |sys: &str| find(records, t.name, sys).map(|r| r.median);
            out.extend(Ratio::new(t.name, peer, median("floe"), median(system), &per_run));
        }
    }
    out
}

/// The rate tests' part of the summary: floe's ratios on the README's headline tests that
/// ran.
pub(crate) fn summary(tests: &[Test], records: &[Record], samples: &[Sample]) -> Option<StageSummary> {
    let headline: Vec<&Test> = tests.iter().filter(|t| HEADLINE.iter().any(|(h, _)| *h == t.name)).collect();
    StageSummary::new("rates", "headline tests", ratios(&headline, records, samples))
}

/// The median and min–max of `system` on `test`, through `f` (a rate to Mbit/s, say).
fn spread_of(records: &[Record], test: &str, system: &str, f: impl Fn(f64) -> f64) -> Option<Spread> {
    find(records, test, system).map(|r| Spread { mid: f(r.median), low: f(r.min), high: f(r.max) })
}

/// The scaling charts: twoway calls/s against the number of clients, one chart per server
/// size (on their defaults, and each exact thread count), one line per system.
fn scaling_charts(s: &mut String, tests: &[Test], records: &[Record], systems: &[&str]) {
    let twoway: Vec<&Test> = tests.iter().filter(|t| t.kind == Kind::Twoway && !t.ssl).collect();
    let mut sizes: Vec<Option<usize>> = twoway.iter().map(|t| t.threads).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let mut points: Vec<&Test> = twoway.iter().copied().filter(|t| t.threads == size).collect();
        points.sort_by_key(|t| t.clients);
        points.dedup_by_key(|t| t.clients);
        if points.len() < 2 {
            continue;
        }
        let groups: Vec<Group> = systems
            .iter()
            .map(|sys| Group {
                name: sys.to_string(),
                values: points.iter().map(|t| spread_of(records, t.name, sys, |v| v)).collect(),
            })
            .collect();
        let xs: Vec<f64> = points.iter().map(|t| t.clients as f64).collect();
        let server = match size {
            None => "servers on their defaults".to_string(),
            Some(n) => format!("servers with {n} thread(s)"),
        };
        s.push_str(&charts::lines(
            &format!("Scaling: twoway calls/s by clients, {server}"),
            ("clients, each on its own connection (log scale)", "calls/s"),
            &xs,
            &groups,
            charts::axis_label,
        ));
    }
}

/// The rate tests' part of the HTML report: floe's ratio to each peer per test (and per
/// batched-oneway payload variant), throughput against message size, scaling with clients,
/// twoway latency by the Demarey method, the resources, then the table (`table`, the terminal's) and the notes.
pub(crate) fn html(tests: &[Test], records: &[Record], samples: &[Sample], table: &str, notes: &[String]) -> String {
    let mut s = String::from("<h2 id=\"rates\">Rate tests</h2>\n");
    let (payload, plain): (Vec<&Test>, Vec<&Test>) = tests.iter().partition(|t| t.kind.is_payload());
    for (title, set) in [
        ("floe against each peer, per rate test (median ratio, min–max of the runs)", &plain),
        ("Batched oneways with a payload: floe against each peer, per variant", &payload),
    ] {
        let r = ratios(set, records, samples);
        if r.is_empty() {
            continue;
        }
        let _ = write!(s, "<p>{}</p>", html_escape(&crate::summary::verdict("rates", "tests", &r)));
        let rows: Vec<(String, &Ratio)> = r.iter().map(|x| (x.test.to_string(), x)).collect();
        s.push_str(&crate::summary::ratio_chart(title, &rows));
    }
    let present: Vec<&str> = SYSTEMS.iter().copied().filter(|sys| records.iter().any(|r| r.system == *sys)).collect();
    let sweep: Vec<&Test> = tests.iter().filter(|t| t.sweep && t.payload > 0).collect();
    let groups: Vec<Group> = present
        .iter()
        .map(|sys| Group {
            name: sys.to_string(),
            values: sweep
                .iter()
                .map(|t| spread_of(records, t.name, sys, |v| v * t.payload as f64 * 8.0 / 1e6))
                .collect(),
        })
        .collect();
    let xs: Vec<f64> = sweep.iter().map(|t| t.payload as f64).collect();
    s.push_str(&charts::lines(
        "Throughput by message size (median, min–max of the runs)",
        ("payload bytes per call (log scale)", "Mbit/s of payload"),
        &xs,
        &groups,
        charts::bytes_label,
    ));
    scaling_charts(&mut s, tests, records, &present);
    let demarey: Vec<Group> = present
        .iter()
        .filter_map(|sys| {
            let (mean, min, max, _) = find(records, "demarey", sys)?.steps?;
            Some(Group { name: sys.to_string(), values: vec![Some(Spread { mid: mean, low: min, high: max })] })
        })
        .collect();
    s.push_str(&charts::bars(
        "Twoway latency per call, Demarey method (mean of the steps, min–max)",
        "µs per call",
        &["twoway o()".to_string()],
        &demarey,
    ));
    // Resources: per side (server, twoway client), one bar per system.
    let rows = resources(records);
    let exact = |v: Option<f64>| v.map(|v| Spread { mid: v, low: v, high: v });
    let groups = |f: &dyn Fn(&ResourceRow) -> [Option<f64>; 2]| -> Vec<Group> {
        rows.iter().map(|r| Group { name: r.system.into(), values: f(r).into_iter().map(exact).collect() }).collect()
    };
    let sides = ["server".to_string(), "twoway client".to_string()];
    let cpu = groups(&|r| [r.server_cpu.parse().ok(), r.client_cpu.parse().ok()]);
    s.push_str(&charts::bars("CPU seconds per 100,000 twoway calls", "CPU s / 100k calls", &sides, &cpu));
    let client_rss =
        |sys: &str| find(records, "twoway", sys).and_then(|t| t.client).map(|c| c.peak_rss_kb as f64 / 1024.0);
    let rss = groups(&|r| [Some(r.server_rss_mb), client_rss(r.system)]);
    s.push_str(&charts::bars("Peak RSS (the server's over the run, the twoway client's)", "MB", &sides, &rss));
    html_table(&mut s, tests, records);
    resources_table(&mut s, records);
    let _ = write!(
        s,
        "<details><summary>The terminal's table, with min–max</summary><pre>{}</pre></details>",
        html_escape(table)
    );
    if !notes.is_empty() {
        s.push_str("<h3>Notes</h3><ul>");
        for n in notes {
            let _ = write!(s, "<li>{}</li>", html_escape(n));
        }
        s.push_str("</ul>");
    }
    s
}

pub(crate) use crate::charts::html_escape;

/// The tests of the README's headline table, with the label each row has there.
const HEADLINE: &[(&str, &str)] = &[
    ("twoway", "twoway `o()` (32 B / 25 B), calls/s"),
    ("demarey", "twoway, Demarey method, calls/s"),
    ("oneway", "oneway `o()`, calls/s"),
    ("batch-send", "batched oneway `o()`, sender side (TEST1), req/s"),
    ("batch-delivered", "batched oneway `incr()`, delivered (TEST2), req/s"),
    ("batch-twoway", "batched twoway (1000/batch), calls/s"),
    ("ami", "async twoway, 100 in flight, calls/s"),
    ("bytes-send", "send 500,000 bytes, calls/s"),
    ("bytes-recv", "receive 500,000 bytes, calls/s"),
    ("fixed-send", "send 50,000 `{int,int,double}`, calls/s"),
    ("fixed-recv", "receive 50,000 `{int,int,double}`, calls/s"),
    ("strings-send", "send 50,000 `{string,double}`, calls/s"),
    ("strings-recv", "receive 50,000 `{string,double}`, calls/s"),
    ("work-10", "servant busy 10 µs, calls/s"),
    ("work-150", "servant busy 150 µs, calls/s"),
    ("clients-5", "5 clients, servers on their defaults, calls/s"),
    ("clients-5-threads-4", "5 clients, server with 4 threads, calls/s"),
    ("ssl-twoway", "twoway `o()` over ssl, calls/s"),
    ("ssl-bytes-send", "send 500,000 bytes over ssl, calls/s"),
    ("ssl-bytes-recv", "receive 500,000 bytes over ssl, calls/s"),
];

/// A rate or ratio with three significant digits (`18.2k`, `2.96M`, `230M`, `0.85`, `139`).
fn three_digits(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return format!("{v:.2}");
    }
    // Round first, so that a carry picks the unit and the decimals (999,999 is 1.00M).
    let scale = 10f64.powi(v.log10().floor() as i32 - 2);
    let v = (v / scale).round() * scale;
    let (x, suffix) = if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let decimals = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.decimals$}{suffix}")
}

/// The UTC date of `time` as `YYYY-MM-DD`.
fn utc_date(time: std::time::SystemTime) -> String {
    let days = time.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0) as i64;
    // Days since 1970-01-01 to a proleptic Gregorian date, counting in 400-year eras that
    // start on 1 March (so that the leap day ends a year).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The README's tables in Markdown: the headline tests (medians, ratios to the raw baseline,
/// Ice C++ and tonic) and the batched-oneway payload matrix, headed by the machine, the date
/// and the run's length. Tests that did not run are left out; systems that did not run show
/// `–`.
pub(crate) fn markdown(records: &[Record], machine: &str, elapsed: Duration, when: std::time::SystemTime) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "floe-bench on {machine}, {}, {:.0} s; medians over interleaved runs.\n",
        utc_date(when),
        elapsed.as_secs_f64()
    );
    let median = |test: &str, sys: &str| find(records, test, sys).map(|r| r.median);
    let cell = |v: Option<f64>| v.map(three_digits).unwrap_or_else(|| "–".into());
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => three_digits(a / b),
        _ => "–".into(),
    };
    s.push_str(
        "| test | floe | raw socket | tokio | Ice C++ | tonic | floe/raw | floe/tokio | floe/Ice | floe/tonic |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for (test, label) in HEADLINE {
        let floe = median(test, "floe");
        if floe.is_none() {
            continue;
        }
        let (raw, ice, tonic) = (median(test, "raw"), median(test, "ice-cpp"), median(test, "tonic"));
        let tokio = median(test, "tokio");
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(floe),
            cell(raw),
            cell(tokio),
            cell(ice),
            cell(tonic),
            ratio(floe, raw),
            ratio(floe, tokio),
            ratio(floe, ice),
            ratio(floe, tonic)
        );
    }
    let payload_rows: Vec<(&str, usize, String, String)> =
        std::iter::once(("v", 0, "batch-send".into(), "batch-delivered".into()))
            .chain(crate::tests::PAYLOAD_TESTS.iter().filter(|t| t.kind == Kind::BatchSendPayload).map(|t| {
                let v = t.payload_variant();
                (v, t.payload, t.name.to_string(), format!("batch-delivered-{v}"))
            }))
            .filter(|(_, _, send, delivered)| median(send, "floe").is_some() || median(delivered, "floe").is_some())
            .collect();
    if payload_rows.len() > 1 {
        s.push_str(
            "\n| payload | sender: floe | raw | Ice C++ | floe/Ice | delivered: floe | raw | Ice C++ | floe/Ice |\n",
        );
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        for (variant, bytes, send, delivered) in payload_rows {
            let (sf, sr, si) = (median(&send, "floe"), median(&send, "raw"), median(&send, "ice-cpp"));
            let (df, dr, di) = (median(&delivered, "floe"), median(&delivered, "raw"), median(&delivered, "ice-cpp"));
            let _ = writeln!(
                s,
                "| {variant} ({bytes} B) | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(sf),
                cell(sr),
                cell(si),
                ratio(sf, si),
                cell(df),
                cell(dr),
                cell(di),
                ratio(df, di)
            );
        }
    }
    s
}

/// A figure for the stages' tables: `1.23M`, `45.6k`, `789`, `12.3`, or `–` for none.
pub(crate) fn figure_cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 1e6 => format!("{:.2}M", v / 1e6),
        Some(v) if v.abs() >= 1e4 => format!("{:.1}k", v / 1e3),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "–".into(),
    }
}

/// `a / b` with two decimals, or `–` when either is missing or `b` is not positive.
pub(crate) fn ratio_cell(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "–".into(),
    }
}

#[cfg(test)]
mod markdown_tests {
    use super::*;

    fn record(system: &'static str, test: &'static str, median: f64) -> Record {
        Record {
            system,
            test,
            unit: "calls/s",
            median,
            min: median,
            max: median,
            runs: 1,
            cpu_per_100k: 0.0,
            peak_rss_kb: 0,
            payload: 0,
            wire: (0, 0),
            steps: None,
            client: None,
        }
    }

    #[test]
    fn rates_and_ratios_keep_three_significant_digits() {
        let cases =
            [(18_234.0, "18.2k"), (2_960_000.0, "2.96M"), (230_400_000.0, "230M"), (0.8512, "0.85"), (139.4, "139")];
        for (v, want) in cases {
            assert_eq!(three_digits(v), want, "{v}");
        }
        assert_eq!(three_digits(99.96), "100", "a carry into the next digit drops a decimal");
        assert_eq!(three_digits(999_999.0), "1.00M", "a carry into the next unit");
        assert_eq!(three_digits(0.0), "0.00");
    }

    #[test]
    fn dates_are_utc_calendar_days() {
        let at = |secs: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        assert_eq!(utc_date(at(0)), "1970-01-01");
        assert_eq!(utc_date(at(951_782_400)), "2000-02-29");
        assert_eq!(utc_date(at(1_795_996_800)), "2026-11-30");
        assert_eq!(utc_date(at(1_795_996_800 - 1)), "2026-11-29");
    }

    #[test]
    fn the_tables_hold_what_ran_and_mark_what_did_not() {
        let records = vec![
            record("floe", "twoway", 18_200.0),
            record("raw", "twoway", 21_400.0),
            record("tokio", "twoway", 20_000.0),
            record("ice-cpp", "twoway", 17_300.0),
            record("floe", "batch-send", 230e6),
            record("ice-cpp", "batch-send", 1.65e6),
            record("floe", "batch-delivered-i1", 9.24e6),
        ];
        let md = markdown(&records, "a CPU, 2 cores", Duration::from_secs(600), std::time::UNIX_EPOCH);
        assert!(md.starts_with("floe-bench on a CPU, 2 cores, 1970-01-01, 600 s"), "{md}");
        assert!(
            md.contains(
                "| twoway `o()` (32 B / 25 B), calls/s | 18.2k | 21.4k | 20.0k | 17.3k | – | 0.85 | 0.91 | 1.05 | – |"
            ),
            "{md}"
        );
        assert!(!md.contains("Demarey"), "a test that did not run has no row:\n{md}");
        assert!(md.contains("| v (0 B) | 230M | – | 1.65M | 139 | – | – | – | – |"), "{md}");
        assert!(md.contains("| i1 (4 B) | – | – | – | – | 9.24M | – | – | – |"), "{md}");
        assert!(!md.contains("| d8 (64 B)"), "{md}");
    }
}
