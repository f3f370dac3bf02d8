//! The summary at the top of the HTML report: each suite's ratios of floe to its peers, with
//! the spread of the per-run ratios, drawn in one chart, and one verdict line per stage
//! counting where floe is at least level with each peer.

use std::fmt::Write as _;

use crate::charts::{self, RatioPoint, Spread};

/// floe's ratio to one peer on one test: floe's figure over the peer's, or the peer's over
/// floe's for figures where less is better (latency, memory, CPU), so that above 1 is always
/// floe ahead.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// The test (or figure) the ratio is of.
    pub test: String,
    /// The peer floe is compared with (`raw`, `Ice C++`, `tonic`, `tokio`, `glacier2router`…).
    pub peer: String,
    /// The ratio of the medians, as the suite's table gives it.
    pub median: f64,
    /// The smallest per-run ratio (or the median, if lower).
    pub low: f64,
    /// The largest per-run ratio (or the median, if higher).
    pub high: f64,
}

impl Ratio {
    /// The ratio `floe / peer` of two medians, with the spread of the per-run ratios
    /// `per_run`; `None` when either median is missing or the peer's is not positive.
    pub fn new(test: &str, peer: &str, floe: Option<f64>, of_peer: Option<f64>, per_run: &[f64]) -> Option<Ratio> {
        let (f, p) = (floe?, of_peer?);
        if p <= 0.0 || !f.is_finite() {
            return None;
        }
        let s = Spread::around(f / p, per_run);
        Some(Ratio { test: test.to_string(), peer: peer.to_string(), median: s.mid, low: s.low, high: s.high })
    }

    /// The same ratio turned over (`peer / floe`), for figures where less is better.
    pub fn inverted(self) -> Option<Ratio> {
        (self.median > 0.0 && self.low > 0.0).then(|| Ratio {
            median: 1.0 / self.median,
            low: 1.0 / self.high,
            high: 1.0 / self.low,
            ..self
        })
    }

    /// Whether floe is at least level with the peer: the ratio, rounded to the two decimals
    /// the tables show, is 1.00 or more.
    pub fn level_or_ahead(&self) -> bool {
        (self.median * 100.0).round() >= 100.0
    }
}

/// floe's ratio to a peer from two series of runs taken side by side: the ratio of their
/// medians (the middle values, as the stages' tables take them) with the spread of the
/// per-run ratios.
pub fn of_runs(test: &str, peer: &str, floe: &[f64], of_peer: &[f64]) -> Option<Ratio> {
    let m = crate::stats::middle;
    Ratio::new(test, peer, m(floe), m(of_peer), &per_run(floe, of_peer))
}

/// Per-run ratios of two series of runs taken side by side (`a[i] / b[i]`), over the runs
/// both have.
pub fn per_run(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).filter(|(_, b)| **b > 0.0).map(|(a, b)| a / b).collect()
}

/// A suite's part of the summary: its ratios and its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct StageSummary {
    /// The stage's name, as the verdict and the chart's rows give it.
    pub stage: String,
    /// floe's ratios to the stage's peers.
    pub ratios: Vec<Ratio>,
    /// One line: on how many of the stage's tests floe is at least level with each peer.
    pub verdict: String,
}

impl StageSummary {
    /// The summary of `stage` with `ratios`, its verdict counted from them (`what` names the
    /// rows: "tests", "figures"); `None` without ratios.
    pub fn new(stage: &str, what: &str, ratios: Vec<Ratio>) -> Option<StageSummary> {
        if ratios.is_empty() {
            return None;
        }
        Some(StageSummary { stage: stage.to_string(), verdict: verdict(stage, what, &ratios), ratios })
    }
}

/// The verdict line of a stage: `rates: floe ≥ Ice C++ on 13 of 13 tests, ≥ raw on 9 of 13`,
/// with the peers in the order of their first ratio.
pub fn verdict(stage: &str, what: &str, ratios: &[Ratio]) -> String {
    let mut peers: Vec<&str> = Vec::new();
    for r in ratios {
        if !peers.contains(&r.peer.as_str()) {
            peers.push(&r.peer);
        }
    }
    let mut s = format!("{stage}: floe");
    for (i, peer) in peers.iter().enumerate() {
        let of_peer: Vec<&Ratio> = ratios.iter().filter(|r| r.peer == *peer).collect();
        let ahead = of_peer.iter().filter(|r| r.level_or_ahead()).count();
        let _ = write!(s, "{} ≥ {peer} on {ahead} of {}", if i == 0 { "" } else { "," }, of_peer.len());
        if i == 0 {
            let _ = write!(s, " {what}");
        }
    }
    s
}

/// The chart of a set of ratios, each row labelled by `label`.
pub(crate) fn ratio_chart(title: &str, ratios: &[(String, &Ratio)]) -> String {
    let points: Vec<RatioPoint> = ratios
        .iter()
        .map(|(row, r)| RatioPoint {
            row: row.clone(),
            peer: r.peer.clone(),
            ratio: Spread { mid: r.median, low: r.low, high: r.high },
        })
        .collect();
    charts::ratios(title, &points)
}

/// The summary section of the report: the verdicts, then one chart of every stage's ratios.
pub fn html(stages: &[StageSummary]) -> String {
    if stages.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h2 id=\"summary\">Summary</h2>\n<ul class=\"verdicts\">");
    for st in stages {
        let _ = write!(s, "<li>{}</li>", charts::html_escape(&st.verdict));
    }
    s.push_str("</ul>\n");
    let rows: Vec<(String, &Ratio)> =
        stages.iter().flat_map(|st| st.ratios.iter().map(move |r| (format!("{}: {}", st.stage, r.test), r))).collect();
    s.push_str(&ratio_chart("floe against each peer, per test (median ratio, min–max of the runs)", &rows));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_spreads_and_verdicts() {
        let r = Ratio::new("twoway", "raw", Some(90.0), Some(100.0), &per_run(&[80.0, 95.0], &[100.0, 100.0])).unwrap();
        assert_eq!((r.median, r.low, r.high), (0.9, 0.8, 0.95));
        assert!(!r.level_or_ahead());
        let inv = r.clone().inverted().unwrap();
        assert!((inv.median - 1.0 / 0.9).abs() < 1e-12 && (inv.high - 1.25).abs() < 1e-12);
        assert!(Ratio::new("x", "raw", Some(1.0), Some(0.0), &[]).is_none());
        let ice = |m: f64| Ratio { test: "t".into(), peer: "Ice C++".into(), median: m, low: m, high: m };
        let ratios = vec![ice(1.2), r.clone(), ice(0.996), ice(0.9)];
        assert_eq!(verdict("rates", "tests", &ratios), "rates: floe ≥ Ice C++ on 2 of 3 tests, ≥ raw on 0 of 1");
        assert!(StageSummary::new("rates", "tests", vec![]).is_none());
    }
}
