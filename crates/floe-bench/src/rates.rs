//! The rate tests (`tests.rs`): every system's server started once per size the tests want,
//! the tests measured in interleaved runs from this process (Ice's client and the resource runs
//! as processes of their own), and their records, table, charts, JSON and Markdown
//! (`report.rs`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::proc::{calls_only, helper_exe, ice_malloc_env, proc_stats, run_client_process, ClientUsage};
use crate::report::{self, Record, Sample};
use crate::servers::{start_server, Server, System};
use crate::suite::{Context, Suite};
use crate::summary::StageSummary;
use crate::tests::{every_test, Measured, Test};
use crate::{floe_system, tls, tokio_baseline};

/// The rate tests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rates;

/// What the rate tests measured.
pub(crate) struct RateResults {
    /// The tests that ran.
    pub(crate) selected: Vec<Test>,
    /// Every run's measurement.
    pub(crate) samples: Vec<Sample>,
    /// Medians and ranges per system × test.
    pub(crate) records: Vec<Record>,
    /// What could not be measured, and why.
    pub(crate) notes: Vec<String>,
    /// When the measurements started.
    pub(crate) started: Instant,
}

/// The tests `--tests` selects (every test without it), less the ssl tests when there are no
/// certificates (with a note).
fn selected_tests(ctx: &Context, notes: &mut Vec<String>) -> Vec<Test> {
    let mut selected: Vec<Test> = match &ctx.args.tests {
        Some(list) => {
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            every_test().filter(|t| names.contains(&t.name)).copied().collect()
        }
        None => every_test().copied().collect(),
    };
    if let Some(why) = &ctx.certs_note {
        if selected.iter().any(|t| t.ssl) {
            notes.push(format!("ssl tests skipped: {why}"));
            selected.retain(|t| !t.ssl);
        }
    }
    selected
}

/// The systems of the rate tables in this run: floe and the raw baseline, the tokio baseline
/// if a test it runs is selected, Ice C++ when it was built, tonic when asked for and built
/// in (a note otherwise).
pub(crate) fn systems(ctx: &Context, selected: &[Test], notes: &mut Vec<String>) -> Vec<System> {
    let mut systems = vec![System::Floe, System::Raw];
    if selected.iter().any(tokio_baseline::supports) {
        systems.push(System::Tokio);
    }
    if ctx.ice_dir.is_some() {
        systems.push(System::Ice);
    }
    if ctx.args.peer("tonic") {
        if cfg!(feature = "tonic") {
            systems.push(System::Tonic);
        } else {
            notes.push("tonic skipped: build with `--features tonic` (bash scripts/bench does)".into());
        }
    }
    systems
}

impl Suite for Rates {
    type Results = RateResults;

