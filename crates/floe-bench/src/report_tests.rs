//! The HTML report rendered by headless Chromium: a report from a fixed set of synthetic
//! results of every suite (no benchmark runs), loaded with a script that measures each chart
//! as the browser drew it. The test fails if a chart is missing, has no size, or has nothing
//! plotted in it.
//!
//! Chromium is Debian's `chromium` package (`scripts/install-deps` installs it). With
//! `FLOE_REPORT_SCREENSHOT=PATH` the test also saves a screenshot of the report's top, and with
//! `FLOE_REPORT_HTML=PATH` the report itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use clap::Parser;

use crate::report::{self, Sample};
use crate::suite::{self, Context, Finished};
use crate::tests::every_test;

/// A deterministic spread in [0.9, 1.1) for run `run` of `key`.
fn jitter(key: &str, run: usize) -> f64 {
    let h = key.bytes().fold(run as u64 * 7919 + 17, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    0.9 + (h % 200) as f64 / 1000.0
}

/// Synthetic rate-test results: every test, floe, the raw and tokio baselines, Ice C++ and
/// tonic, three runs each.
fn rate_results() -> crate::rates::RateResults {
    let selected: Vec<crate::tests::Test> = every_test().copied().collect();
    let factor = [("floe", 1.0), ("raw", 1.1), ("tokio", 1.05), ("ice-cpp", 0.8), ("tonic", 0.4)];
    let mut samples = Vec::new();
    for run in 0..3 {
        for t in &selected {
            let base = if t.payload > 0 { 2e9 / t.payload as f64 } else { 20_000.0 * (1 + t.name.len()) as f64 };
            for (system, f) in factor {
                let tonic_or_tokio = matches!(system, "tonic" | "tokio");
                if (system == "ice-cpp" && !t.ice) || (tonic_or_tokio && t.name != "twoway" && t.name != "clients-5") {
                    continue;
                }
                let steps = (t.name == "demarey").then_some((40.0 / f, 30.0 / f, 90.0 / f, 5.0));
                samples.push(Sample {
                    run,
                    system,
                    test: t.name,
                    rate: base * f * jitter(&format!("{system}{}", t.name), run),
                    server_cpu_per_100k: 1.5 / f,
                    server_peak_rss_kb: (8_000.0 / f) as u64,
                    steps,
                });
            }
        }
    }
    let mut records = report::summarize(&selected, &samples);
    for r in records.iter_mut().filter(|r| r.test == "twoway") {
        r.client = Some(report::ClientResources { cpu_per_100k: 2.0, peak_rss_kb: 9_000 });
    }
    crate::rates::RateResults { selected, samples, records, notes: vec!["a note".into()], started: Instant::now() }
}

/// Three rounds of about `v`, different for every `key`.
fn rounds(key: &str, v: f64) -> Vec<f64> {
    (0..3).map(|run| v * jitter(key, run)).collect()
}

/// Synthetic cross pairs: every pair on every test of `--against`.
fn cross_results() -> <crate::cross::Cross as crate::suite::Suite>::Results {
    use crate::cross::{Series, Side};
    let pairs = [(Side::Ice, Side::Floe, 1.1), (Side::Ice, Side::Ice, 1.0), (Side::Ice, Side::Raw, 1.6)];
    let pairs = pairs.into_iter().chain([
        (Side::Floe, Side::Ice, 0.95),
        (Side::Raw, Side::Ice, 1.2),
        (Side::Floe, Side::Floe, 1.3),
    ]);
    let mut series = Vec::new();
    for (client, server, f) in pairs {
        for (test, unit) in crate::against::TESTS {
            let key = format!("{client:?}{server:?}{test}");
            series.push(Series { client, server, test, unit, values: rounds(&key, 20_000.0 * f) });
        }
    }
    Ok((series, vec![]))
}

/// Synthetic locate rounds of every registry and call.
fn locate_results() -> <crate::locate::Locate as crate::suite::Suite>::Results {
    use crate::locate::{Call, Registry, Sample, Series};
    let mut series = Vec::new();
    for (registry, f) in [(Registry::Embedded, 3.0), (Registry::Etcd, 1.5), (Registry::IceGrid, 1.0)] {
        for call in [Call::Adapter, Call::Object] {
            let key = format!("{registry:?}{call:?}");
            let samples = (0..3)
                .map(|run| {
                    let j = jitter(&key, run);
                    Sample { rate: 15_000.0 * f * j, p50_us: 900.0 / f * j, p99_us: 3_000.0 / f * j }
                })
                .collect();
            series.push(Series { registry, call, samples });
        }
    }
    (series, vec![])
}

/// Synthetic router rounds: every path and figure of both pairs.
fn router_results() -> <crate::router::Router as crate::suite::Suite>::Results {
    use crate::router::{Pair, RoutePath, Series};
    let mut series = Vec::new();
    for pair in [Pair::Ice, Pair::Floe] {
        for (path, f) in
            [(RoutePath::Direct, 3.0), (RoutePath::Floe, 2.0), (RoutePath::Glacier2, 1.0), (RoutePath::Relay, 2.5)]
        {
            let figures = [
                ("twoway", 20_000.0),
                ("ami", 80_000.0),
                ("oneway", 300_000.0),
                ("bytes", 2_000.0),
                ("callback", 15_000.0),
            ];
            for (name, v) in figures {
                let key = format!("{pair:?}{path:?}{name}");
                series.push(Series { pair, path, name: name.into(), values: rounds(&key, v * f) });
            }
            for name in ["twoway", "bytes", "callback"] {
                for (q, v) in [("p50", 20.0), ("p99", 60.0)] {
                    let name = format!("{name}_{q}");
                    let key = format!("{pair:?}{path:?}{name}");
                    series.push(Series { pair, path, values: rounds(&key, v / f), name });
                }
            }
        }
    }
    (series, vec![])
}

/// Synthetic storm rounds of every service and case.
fn storm_results() -> <crate::storm::Storm as crate::suite::Suite>::Results {
    use crate::storm::{cases, Series, Service};
    let mut series = Vec::new();
    for (service, f) in [(Service::Floe, 2.0), (Service::IceStorm, 1.0), (Service::Relay, 4.0)] {
        for case in cases() {
            let key = format!("{service:?}{case:?}");
            let events_per_s = rounds(&key, 50_000.0 * f / case.subscribers as f64);
            series.push(Series { service, case, events_per_s, p99_us: rounds(&key, 200.0 / f) });
        }
    }
    (series, vec![])
}

/// Synthetic connections runs of floe, the raw baseline and Ice C++.
fn connections_results() -> <crate::connections::Connections as crate::suite::Suite>::Results {
    let mut outcomes = Vec::new();
    for run in 0..3 {
        for (system, f) in [("floe", 1.0), ("raw", 0.5), ("ice-cpp", 1.5)] {
            let j = jitter(system, run);
            outcomes.push(crate::connections::Outcome {
                system,
                n: 2_000,
                connected: 2_000,
                connect_s: 0.5 * f * j,
                rss_per_conn: 4_000.0 * f * j,
                rss_kb: (5_000, 13_000),
                latencies_us: (1..=1000).map(|v| (v as f64 * f * j) as u32).collect(),
                cpu_us_per_ping: Some(10.0 * f),
                errors: 0,
                first_error: None,
            });
        }
    }
    (outcomes, vec![])
}

/// Synthetic router sessions of floe-router and glacier2router.
fn sessions_results() -> <crate::router_sessions::RouterSessions as crate::suite::Suite>::Results {
    let outcome = |router, f: f64| crate::router_sessions::SessionsOutcome {
        router,
        n: 2_000,
        created: 2_000,
        create_s: 0.4 * f,
        rss_kb: (5_000, 5_000 + (8_000.0 * f) as u64),
        probe_before: Some((20_000.0 / f, 40.0, 15_000.0)),
        probe_during: Some((18_000.0 / f, 45.0, 14_000.0)),
        errors: 0,
        first_error: None,
    };
    (vec![outcome("floe-router", 1.0), outcome("glacier2router", 2.0)], vec![])
}

/// A context with the Ice peer, built by nobody: the suites report as if it had run.
fn context() -> Context {
    let mut ctx = Context::new(crate::cli::Args::parse_from(["floe-bench", "--peers", "none", "--quick"]));
    ctx.ice_dir = Some(PathBuf::from("/nonexistent"));
    ctx
}

/// The report of the synthetic results of every suite.
fn fixture_page(ctx: &Context) -> String {
    let done: Vec<Box<dyn Finished + '_>> = vec![
        suite::finished(crate::rates::Rates, ctx, rate_results()),
        suite::finished(crate::cross::Cross, ctx, cross_results()),
        suite::finished(crate::locate::Locate, ctx, locate_results()),
        suite::finished(crate::router::Router, ctx, router_results()),
        suite::finished(crate::storm::Storm, ctx, storm_results()),
        suite::finished(crate::router_sessions::RouterSessions, ctx, sessions_results()),
        suite::finished(crate::connections::Connections, ctx, connections_results()),
    ];
    suite::html_page(&ctx.machine, &done)
}

