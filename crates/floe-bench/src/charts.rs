//! The HTML report's charts, drawn as SVG by plotters: grouped horizontal bars with the
//! spread of the runs as error bars, ratio dot plots around 1, and lines over a logarithmic
//! x axis (throughput against message size). Each function returns an `<svg>` element inside
//! a `<figure class="chart">`, or nothing when there is nothing to plot.

use std::error::Error;

use plotters::coord::combinators::BindKeyPoints;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

/// A median with the spread of the runs it was taken over (min–max, or of per-run ratios).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    /// The figure shown (the median).
    pub(crate) mid: f64,
    /// The low end of the spread.
    pub(crate) low: f64,
    /// The high end of the spread.
    pub(crate) high: f64,
}

impl Spread {
    /// The median of `values` with their min–max, or `None` for no values.
    #[allow(dead_code)] // used by the stages' charts
    pub(crate) fn of(values: &[f64]) -> Option<Spread> {
        let mid = crate::stats::middle(values)?;
        Some(Spread::around(mid, values))
    }

    /// `mid` with the min–max of `values`, widened to include `mid`.
    pub(crate) fn around(mid: f64, values: &[f64]) -> Spread {
        let low = values.iter().copied().fold(mid, f64::min);
        let high = values.iter().copied().fold(mid, f64::max);
        Spread { mid, low, high }
    }
}

/// One series of a chart: a system (or ratio) and its figure per category (`None` where it
/// was not measured).
#[derive(Debug, Clone)]
pub(crate) struct Group {
    /// The series' name in the legend.
    pub(crate) name: String,
    /// One figure per category.
    pub(crate) values: Vec<Option<Spread>>,
}

/// The colours of the series, in order; floe comes first in every chart.
const PALETTE: [RGBColor; 12] = [
    RGBColor(34, 150, 100),
    RGBColor(215, 110, 40),
    RGBColor(130, 130, 130),
    RGBColor(60, 100, 200),
    RGBColor(160, 80, 160),
    RGBColor(200, 170, 40),
    RGBColor(40, 170, 190),
    RGBColor(150, 40, 60),
    RGBColor(110, 70, 30),
    RGBColor(20, 20, 20),
    RGBColor(120, 190, 80),
    RGBColor(230, 120, 170),
];

const WIDTH: u32 = 920;

/// The colour of each known series, so that a system has the same colour in every chart:
/// floe green, the Ice side (Ice C++, its registry, router and IceStorm) orange, the raw
/// baselines grey, tonic blue, tokio purple.
fn known_colour(name: &str) -> Option<RGBColor> {
    let c = |i: usize| Some(PALETTE[i]);
    match name {
        "floe" | "floe-router" | "floe-registry (redb)" | "floe-storm" => c(0),
        "ice-cpp" | "Ice C++" | "Ice C++ server" | "icegridregistry" | "glacier2router" | "IceStorm" => c(1),
        "raw" | "raw relay" | "copy relay" | "cap: raw server" => c(2),
        "tonic" => c(3),
        "tokio" | "floe-registry (etcd)" => c(4),
        _ => None,
    }
}

/// The colours of a chart's series: each known one's own, the others the palette's colours
/// left over, in order (never floe's green, which stays floe's).
fn colours(names: &[&str]) -> Vec<RGBColor> {
    let mut used: Vec<RGBColor> = Vec::new();
    let mut out = Vec::new();
    for name in names {
        let colour = known_colour(name)
            .filter(|c| !used.contains(c))
            .or_else(|| {
                PALETTE[1..]
                    .iter()
                    .copied()
                    .find(|c| !used.contains(c) && !names.iter().any(|n| known_colour(n) == Some(*c)))
            })
            .or_else(|| PALETTE[1..].iter().copied().find(|c| !used.contains(c)))
            .unwrap_or(BLACK);
        used.push(colour);
        out.push(colour);
    }
    out
}