    fn name(&self) -> &'static str {
        "rates"
    }

    fn title(&self) -> &'static str {
        "floe-bench"
    }

    fn selected(&self, _ctx: &Context) -> bool {
        // Always: with no rate test selected it only reports its notes.
        true
    }

    fn systems(&self, ctx: &Context) -> Vec<String> {
        let selected = selected_tests(ctx, &mut Vec::new());
        systems(ctx, &selected, &mut Vec::new()).iter().map(|s| s.name().to_string()).collect()
    }

    fn run(&self, ctx: &Context) -> RateResults {
        let args = &ctx.args;
        let ice_dir = ctx.ice_dir();
        let runs = args.runs.unwrap_or(if args.quick { 3 } else { 5 }).max(1);
        let duration = Duration::from_millis(if args.quick { 150 } else { 700 });
        let mut notes = Vec::new();
        let selected = selected_tests(ctx, &mut notes);
        notes.extend(ctx.ice_note.clone());
        let systems = systems(ctx, &selected, &mut notes);
        let mut servers = Vec::new();
        for (system, threads, exact) in server_sizes(&systems, &selected) {
            match start_server(system, threads, exact, ice_dir, false) {
                Ok(srv) => servers.push(srv),
                Err(e) => notes.push(format!("{} skipped: {e}", system.name())),
            }
        }
        let started = Instant::now();
        let mut samples: Vec<Sample> = Vec::new();
        let total = runs * selected.iter().map(|t| servers.iter().filter(|s| serves(s, t)).count()).sum::<usize>();
        let mut done = 0;
        for run in 0..runs {
            for test in &selected {
                for server in servers.iter().filter(|s| serves(s, test)) {
                    done += 1;
                    let (cpu0, _) = proc_stats(server.child.id());
                    // The 48 payload variants of the batched oneways get shorter measurements,
                    // so that the full run stays within its time.
                    let this_duration = if test.kind.is_payload() { duration * 2 / 5 } else { duration };
                    let r = measure(server, test, this_duration, ice_dir);
                    let (cpu1, rss) = proc_stats(server.child.id());
                    match r {
                        Ok(m) => {
                            let rate = m.ops as f64 / m.secs.max(1e-9);
                            eprintln!(
                                "[{done}/{total} {:>4.0}s] run {} {:<16} {:<8} {:>14.0} {}",
                                started.elapsed().as_secs_f64(),
                                run + 1,
                                test.name,
                                server.system.name(),
                                rate,
                                test.unit
                            );
                            let ops = m.ops;
                            samples.push(Sample {
                                run,
                                steps: m.steps,
                                system: server.system.name(),
                                test: test.name,
                                rate,
                                server_cpu_per_100k: if ops > 0 {
                                    (cpu1 - cpu0) * 100_000.0 / ops as f64
                                } else {
                                    0.0
                                },
                                server_peak_rss_kb: rss,
                            });
                        }
                        Err(e) => notes.push(format!("{} / {} run {}: {e}", server.system.name(), test.name, run + 1)),
                    }
                }
            }
        }
        // Client resources: each system's twoway client twice more, as a process of its own,
        // so that its CPU time and peak RSS are its own (the floe and raw clients otherwise run
        // in this process); the two runs' difference leaves its start-up out.
        let mut clients: Vec<(&'static str, ClientUsage)> = Vec::new();
        if selected.iter().any(|t| t.name == "twoway") {
            for server in servers.iter().filter(|s| s.threads == 1 && !s.exact) {
                match client_call_usage(server, duration, ice_dir) {
                    Ok(u) => clients.push((server.system.name(), u)),
                    Err(e) => notes.push(format!("{} / client resources: {e}", server.system.name())),
                }
            }
        }
        drop(servers);
        let mut records = report::summarize(&selected, &samples);
        for r in records.iter_mut().filter(|r| r.test == "twoway") {
            if let Some((_, u)) = clients.iter().find(|(sys, _)| *sys == r.system) {
                r.client = Some(report::ClientResources {
                    cpu_per_100k: if u.ops > 0 { u.cpu * 100_000.0 / u.ops as f64 } else { 0.0 },
                    peak_rss_kb: u.peak_rss_kb,
                });
            }
        }
        RateResults { selected, samples, records, notes, started }
    }

    fn table(&self, ctx: &Context, r: &RateResults) -> String {
        report::table(&r.selected, &r.records, &ctx.machine, r.started.elapsed())
    }

    fn terminal(&self, ctx: &Context, r: &RateResults) -> String {
        let mut s = String::new();
        if !r.selected.is_empty() {
            s.push_str(&self.table(ctx, r));
            s.push('\n');
        }
        for n in &r.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }

    fn charts(&self, ctx: &Context, r: &RateResults) -> String {
        let table = self.table(ctx, r);
        report::html(&r.selected, &r.records, &r.samples, &table, &r.notes)
    }

    fn summary(&self, _ctx: &Context, r: &RateResults) -> Option<StageSummary> {
        report::summary(&r.selected, &r.records, &r.samples)
    }

    fn records(&self, r: &RateResults) -> Vec<serde_json::Value> {
        report::json_records(&r.records)
    }

    fn markdown(&self, ctx: &Context, r: &RateResults) -> String {
        report::markdown(&r.records, &ctx.machine, r.started.elapsed(), std::time::SystemTime::now())
    }
}

/// The servers to start: (system, threads, exact) for each server size the tests want, exact
/// only mattering to floe.
fn server_sizes(systems: &[System], selected: &[Test]) -> Vec<(System, usize, bool)> {
    let mut sizes: Vec<(usize, bool)> =
        selected.iter().map(|t| (t.clients_and_threads().1, t.exact_threads())).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = Vec::new();
    for s in systems {
        let mut started_sizes: Vec<(usize, bool)> = Vec::new();
        for &(threads, exact) in &sizes {
            // The raw baseline uses a thread per connection whatever the count; only floe's
            // servers differ by exactness.
            let size = (threads, exact && *s == System::Floe);
            if (*s == System::Raw && !started_sizes.is_empty()) || started_sizes.contains(&size) {
                continue;
            }
            // The tokio baseline serves the default servers' tests only.
            if *s == System::Tokio && size != (1, false) {
                continue;
            }
            started_sizes.push(size);
            out.push((*s, size.0, size.1));
        }
    }
    out
}

/// Whether the rate tests measure `test` on `server`: the systems that run it, on a server of
/// the size it wants (the raw baseline's thread per connection serves every size).
fn serves(server: &Server, test: &Test) -> bool {
    let supported = match server.system {
        System::Ice => test.ice,
        System::Tokio => tokio_baseline::supports(test),
        #[cfg(feature = "tonic")]
        System::Tonic => crate::tonic_system::supports(test),
        _ => true,
    };
    supported
        && (server.system == System::Raw || server.threads == test.clients_and_threads().1)
        && (server.system != System::Floe || server.exact == test.exact_threads())
}