/// The script that measures each chart once the page is laid out: its size and how many
/// plotted elements it has, written into the page as `CHART <index> <width> <height> <marks>`
/// lines of a `<pre id="chart-check">`.
const CHECK_SCRIPT: &str = r#"<script>
window.addEventListener('load', () => {
  const out = document.createElement('pre');
  out.id = 'chart-check';
  document.querySelectorAll('figure.chart').forEach((f, i) => {
    const svg = f.querySelector('svg');
    if (!svg) { out.textContent += `CHART ${i} 0 0 0\n`; return; }
    const r = svg.getBoundingClientRect();
    let marks = 0;
    // Plotted marks: bars (every rect but the white background), dots and lines.
    svg.querySelectorAll('rect, circle, polyline').forEach(e => {
      const b = e.getBoundingClientRect();
      const white = (e.getAttribute('fill') || '').toUpperCase() === '#FFFFFF';
      if ((b.width > 0 || b.height > 0) && !white) marks++;
    });
    out.textContent += `CHART ${i} ${Math.round(r.width)} ${Math.round(r.height)} ${marks}\n`;
  });
  document.body.appendChild(out);
});
</script>"#;

fn chromium() -> Command {
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--user-data-dir=/tmp/floe-bench-chromium",
    ]);
    cmd
}