/// A number of bytes for an axis label: `16 B`, `4 KB`, `1 MB`.
pub(crate) fn bytes_label(v: f64) -> String {
    if v >= 1024.0 * 1024.0 {
        format!("{} MB", axis_label(v / 1024.0 / 1024.0))
    } else if v >= 1024.0 {
        format!("{} KB", axis_label(v / 1024.0))
    } else {
        format!("{} B", axis_label(v))
    }
}

/// The light grid lines: barely there, so that the marks stand out.
const LIGHT: RGBColor = RGBColor(243, 243, 243);

/// A value for an axis label: `1.23M`, `45.6k`, `789`, `1.5`, `0.25`.
pub(crate) fn axis_label(v: f64) -> String {
    let a = v.abs();
    let (x, suffix, decimals) = if a >= 1e9 {
        (v / 1e9, "G", 2)
    } else if a >= 1e6 {
        (v / 1e6, "M", 2)
    } else if a >= 1e3 {
        (v / 1e3, "k", 2)
    } else if a >= 10.0 || a == 0.0 {
        (v, "", 0)
    } else {
        (v, "", 3)
    };
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    format!("{s}{suffix}")
}

/// `s` with `&`, `<` and `>` escaped, for the report's HTML.
pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Draws on an SVG canvas of `width` × `height` and wraps it in a figure.
fn figure(
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), Box<dyn Error>>,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let drawn = root.fill(&WHITE).map_err(|e| e.to_string()).and_then(|()| draw(&root).map_err(|e| e.to_string()));
        if let Err(e) = drawn.and_then(|()| root.present().map_err(|e| e.to_string())) {
            return format!("<p>chart not drawn: {}</p>", html_escape(&e));
        }
    }
    format!("<figure class=\"chart\">{svg}</figure>\n")
}

/// A figure with a caption below it.
fn captioned(figure: String, caption: &str) -> String {
    match figure.strip_suffix("</figure>\n") {
        Some(f) => format!("{f}<figcaption>{}</figcaption></figure>\n", html_escape(caption)),
        None => figure,
    }
}

/// The range of an axis over `values`: (low, high, logarithmic). Logarithmic when the
/// positive values span more than 30×, with room at the top for the legend.
fn value_range(values: impl Iterator<Item = f64>, room: f64) -> (f64, f64, bool) {
    let v: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    let max = v.iter().copied().fold(0.0, f64::max).max(1e-9);
    let min_pos = v.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min).min(max);
    if max / min_pos > 30.0 {
        (min_pos / 2.0, max * room.powi(3), true)
    } else {
        (0.0, max * room, false)
    }
}

/// The width of the label area for `labels`: about 7 pixels a character.
fn label_width(labels: &[String]) -> u32 {
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(4) as u32;
    (chars * 8 + 16).clamp(60, 400)
}

/// The hundredths of a band of the vertical category axis: `n` bands, the first on top,
/// each labelled at its middle.
const BAND: i32 = 100;

fn category_axis(n: usize) -> plotters::coord::combinators::WithKeyPoints<plotters::coord::types::RangedCoordi32> {
    let n = n as i32;
    (-BAND / 2..n * BAND - BAND / 2).with_key_points((0..n).map(|i| i * BAND).collect())
}

/// The position of `offset` (a fraction of a band, from its top) in band `i` of `n`.
fn in_band(n: usize, i: usize, offset: f64) -> i32 {
    ((n - 1 - i) as i32) * BAND + BAND / 2 - (offset * BAND as f64).round() as i32
}

/// The category labelled at `y`.
fn category_of(categories: &[String], y: i32) -> String {
    let n = categories.len() as i32;
    let i = n - 1 - (y as f64 / BAND as f64).round() as i32;
    usize::try_from(i).ok().and_then(|i| categories.get(i)).cloned().unwrap_or_default()
}

