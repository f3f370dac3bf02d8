//! `floe-bench --against PROXY [--quick]`: floe's client side of the ten seed tests, against
//! any server implementing `Interop::Tester` of `tests/interop/Test.ice` (floe's, Ice's, or
//! another implementation), on floe's default configuration. One line per test on stdout:
//! `RESULT <name> <value> <unit>`, or `RESULT <name> error <message>`.
//!
//! The workload (quick mode; the full mode multiplies every count by 5): 5,000 warm-up pings;
//! `twoway` 10,000 `ping()`; `oneway` `resetCounter()`, 40,000 oneway `incCounter(1)`, then
//! `getCounter()` until it reaches 40,000; `batch_oneway` 200,000 batched `incCounter(1)`
//! flushed every 10,000, then `getCounter()` until 200,000; `ami` 20,000 `ping()` with at most
//! 1,000 in flight; `bytes_send`/`bytes_recv` 200 × 500,000 bytes; `fixed_send`/`fixed_recv`
//! 40 × 50,000 `Fixed` (800,000 bytes counted); `sd_send`/`sd_recv` 20 × 50,000
//! `StringDouble{"hello", 3.14}` (650,000 bytes counted).
#![allow(clippy::approx_constant)] // 3.14 is the value Test.ice specifies.

use std::time::{Duration, Instant};

use floe::{Communicator, Properties, Proxy};
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::interop::{Fixed, StringDouble, TesterPrx};

/// The tests in the order they run, with their units.
pub(crate) const TESTS: &[(&str, &str)] = &[
    ("twoway", "calls/s"),
    ("oneway", "msg/s"),
    ("batch_oneway", "msg/s"),
    ("ami", "calls/s"),
    ("bytes_send", "Mbit/s"),
    ("bytes_recv", "Mbit/s"),
    ("fixed_send", "Mbit/s"),
    ("fixed_recv", "Mbit/s"),
    ("sd_send", "Mbit/s"),
    ("sd_recv", "Mbit/s"),
];

/// How long a counter may take to reach its count before the test fails.
const COUNTER_LIMIT: Duration = Duration::from_secs(60);

/// The tests to run, with their units: those of `only` in order or, `stepped`, those named
/// on the lines of standard input until its end (after printing `warm`, which tells the
/// benchmark driving this client that the warm-up is over); a name that is no test comes as
/// `Err(name)`.
pub(crate) fn steps<'a>(
    stepped: bool,
    only: &'a [&'static str],
) -> Box<dyn Iterator<Item = Result<(&'static str, &'static str), String>> + 'a> {
    let known = |asked: &str| TESTS.iter().find(|(name, _)| *name == asked).copied().ok_or_else(|| asked.to_string());
    if stepped {
        println!("warm");
        Box::new(
            std::io::stdin()
                .lines()
                .map_while(Result::ok)
                .filter(|line| !line.trim().is_empty())
                .map(move |line| known(line.trim())),
        )
    } else {
        // In the order of TESTS, each test once.
        Box::new(TESTS.iter().filter(|(name, _)| only.contains(name)).copied().map(Ok))
    }
}

/// The test of a step of [`steps`], or `None` once the `RESULT` line of an unknown name is
/// printed (the caller counts it as a failed test).
pub(crate) fn known_step(step: Result<(&'static str, &'static str), String>) -> Option<(&'static str, &'static str)> {
    step.map_err(|asked| println!("RESULT {asked} error unknown test")).ok()
}

/// A test (or the warm-up) as a task for the communicator's runtime.
type Step = std::pin::Pin<Box<dyn std::future::Future<Output = Result<f64, String>> + Send>>;

