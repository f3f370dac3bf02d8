//! Statistics of the measurements: medians, percentiles, the spread of a series, and the
//! per-step figures of the Demarey method.

/// The median of `v`: the middle value, or the mean of the two middle values of an even count;
/// 0 for no values. The rate tests' records use it.
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if v.is_empty() {
        return 0.0;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The middle value of `v` (the upper one of an even count), if it has any value: the median
/// the stages (cross, locate, router, storm, connections) take over their rounds.
pub fn middle(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The value at fraction `p` (0 to 1) of the sorted `sorted`, the index rounded to the nearest
/// one; `None` for no values.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[((sorted.len() - 1) as f64 * p).round() as usize])
}

/// The value of rank `len × num / den` (rounded down) of the sorted `sorted`: the p99 of the
/// storm test is `rank(v, 99, 100)`. `None` for no values.
pub fn rank<T: Copy>(sorted: &[T], num: usize, den: usize) -> Option<T> {
    sorted.get(sorted.len() * num / den).copied()
}

/// The smallest and the largest of `v` ((+∞, 0) for no values, as the rate records had them).
pub fn spread(v: &[f64]) -> (f64, f64) {
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(0.0, f64::max);
    (min, max)
}

/// Per-call latencies (µs) of the steps of one Demarey series.
#[derive(Debug, Clone, Default)]
pub struct Steps(pub Vec<f64>);

/// The statistics of a Demarey series: per-call µs (mean, min, max, standard deviation).
pub type StepStats = (f64, f64, f64, f64);

impl Steps {
    /// Adds a step of `calls` calls that took `elapsed`.
    pub fn push(&mut self, elapsed: std::time::Duration, calls: u64) {
        self.0.push(elapsed.as_secs_f64() * 1e6 / calls.max(1) as f64);
    }

    /// (mean, min, max, standard deviation).
    pub fn stats(&self) -> StepStats {
        let n = self.0.len().max(1) as f64;
        let mean = self.0.iter().sum::<f64>() / n;
        let (min, max) = spread(&self.0);
        let var = self.0.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        (mean, min, max, var.sqrt())
    }
}

/// The statistics of several series pooled: the mean of the means, the smallest minimum, the
/// largest maximum, and a standard deviation with the within-series variance plus the spread
/// of the series' means. `None` for no series.
pub fn pooled_steps(series: &[StepStats]) -> Option<StepStats> {
    if series.is_empty() {
        return None;
    }
    let n = series.len() as f64;
    let mean = series.iter().map(|x| x.0).sum::<f64>() / n;
    let min = series.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let max = series.iter().map(|x| x.2).fold(0.0, f64::max);
    let var = series.iter().map(|x| x.3 * x.3 + (x.0 - mean) * (x.0 - mean)).sum::<f64>() / n;
    Some((mean, min, max, var.sqrt()))
}

/// `v` rounded to `decimals` decimals, so that a JSON record carries the precision it always had.
pub fn round_to(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_percentiles_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(middle(&[4.0, 1.0, 2.0, 3.0]), Some(3.0));
        assert_eq!(middle(&[]), None);
        let sorted: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 0.5), Some(51));
        assert_eq!(percentile(&sorted, 0.99), Some(99));
        assert_eq!(percentile::<u32>(&[], 0.99), None);
        assert_eq!(rank(&sorted, 99, 100), Some(100));
        assert_eq!(rank(&sorted, 1, 2), Some(51));
        assert_eq!(rank::<u32>(&[], 1, 2), None);
        assert_eq!(spread(&[2.0, 5.0, 1.0]), (1.0, 5.0));
        assert_eq!(round_to(1.23456, 3), 1.235);
    }
}