/// Grouped horizontal bars: one band per category (top to bottom), one bar per group in
/// each band, with the spread as an error bar. The x axis is logarithmic when the figures
/// span more than 30×.
pub(crate) fn bars(title: &str, x_label: &str, categories: &[String], groups: &[Group]) -> String {
    let groups: Vec<&Group> = groups.iter().filter(|g| g.values.iter().any(Option::is_some)).collect();
    if categories.is_empty() || groups.is_empty() {
        return String::new();
    }
    let all = groups.iter().flat_map(|g| g.values.iter().flatten().flat_map(|s| [s.low, s.mid, s.high]));
    let (lo, hi, log) = value_range(all, 1.3);
    let band = 8 + 14 * groups.len() as u32;
    let height = 110 + 18 * groups.len() as u32 + band * categories.len() as u32;
    figure(WIDTH, height, |root| {
        if log {
            draw_bars(root, title, x_label, (lo..hi).log_scale(), lo, categories, &groups)
        } else {
            draw_bars(root, title, x_label, lo..hi, lo, categories, &groups)
        }
    })
}

fn draw_bars<'b, X>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x_label: &str,
    x: impl AsRangedCoord<CoordDescType = X, Value = f64>,
    base: f64,
    categories: &[String],
    groups: &[&Group],
) -> Result<(), Box<dyn Error>>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64> + 'b,
{
    let n = categories.len();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(label_width(categories))
        .build_cartesian_2d(x, category_axis(n))?;
    let row = |y: &i32| category_of(categories, *y);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(LIGHT)
        .x_desc(x_label)
        .x_label_formatter(&|v| axis_label(*v))
        .y_label_formatter(&row)
        .label_style(("sans-serif", 14))
        .draw()?;
    let height = 0.8 / groups.len() as f64;
    let half = (height * 0.45 * BAND as f64) as i32;
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    for ((g, group), color) in groups.iter().enumerate().zip(colours(&names)) {
        let placed: Vec<(i32, Spread)> = group
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (in_band(n, i, 0.1 + height * (g as f64 + 0.5)), v)))
            .collect();
        chart
            .draw_series(
                placed
                    .iter()
                    .map(|(y, v)| Rectangle::new([(base, y + half), (v.mid.max(base), y - half)], color.filled())),
            )?
            .label(group.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        chart.draw_series(
            placed
                .iter()
                .filter(|(_, v)| v.high > v.low)
                .map(|(y, v)| ErrorBar::new_horizontal(*y, v.low.max(base), v.mid, v.high, BLACK.stroke_width(1), 5)),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

/// One row of a ratio chart: floe's ratio to one peer on one test, with the spread of the
/// per-run ratios; above 1 is floe ahead.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RatioPoint {
    /// The row (a test, with its stage).
    pub(crate) row: String,
    /// The peer the ratio is to.
    pub(crate) peer: String,
    /// The ratio and its spread.
    pub(crate) ratio: Spread,
}

/// The ticks of a ratio axis from `lo` to `hi`: 1 and the usual fractions and multiples.
fn ratio_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let candidates: Vec<f64> =
        [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0]
            .into_iter()
            .chain((1..10).flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e))))
            .filter(|t| *t >= lo && *t <= hi)
            .collect();
    // Outwards from 1, a tick at least a twelfth of the axis from the last one, so that the
    // labels never run together.
    let gap = (hi / lo).ln() / 12.0;
    let mut ticks = vec![1.0];
    for side in [
        candidates.iter().filter(|t| **t > 1.0).collect::<Vec<_>>(),
        candidates.iter().rev().filter(|t| **t < 1.0).collect(),
    ] {
        let mut last = 1.0f64;
        for t in side {
            if (t / last).ln().abs() >= gap {
                ticks.push(*t);
                last = *t;
            }
        }
    }
    ticks.sort_by(f64::total_cmp);
    ticks
}

