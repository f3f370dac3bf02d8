//! The HTML report rendered by headless Chromium: a report from a fixed set of synthetic
//! results of every suite (no benchmark runs), loaded with a script that measures each chart
//! as the browser drew it. The test fails if a chart is missing, has no size, or has nothing
//! plotted in it.
//!
//! Chromium is Debian's `chromium` package (`scripts/install-deps` installs it). With
//! `FLOE_REPORT_SCREENSHOT=PATH` the test also saves a screenshot of the report's top.

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

/// A context with the Ice peer, built by nobody: the suites report as if it had run.
fn context() -> Context {
    let mut ctx = Context::new(crate::cli::Args::parse_from(["floe-bench", "--peers", "none", "--quick"]));
    ctx.ice_dir = Some(PathBuf::from("/nonexistent"));
    ctx
}

/// The report of the synthetic results of every suite.
fn fixture_page(ctx: &Context) -> String {
    let done: Vec<Box<dyn Finished + '_>> = vec![suite::finished(crate::rates::Rates, ctx, rate_results())];
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
    assert!(charts >= 6, "the fixture's report has {charts} charts");
    assert!(!page.contains("chart not drawn"), "a chart failed to draw");
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