fn measure(server: &Server, test: &Test, duration: Duration, ice_dir: Option<&Path>) -> Result<Measured, String> {
    let (clients, _) = test.clients_and_threads();
    if clients > 1 {
        // Several clients at once, each on its own connection; rates add up.
        let results: Vec<Result<Measured, String>> = std::thread::scope(|s| {
            let handles: Vec<_> =
                (0..clients).map(|_| s.spawn(|| measure_one(server, test, duration, ice_dir))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("client thread panicked".into()))).collect()
        });
        let mut ops = 0;
        let mut secs: f64 = 0.0;
        for r in results {
            let m = r?;
            ops += m.ops;
            secs = secs.max(m.secs);
        }
        return Ok(Measured::new(ops, secs));
    }
    measure_one(server, test, duration, ice_dir)
}

fn measure_one(server: &Server, test: &Test, duration: Duration, ice_dir: Option<&Path>) -> Result<Measured, String> {
    let port = server_port(server, test)?;
    match server.system {
        System::Raw => crate::raw::measure(test, port, duration).map_err(|e| e.to_string()),
        System::Floe => floe_system::measure(test, port, duration).map_err(|e| e.to_string()),
        System::Tokio => tokio_baseline::measure(test, port, duration).map_err(|e| e.to_string()),
        #[cfg(feature = "tonic")]
        System::Tonic => crate::tonic_system::measure(test, server.port, duration),
        #[cfg(not(feature = "tonic"))]
        System::Tonic => Err("built without the tonic feature".into()),
        System::Ice => {
            let out = ice_client(server, test, duration, ice_dir)?.output().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout);
            let mut it = text.split_whitespace();
            let ops = it.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("ice-client said {text:?}"))?;
            let secs = it.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("ice-client said {text:?}"))?;
            let rest: Vec<f64> = it.filter_map(|s| s.parse().ok()).collect();
            let steps = if let [mean, min, max, sd] = rest[..] { Some((mean, min, max, sd)) } else { None };
            Ok(Measured { ops, secs, steps })
        }
    }
}

/// The port `test` connects to: the server's ssl port for an ssl test.
fn server_port(server: &Server, test: &Test) -> Result<u16, String> {
    if test.ssl {
        server.ssl_port.ok_or_else(|| format!("the {} server has no ssl endpoint", server.system.name()))
    } else {
        Ok(server.port)
    }
}

/// The Ice C++ client's command for `test` against `server`; it prints the operations done and
/// the seconds taken (then, for the Demarey test, its step statistics).
fn ice_client(server: &Server, test: &Test, duration: Duration, ice_dir: Option<&Path>) -> Result<Command, String> {
    let dir = ice_dir.ok_or("no Ice peer")?;
    let mut cmd = Command::new(dir.join("ice-client"));
    ice_malloc_env(&mut cmd);
    cmd.args([
        server_port(server, test)?.to_string(),
        test.ice_name().to_string(),
        duration.as_millis().to_string(),
        // The sender-side batching tests take their round size instead (the payload comes
        // with the test's name).
        if test.kind.is_batch_send() { crate::tests::sender_round(duration).to_string() } else { test.param.to_string() },
    ]);
    if test.ssl {
        cmd.arg("ssl").args(tls::ice_args(false));
    }
    Ok(cmd)
}

/// The resources of a twoway client run as a process of its own against `server`, for
/// `duration`.
fn client_usage(server: &Server, duration: Duration, ice_dir: Option<&Path>) -> Result<ClientUsage, String> {
    let twoway = every_test().find(|t| t.name == "twoway").ok_or("no twoway test")?;
    let cmd = match server.system {
        System::Ice => ice_client(server, twoway, duration, ice_dir)?,
        system => {
            let mut cmd = Command::new(helper_exe()?);
            cmd.args(["--client", system.name(), "--port", &server.port.to_string(), "--tests", "twoway"]);
            cmd.args(["--duration-ms", &duration.as_millis().to_string()]);
            if system == System::Floe {
                floe_system::forward_properties(&mut cmd);
            }
            cmd
        }
    };
    run_client_process(cmd, duration + Duration::from_secs(60))
}

/// What the calls of a client cost without its start-up and shutdown (communicator,
/// connection, warm-up calls): the difference between a run of `duration` and one three times
/// as long. A run makes only some thousands of calls, so per-call figures taken over a whole
/// process would multiply those fixed costs.
fn client_call_usage(server: &Server, duration: Duration, ice_dir: Option<&Path>) -> Result<ClientUsage, String> {
    let short = client_usage(server, duration, ice_dir)?;
    let long = client_usage(server, duration * 3, ice_dir)?;
    Ok(calls_only(short, long))
}