fn write_page(dir: &Path, page: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("report dir");
    let path = dir.join("report.html");
    std::fs::write(&path, page).expect("write report");
    path
}

#[test]
fn chromium_draws_every_chart_of_the_report() {
    let ctx = context();
    let page = fixture_page(&ctx);
    let charts = page.matches("<figure class=\"chart\">").count();
    // The summary, the rate tests' 9, cross 2, locate 2, router 4, storm 2, router sessions 3
    // and connections 3.
    assert_eq!(charts, 26, "the fixture's report has {charts} charts");
    for stage in ["rates", "cross", "locate", "router", "storm", "router sessions", "connections"] {
        assert!(page.contains(&format!("<li>{stage}: floe ≥ ")), "the summary has a verdict for {stage}");
    }
    assert!(!page.contains("chart not drawn"), "a chart failed to draw");
    if let Ok(keep) = std::env::var("FLOE_REPORT_HTML") {
        std::fs::write(keep, &page).expect("write the report");
    }
    let dir = std::env::temp_dir().join(format!("floe-bench-report-{}", std::process::id()));
    let checked = page.replace("</body>", &format!("{CHECK_SCRIPT}</body>"));
    let path = write_page(&dir, &checked);
    let out = chromium()
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", path.display()))
        .output()
        .expect("chromium runs (Debian's chromium package: bash scripts/install-deps installs it)");
    let dom = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Vec<u64>> = dom
        .split(['\n', '>'])
        .filter_map(|l| l.trim().strip_prefix("CHART "))
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap_or(0)).collect())
        .collect();
    assert_eq!(lines.len(), charts, "every chart is in the rendered page:\n{}", String::from_utf8_lossy(&out.stderr));
    for l in &lines {
        let (i, w, h, marks) = (l[0], l[1], l[2], l[3]);
        assert!(w >= 300 && h >= 150, "chart {i} is drawn {w}×{h}");
        assert!(marks >= 3, "chart {i} has {marks} plotted elements");
    }
    if let Ok(shot) = std::env::var("FLOE_REPORT_SCREENSHOT") {
        let clean = write_page(&dir, &page);
        let status = chromium()
            .args(["--window-size=1100,1400", &format!("--screenshot={shot}")])
            .arg(format!("file://{}", clean.display()))
            .status()
            .expect("chromium screenshot");
        assert!(status.success());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