/// Runs the workload against `proxy`; prints a `RESULT` line per test. Returns whether every
/// test produced a value. With `stepped`, after the warm-up it prints `warm` and then runs each
/// test named on a line of standard input, until the end of input, so that a benchmark can
/// alternate clients test by test.
pub(crate) fn run(proxy: &str, quick: bool, only: &[&'static str], stepped: bool) -> Result<bool, String> {
    // floe's defaults: no property is set but those given with `--floe-property`.
    let props = Properties::new();
    crate::floe_system::apply_properties(&props);
    let communicator = Communicator::with_properties(props).map_err(|e| e.to_string())?;
    let tester = TesterPrx::from_object(communicator.string_to_proxy(proxy).map_err(|e| e.to_string())?);
    let scale = if quick { 1 } else { 5 };
    // Each step runs as a task of the communicator's runtime, as async code using floe does:
    // awaited from this thread instead, every reply would wake this thread from the runtime's.
    let handle = communicator.runtime_handle().clone();
    let on_runtime = |step: Step| communicator.block_on(handle.spawn(step)).map_err(|e| e.to_string()).and_then(|r| r);
    let warm = tester.clone();
    let outcome = on_runtime(Box::pin(async move {
        for _ in 0..5_000 * scale {
            warm.ping().await.map_err(|e| format!("warm-up: {e}"))?;
        }
        Ok(0.0)
    }))
    .map(|_| {
        let mut all_ok = true;
        for step in steps(stepped, only) {
            let Some((name, unit)) = known_step(step) else {
                all_ok = false;
                continue;
            };
            let t = tester.clone();
            match on_runtime(Box::pin(async move { one(&t, name, scale).await })) {
                Ok(value) => println!("RESULT {name} {value:.2} {unit}"),
                Err(e) => {
                    all_ok = false;
                    println!("RESULT {name} error {}", e.replace('\n', " "));
                }
            }
        }
        all_ok
    });
    communicator.destroy_blocking();
    outcome
}

/// Megabits per second of `bytes` moved `calls` times in `secs`.
fn mbits(calls: usize, bytes: usize, secs: f64) -> f64 {
    (calls * bytes) as f64 * 8.0 / secs / 1e6
}

/// One test's value.
async fn one(t: &TesterPrx, name: &str, scale: usize) -> Result<f64, String> {
    let e = |e: floe::Error| e.to_string();
    match name {
        "twoway" => {
            let n = 10_000 * scale;
            let start = Instant::now();
            for _ in 0..n {
                t.ping().await.map_err(e)?;
            }
            Ok(n as f64 / start.elapsed().as_secs_f64())
        }
        "oneway" => {
            let n = 40_000 * scale;
            t.reset_counter().await.map_err(e)?;
            let oneway = t.ice_oneway();
            let start = Instant::now();
            for _ in 0..n {
                oneway.inc_counter(1).await.map_err(e)?;
            }
            wait_counter(t, n).await?;
            Ok(n as f64 / start.elapsed().as_secs_f64())
        }
        "batch_oneway" => {
            let n = 200_000 * scale;
            t.reset_counter().await.map_err(e)?;
            let mut batch = t.batch_writer();
            let start = Instant::now();
            for k in 1..=n {
                batch.inc_counter(1);
                if k % 10_000 == 0 {
                    batch.flush().await.map_err(e)?;
                }
            }
            batch.flush().await.map_err(e)?;
            wait_counter(t, n).await?;
            Ok(n as f64 / start.elapsed().as_secs_f64())
        }
        "ami" => {
            let n = 20_000 * scale;
            let start = Instant::now();
            let mut in_flight = FuturesUnordered::new();
            let (mut sent, mut done) = (0, 0);
            while done < n {
                while sent < n && in_flight.len() < 1_000 {
                    in_flight.push(t.ping());
                    sent += 1;
                }
                if let Some(r) = in_flight.next().await {
                    r.map_err(e)?;
                    done += 1;
                }
            }
            Ok(n as f64 / start.elapsed().as_secs_f64())
        }
        "bytes_send" => {
            let (calls, size) = (200 * scale, 500_000);
            let payload = floe::bytes::Bytes::from((0..size).map(|k| k as u8).collect::<Vec<u8>>());
            let start = Instant::now();
            for _ in 0..calls {
                t.send_byte_seq(&payload).await.map_err(e)?;
            }
            Ok(mbits(calls, size, start.elapsed().as_secs_f64()))
        }
        "bytes_recv" => {
            let (calls, size) = (200 * scale, 500_000);
            let start = Instant::now();
            for _ in 0..calls {
                let got = t.recv_byte_seq(size as i32).await.map_err(e)?;
                if got.len() != size {
                    return Err(format!("recvByteSeq returned {} bytes", got.len()));
                }
            }
            Ok(mbits(calls, size, start.elapsed().as_secs_f64()))
        }
        "fixed_send" => {
            let calls = 40 * scale;
            let seq: Vec<Fixed> = (0..50_000).map(|k| Fixed { i: k, j: -k, d: k as f64 * 0.5 }).collect();
            let start = Instant::now();
            for _ in 0..calls {
                t.send_fixed_seq(&seq).await.map_err(e)?;
            }
            Ok(mbits(calls, 800_000, start.elapsed().as_secs_f64()))
        }
        "fixed_recv" => {
            let calls = 40 * scale;
            let start = Instant::now();
            for _ in 0..calls {
                let got = t.recv_fixed_seq(50_000).await.map_err(e)?;
                if got.len() != 50_000 {
                    return Err(format!("recvFixedSeq returned {} elements", got.len()));
                }
            }
            Ok(mbits(calls, 800_000, start.elapsed().as_secs_f64()))
        }
        "sd_send" => {
            let calls = 20 * scale;
            let seq: Vec<StringDouble> = (0..50_000).map(|_| StringDouble { s: "hello".into(), d: 3.14 }).collect();
            let start = Instant::now();
            for _ in 0..calls {
                t.send_string_double_seq(&seq).await.map_err(e)?;
            }
            Ok(mbits(calls, 650_000, start.elapsed().as_secs_f64()))
        }
        "sd_recv" => {
            let calls = 20 * scale;
            let start = Instant::now();
            for _ in 0..calls {
                let got = t.recv_string_double_seq(50_000).await.map_err(e)?;
                if got.len() != 50_000 {
                    return Err(format!("recvStringDoubleSeq returned {} elements", got.len()));
                }
            }
            Ok(mbits(calls, 650_000, start.elapsed().as_secs_f64()))
        }
        other => Err(format!("no test {other}")),
    }
}

/// Calls `getCounter()` until it returns `n` (for up to `COUNTER_LIMIT`).
async fn wait_counter(t: &TesterPrx, n: usize) -> Result<(), String> {
    let deadline = Instant::now() + COUNTER_LIMIT;
    loop {
        let got = t.get_counter().await.map_err(|e| e.to_string())?;
        if got as usize == n {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the counter stayed at {got} of {n} for {COUNTER_LIMIT:?}"));
        }
    }
}