/// A dot plot of ratios: one row per test (top to bottom, in their first order), as tall as
/// the peers it has, one dot per peer with the spread as an error bar, a logarithmic x axis
/// and a line at 1.
pub(crate) fn ratios(title: &str, points: &[RatioPoint]) -> String {
    let points: Vec<&RatioPoint> = points.iter().filter(|p| p.ratio.mid > 0.0 && p.ratio.mid.is_finite()).collect();
    let mut rows: Vec<(&str, Vec<&RatioPoint>)> = Vec::new();
    let mut peers: Vec<&str> = Vec::new();
    for p in &points {
        match rows.iter_mut().find(|(r, _)| *r == p.row) {
            Some((_, v)) => v.push(p),
            None => rows.push((&p.row, vec![p])),
        }
        if !peers.contains(&p.peer.as_str()) {
            peers.push(&p.peer);
        }
    }
    if points.is_empty() {
        return String::new();
    }
    let lo = points.iter().map(|p| p.ratio.low).filter(|v| *v > 0.0).fold(1.0, f64::min) / 1.25;
    let hi = points.iter().map(|p| p.ratio.high).filter(|v| v.is_finite()).fold(1.0, f64::max) * 1.6;
    // In axis units: a slot of SLOT per dot, PAD around each row; 100 units are 11 pixels.
    const SLOT: i32 = 100;
    const PAD: i32 = 60;
    let heights: Vec<i32> = rows.iter().map(|(_, v)| PAD + SLOT * v.len() as i32).collect();
    let total: i32 = heights.iter().sum();
    let tops: Vec<i32> = heights
        .iter()
        .scan(total, |top, h| {
            let t = *top;
            *top -= h;
            Some(t)
        })
        .collect();
    let centres: Vec<i32> = tops.iter().zip(&heights).map(|(t, h)| t - h / 2).collect();
    let labels: Vec<String> = rows.iter().map(|(r, _)| r.to_string()).collect();
    let height = 154 + 18 * peers.len() as u32 + (total as u32 * 11 / 100);
    let colours = colours(&peers);
    let caption = "floe's figure over the peer's, on a log scale: right of the line at 1 is floe ahead; the bars \
                   are the spread of the per-run ratios.";
    let drawn = figure(WIDTH, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(44)
            .top_x_label_area_size(24)
            .y_label_area_size(label_width(&labels))
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(ratio_ticks(lo, hi)),
                (0..total).with_key_points(centres.clone()),
            )?;
        let row = |y: &i32| centres.iter().position(|c| c == y).map(|i| labels[i].clone()).unwrap_or_default();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(LIGHT)
            .x_label_formatter(&|v| axis_label(*v))
            .y_label_formatter(&row)
            .label_style(("sans-serif", 14))
            .draw()?;
        chart.draw_series(LineSeries::new([(1.0, 0), (1.0, total)], BLACK.stroke_width(1)))?;
        for (peer, color) in peers.iter().zip(colours.iter().copied()) {
            let placed: Vec<(i32, Spread)> = rows
                .iter()
                .zip(&tops)
                .filter_map(|((_, v), top)| {
                    let j = v.iter().position(|p| p.peer == *peer)? as i32;
                    Some((top - PAD / 2 - SLOT * j - SLOT / 2, v[j as usize].ratio))
                })
                .collect();
            chart.draw_series(
                placed
                    .iter()
                    .filter(|(_, r)| r.high > r.low)
                    .map(|(y, r)| ErrorBar::new_horizontal(*y, r.low.max(lo), r.mid, r.high.min(hi), color, 4)),
            )?;
            chart
                .draw_series(placed.iter().map(|(y, r)| Circle::new((r.mid, *y), 4, color.filled())))?
                .label(peer.to_string())
                .legend(move |(x, y)| Circle::new((x + 6, y), 4, color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 14))
            .draw()?;
        Ok(())
    });
    captioned(drawn, caption)
}

/// Lines over a logarithmic x axis (`xs`, with their labels), one per group with dots and
/// the spread as error bars; the y axis is logarithmic when the figures span more than 30×.
pub(crate) fn lines(
    title: &str,
    axes: (&str, &str),
    xs: &[f64],
    groups: &[Group],
    x_format: fn(f64) -> String,
) -> String {
    let (x_label, y_label) = axes;
    let groups: Vec<&Group> = groups.iter().filter(|g| g.values.iter().flatten().count() >= 1).collect();
    if xs.len() < 2 || groups.is_empty() {
        return String::new();
    }
    let all = groups.iter().flat_map(|g| g.values.iter().flatten().flat_map(|s| [s.low, s.mid, s.high]));
    let (lo, hi, log) = value_range(all, 1.15);
    let x_lo = xs.iter().copied().fold(f64::INFINITY, f64::min) / 1.5;
    let x_hi = xs.iter().copied().fold(0.0, f64::max) * 1.5;
    figure(WIDTH, 460, |root| {
        if log {
            draw_lines(root, title, (x_label, y_label, x_format), x_lo..x_hi, (lo..hi).log_scale(), xs, &groups)
        } else {
            draw_lines(root, title, (x_label, y_label, x_format), x_lo..x_hi, lo..hi, xs, &groups)
        }
    })
}

fn draw_lines<'b, Y>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    (x_label, y_label, x_format): (&str, &str, fn(f64) -> String),
    x: std::ops::Range<f64>,
    y: impl AsRangedCoord<CoordDescType = Y, Value = f64>,
    xs: &[f64],
    groups: &[&Group],
) -> Result<(), Box<dyn Error>>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64> + 'b,
{
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x.log_scale().with_key_points(xs.to_vec()), y)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(LIGHT)
        .x_label_formatter(&|v| x_format(*v))
        .y_label_formatter(&|v| axis_label(*v))
        .label_style(("sans-serif", 14))
        .draw()?;
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    for (group, color) in groups.iter().zip(colours(&names)) {
        let pts: Vec<(f64, Spread)> = xs.iter().zip(&group.values).filter_map(|(x, v)| v.map(|v| (*x, v))).collect();
        chart
            .draw_series(LineSeries::new(pts.iter().map(|(x, v)| (*x, v.mid)), color.stroke_width(2)))?
            .label(group.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2)));
        chart.draw_series(pts.iter().map(|(x, v)| Circle::new((*x, v.mid), 3, color.filled())))?;
        chart.draw_series(
            pts.iter()
                .filter(|(_, v)| v.high > v.low)
                .map(|(x, v)| ErrorBar::new_vertical(*x, v.low, v.mid, v.high, color, 6)),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_axis_labels_and_ranges() {
        assert_eq!(Spread::of(&[3.0, 1.0, 2.0]), Some(Spread { mid: 2.0, low: 1.0, high: 3.0 }));
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::around(5.0, &[1.0, 2.0]).high, 5.0);
        assert_eq!(axis_label(1_500_000.0), "1.5M");
        assert_eq!(axis_label(20_000.0), "20k");
        assert_eq!(axis_label(0.25), "0.25");
        assert!(value_range([1.0, 1000.0].into_iter(), 1.0).2, "three orders of magnitude: log");
        assert!(!value_range([10.0, 20.0].into_iter(), 1.0).2);
    }

    #[test]
    fn every_chart_draws_its_elements_as_svg_text() {
        let g = |name: &str, v: &[f64]| Group {
            name: name.into(),
            values: v.iter().map(|x| Some(Spread { mid: *x, low: x * 0.9, high: x * 1.1 })).collect(),
        };
        let svg = bars("t", "calls/s", &["a".into(), "b".into()], &[g("floe", &[1.0, 2.0]), g("raw", &[3.0, 4.0])]);
        assert!(svg.contains("<svg") && svg.contains("<rect") && svg.contains("floe\n</text>"), "{svg}");
        let svg = lines("t", ("bytes", "Mbit/s"), &[10.0, 1000.0], &[g("floe", &[1.0, 2.0])], bytes_label);
        assert!(svg.contains("<polyline") || svg.contains("<path"), "{svg}");
        let p = |row: &str, peer: &str, mid| RatioPoint {
            row: row.into(),
            peer: peer.into(),
            ratio: Spread { mid, low: mid * 0.9, high: mid * 1.2 },
        };
        let svg = ratios("t", &[p("twoway", "raw", 0.9), p("twoway", "Ice C++", 1.4)]);
        assert!(svg.contains("<circle") && svg.contains("Ice C++"), "{svg}");
        assert_eq!(bars("t", "x", &[], &[]), "");
    }
}
