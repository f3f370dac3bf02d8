//! floe-bench: the seed documents' benchmarks, run for floe, a raw-socket baseline and ZeroC
//! Ice 3.7 C++ in one interleaved run, reported as medians and ratios.
//!
//! `cargo run --release --bin floe-bench -- [--quick] [--json PATH] [--html PATH] [--peers ice]`
#![allow(clippy::approx_constant)] // 3.14 is the seeds' string-struct payload, not pi.

mod against;
mod connections;
mod cross;
mod floe_system;
mod locate;
mod pipeline;
mod ports;
mod raw;
mod raw_tester;
mod relay;
mod report;
mod router;
mod router_client;
mod storm;
mod tests;
mod tls;
mod tokio_baseline;
#[cfg(feature = "tonic")]
mod tonic_system;

/// The Rust mapping of slice/Bench.ice.
#[allow(missing_docs, unreachable_pub)]
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/Bench.rs"));
}
pub(crate) use generated::bench;

/// The Rust mapping of tests/interop/Test.ice, for `--against`.
#[allow(missing_docs, unreachable_pub)]
pub mod interop_generated {
    include!(concat!(env!("OUT_DIR"), "/Test.rs"));
}
pub(crate) use interop_generated::interop;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;

use report::{Record, Sample};
use tests::{every_test, Test};

#[derive(Parser, Debug)]
#[command(name = "floe-bench", about = "floe against a raw-socket baseline and ZeroC Ice C++, interleaved")]
#[command(group(clap::ArgGroup::new("against_or_raw").args(["against", "raw_against"])))]
struct Args {
    /// A short run (about 2 minutes): fewer runs, shorter measurements.
    #[arg(long)]
    quick: bool,
    /// Write one JSON record per system × test here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the HTML report here (default: target/floe-bench/report.html).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Write the README's tables (headline tests, batched-oneway payload matrix) as Markdown here.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Peers to include, comma-separated (`ice`, `tonic`); `none` for floe and raw only.
    #[arg(long, default_value = "ice,tonic")]
    peers: String,
    /// Only these tests (comma-separated names); with `--against`, only these of its ten.
    #[arg(long)]
    tests: Option<String>,
    /// Number of interleaved runs (default 5, or 3 with --quick).
    #[arg(long)]
    runs: Option<usize>,
    /// A property for floe's servers and clients, as NAME=VALUE (repeatable), e.g.
    /// `Floe.Runtime.BusyPoll=0` to measure floe without busy polling.
    #[arg(long = "floe-property", value_name = "NAME=VALUE")]
    floe_properties: Vec<String>,
    /// Run floe's client side of the seed tests against the server of this proxy (any
    /// implementation of `Interop::Tester` in tests/interop/Test.ice) and print one line per
    /// test, `RESULT <name> <value> <unit>`; `--quick` for the short workload.
    #[arg(long, value_name = "PROXY")]
    against: Option<String>,
    /// With --against (or the internal --raw-against): after the warm-up print `warm`, then
    /// run each test named on a line of standard input (printing its `RESULT` line) until the
    /// end of input, so that a benchmark can alternate several clients test by test.
    #[arg(long, requires = "against_or_raw")]
    stepped: bool,
    /// Internal: play the cross pairs' workload with the raw replay client against the Tester
    /// on this port (the client side of the caps).
    #[arg(long, hide = true, value_name = "PORT")]
    raw_against: Option<u16>,
    /// Internal: run floe's client of the `router` test against the Tester of this proxy, for
    /// --duration-ms per test, through the Glacier2 router of --router if given.
    #[arg(long, hide = true, value_name = "PROXY")]
    router_client: Option<String>,
    /// Internal: run the `router` test's copy relay on --port, forwarding to this port
    /// (`src/relay.rs`).
    #[arg(long, hide = true, value_name = "TARGET_PORT")]
    relay: Option<u16>,
    /// Internal: the Glacier2 router of --router-client.
    #[arg(long, hide = true, value_name = "PROXY")]
    router: Option<String>,
    /// Connections for the `connections` test (default 19,000, or 2,000 with --quick). The
    /// server's file limit caps it; the report says when it did. Also the sessions of the
    /// `router-sessions` test (default 10,000, or 2,000 with --quick).
    #[arg(long)]
    connections: Option<usize>,
    /// The most connections one load process of the `connections` test opens (default 10,000).
    #[arg(long, value_name = "N")]
    conn_per_process: Option<usize>,
    /// How long the `connections` test measures pings, in milliseconds (default 20,000, or
    /// 8,000 with --quick).
    #[arg(long, value_name = "MS")]
    conn_measure_ms: Option<u64>,
    /// The test certificates for the ssl tests (default: `../shared/certs` beside the
    /// repository); without them the ssl tests are left out, with a note.
    #[arg(long, value_name = "DIR")]
    certs: Option<PathBuf>,
    /// Internal: run one load process of the `connections` test against --port.
    #[arg(long, hide = true)]
    conn_load: bool,
    /// Internal: connections this load process opens.
    #[arg(long, hide = true, default_value_t = 0)]
    conn_count: usize,
    /// Internal: the source address of this load process.
    #[arg(long, hide = true, default_value = "127.0.0.1")]
    conn_source: std::net::Ipv4Addr,
    /// Internal: connections this load process opens at once.
    #[arg(long, hide = true, default_value_t = 500)]
    conn_burst: usize,
    /// Internal: time between two pings of one connection, in milliseconds.
    #[arg(long, hide = true, default_value_t = 4000)]
    conn_interval_ms: u64,
    /// Internal: serve floe on its default configuration (runtime, ACM, message size limit),
    /// not the benchmark's.
    #[arg(long, hide = true)]
    defaults: bool,
    /// Internal: serve a system (`raw`, `raw-scale`, `raw-tester`, `floe`, or the `tokio`
    /// baseline) on --port.
    #[arg(long, hide = true)]
    serve: Option<String>,
    /// Internal: run one system's client (`raw`, `floe`, or the `tokio` baseline) against a
    /// server already on --port.
    #[arg(long, hide = true)]
    client: Option<String>,
    /// Internal: the port to serve on.
    #[arg(long, hide = true, default_value_t = 0)]
    port: u16,
    /// Internal: the port to serve ssl on, beside --port.
    #[arg(long, hide = true)]
    ssl_port: Option<u16>,
    /// Internal: server runtime threads.
    #[arg(long, hide = true, default_value_t = 1)]
    threads: usize,
    /// Internal: the floe server runs exactly `--threads` threads (no connection runtimes).
    #[arg(long, hide = true)]
    exact_threads: bool,
    /// Internal: how long a `--client` measures each test, in milliseconds.
    #[arg(long, hide = true)]
    duration_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum System {
    Floe,
    Raw,
    /// The bare tokio baseline (`tokio_baseline`), in the twoway tests on the default servers.
    Tokio,
    Ice,
    Tonic,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Floe => "floe",
            System::Raw => "raw",
            System::Tokio => "tokio",
            System::Ice => "ice-cpp",
            System::Tonic => "tonic",
        }
    }
}

struct Server {
    system: System,
    threads: usize,
    /// A floe server with exactly `threads` threads (`Floe.Runtime.ConnectionThreads=0`), for
    /// the tests that compare servers of a given size; otherwise floe's default runtimes.
    exact: bool,
    child: Child,
    port: u16,
    /// The port of the server's ssl endpoint, when the ssl tests run.
    ssl_port: Option<u16>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the rate tests measure `test` on `server`: the systems that run it, on a server of
/// the size it wants (the raw baseline's thread per connection serves every size).
fn serves(server: &Server, test: &Test) -> bool {
    let supported = match server.system {
        System::Ice => test.ice,
        System::Tokio => tokio_baseline::supports(test),
        #[cfg(feature = "tonic")]
        System::Tonic => tonic_system::supports(test),
        _ => true,
    };
    supported
        && (server.system == System::Raw || server.threads == test.clients_and_threads().1)
        && (server.system != System::Floe || server.exact == test.exact_threads())
}

/// A loopback port for a server floe-bench starts (`ports`).
pub(crate) fn free_port() -> u16 {
    ports::free_port()
}

/// Starts `system`'s benchmark server; `scale` starts the one of the `connections` test
/// instead: floe and Ice C++ on their default configuration (runtime size, ACM), and the raw
/// baseline as one epoll thread rather than a thread per connection.
fn start_server(
    system: System,
    threads: usize,
    exact: bool,
    ice_dir: Option<&Path>,
    scale: bool,
) -> Result<Server, String> {
    let port = free_port();
    // The rate tests' servers listen on ssl too when the certificates are there (tonic has
    // no ssl variant here).
    let ssl_port =
        (!scale && !matches!(system, System::Tonic | System::Tokio) && tls::certs().is_some()).then(free_port);
    let mut cmd = match system {
        System::Ice => {
            let mut c = Command::new(ice_dir.ok_or("no Ice peer")?.join("ice-server"));
            // The allocator settings floe's benchmark servers get for large messages; the
            // connections test runs both on their defaults.
            if !scale {
                ice_malloc_env(&mut c);
            }
            c
        }
        _ => Command::new(std::env::current_exe().map_err(|e| e.to_string())?),
    };
    match system {
        System::Ice if scale => {
            // Ice's own default: ACM on, closing idle connections after 60 s.
            cmd.arg(port.to_string()).arg("--Ice.ACM.Timeout=60");
        }
        System::Ice => {
            cmd.arg(port.to_string()).arg(format!("--Ice.ThreadPool.Server.Size={threads}"));
            if let Some(ssl_port) = ssl_port {
                cmd.arg(ssl_port.to_string()).args(tls::ice_args(true));
            }
        }
        s => {
            let name = if scale && s == System::Raw { "raw-scale" } else { s.name() };
            cmd.args(["--serve", name, "--port", &port.to_string(), "--threads", &threads.to_string()]);
            if scale {
                cmd.arg("--defaults");
            }
            if exact {
                cmd.arg("--exact-threads");
            }
            if let Some(ssl_port) = ssl_port {
                cmd.args(["--ssl-port", &ssl_port.to_string()]);
                tls::forward_certs(&mut cmd);
            }
            if s == System::Floe {
                floe_system::forward_properties(&mut cmd);
            }
        }
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let child = cmd.spawn().map_err(|e| format!("cannot start {} server: {e}", system.name()))?;
    // Killed when dropped, on the error paths too.
    let mut server = Server { system, threads, exact, child, port, ssl_port };
    let line = first_line(&mut server.child, READY_LIMIT)?;
    if line.trim() != "ready" {
        return Err(format!("{} server did not start: {line:?}", system.name()));
    }
    Ok(server)
}

/// How long a server may take to say it is ready.
pub(crate) const READY_LIMIT: Duration = Duration::from_secs(30);

/// The first line `child` prints on stdout (a server's ready line), waiting at most `limit`.
/// The rest of its output is read and dropped, so that it never blocks on a full pipe.
pub(crate) fn first_line(child: &mut Child, limit: Duration) -> Result<String, String> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = tx.send(reader.read_line(&mut line).map(|_| line));
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(line)) => Ok(line),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("printed nothing within {limit:?}")),
    }
}

/// (user + system CPU seconds, peak RSS in kB) of a process.
pub(crate) fn proc_stats(pid: u32) -> (f64, u64) {
    let ticks = 100.0;
    let cpu = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
            let utime: f64 = after.get(11)?.parse().ok()?;
            let stime: f64 = after.get(12)?.parse().ok()?;
            Some((utime + stime) / ticks)
        })
        .unwrap_or(0.0);
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    (cpu, rss)
}

fn measure(server: &Server, test: &Test, duration: Duration, ice_dir: Option<&Path>) -> Result<(u64, f64), String> {
    let (clients, _) = test.clients_and_threads();
    if clients > 1 {
        // Several clients at once, each on its own connection; rates add up.
        let results: Vec<Result<(u64, f64), String>> = std::thread::scope(|s| {
            let handles: Vec<_> =
                (0..clients).map(|_| s.spawn(|| measure_one(server, test, duration, ice_dir))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("client thread panicked".into()))).collect()
        });
        let mut ops = 0;
        let mut secs: f64 = 0.0;
        for r in results {
            let (o, s) = r?;
            ops += o;
            secs = secs.max(s);
        }
        return Ok((ops, secs));
    }
    measure_one(server, test, duration, ice_dir)
}

fn measure_one(server: &Server, test: &Test, duration: Duration, ice_dir: Option<&Path>) -> Result<(u64, f64), String> {
    let port = server_port(server, test)?;
    match server.system {
        System::Raw => raw::measure(test, port, duration).map_err(|e| e.to_string()),
        System::Floe => floe_system::measure(test, port, duration).map_err(|e| e.to_string()),
        System::Tokio => tokio_baseline::measure(test, port, duration).map_err(|e| e.to_string()),
        #[cfg(feature = "tonic")]
        System::Tonic => tonic_system::measure(test, server.port, duration),
        #[cfg(not(feature = "tonic"))]
        System::Tonic => Err("built without the tonic feature".into()),
        System::Ice => {
            let out = ice_client(server, test, duration, ice_dir)?.output().map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout);
            let mut it = text.split_whitespace();
            let ops = it.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("ice-client said {text:?}"))?;
            let secs = it.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("ice-client said {text:?}"))?;
            let rest: Vec<f64> = it.filter_map(|s| s.parse().ok()).collect();
            if let [mean, min, max, sd] = rest[..] {
                ice_steps(Some((mean, min, max, sd)));
            }
            Ok((ops, secs))
        }
    }
}

/// The port `test` connects to: the server's ssl port for an ssl test.
fn server_port(server: &Server, test: &Test) -> Result<u16, String> {
    if test.ssl() {
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
        if test.kind().starts_with("batch-send") {
            tests::sender_round(duration).to_string()
        } else {
            test.param.to_string()
        },
    ]);
    if test.ssl() {
        cmd.arg("ssl").args(tls::ice_args(false));
    }
    Ok(cmd)
}

/// What a client process used: the operations it did, its CPU seconds (user + system) and
/// its peak RSS in kB.
#[derive(Debug, Clone, Copy)]
struct ClientUsage {
    ops: u64,
    cpu: f64,
    peak_rss_kb: u64,
}

/// Runs `cmd` (a client that prints its operation count first on stdout and
/// `peak-rss-kb <n>` on stderr) and takes its CPU time from the kernel when it exits (`wait4`).
/// A client still running after `limit` is killed.
fn run_client_process(mut cmd: Command, limit: Duration) -> Result<ClientUsage, String> {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id() as libc::pid_t;
    // The child is reaped only below, after its output ended: until then its pid is its own,
    // so the watchdog cannot kill another process.
    let (output_ended, ended) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if ended.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            // SAFETY: signals our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let read_all = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut text);
            }
            text
        })
    };
    let errors = read_all(child.stderr.take().map(|e| Box::new(e) as Box<dyn Read + Send>));
    let text = read_all(child.stdout.take().map(|o| Box::new(o) as Box<dyn Read + Send>)).join().unwrap_or_default();
    let errors = errors.join().unwrap_or_default();
    let _ = output_ended.send(());
    let _ = watchdog.join();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, which `child` has not waited for; the pointers are to
    // live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if waited != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("client process failed (status {status}): {text:?}"));
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let ops =
        text.split_whitespace().next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("client said {text:?}"))?;
    // The client reports its own peak RSS: the kernel's figure for a child counts the pages
    // of the process it was started from.
    let peak_rss_kb = errors
        .lines()
        .find_map(|l| l.strip_prefix("peak-rss-kb "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("client reported no peak RSS: {errors:?}"))?;
    Ok(ClientUsage { ops, cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime), peak_rss_kb })
}

/// The resources of a twoway client run as a process of its own against `server`, for
/// `duration`.
fn client_usage(server: &Server, duration: Duration, ice_dir: Option<&Path>) -> Result<ClientUsage, String> {
    let twoway = every_test().find(|t| t.name == "twoway").ok_or("no twoway test")?;
    let cmd = match server.system {
        System::Ice => ice_client(server, twoway, duration, ice_dir)?,
        system => {
            let mut cmd = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
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

/// The operations and CPU time that `long` has beyond `short` (the peak RSS is the larger
/// one); `long` whole when the difference is not positive, as noise can make it.
fn calls_only(short: ClientUsage, long: ClientUsage) -> ClientUsage {
    let peak_rss_kb = short.peak_rss_kb.max(long.peak_rss_kb);
    if long.ops > short.ops && long.cpu > short.cpu {
        ClientUsage { ops: long.ops - short.ops, cpu: long.cpu - short.cpu, peak_rss_kb }
    } else {
        ClientUsage { peak_rss_kb, ..long }
    }
}

/// The Ice peer gets the allocator settings floe applies to itself (the tuning ZeroC recommends
/// for large messages), so that both run as their users would run them.
pub(crate) fn ice_malloc_env(cmd: &mut Command) {
    cmd.env("MALLOC_MMAP_THRESHOLD_", (64u32 << 20).to_string())
        .env("MALLOC_TRIM_THRESHOLD_", (128u32 << 20).to_string());
}

static ICE_STEPS: std::sync::Mutex<Option<(f64, f64, f64, f64)>> = std::sync::Mutex::new(None);

fn ice_steps(v: Option<(f64, f64, f64, f64)>) -> Option<(f64, f64, f64, f64)> {
    let mut g = ICE_STEPS.lock().expect("ice steps");
    match v {
        Some(v) => {
            *g = Some(v);
            None
        }
        None => g.take(),
    }
}

/// Builds the Ice C++ peer if Ice's compiler and libraries are installed.
fn build_ice_peer() -> Result<PathBuf, String> {
    build_cpp_peer("ice", "Ice C++ peer")
}

/// Builds the C++ peer in `peers/<dir>` into `target/floe-bench/<dir>` with its Makefile.
pub(crate) fn build_cpp_peer(dir: &str, what: &str) -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers").join(dir);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/floe-bench").join(dir);
    if Command::new("slice2cpp").arg("--version").output().is_err() {
        return Err("slice2cpp is not installed (bash scripts/install-deps installs ZeroC Ice 3.7)".into());
    }
    eprintln!("building the {what}…");
    let status = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg(format!("OUT={}", out.display()))
        .status()
        .map_err(|e| format!("make: {e}"))?;
    if !status.success() {
        return Err(format!("building the {what} failed"));
    }
    Ok(out)
}

/// The `--against` / `--raw-against` tests `--tests` names (all ten without it), or the
/// names it gives that are none of them.
fn against_tests(args: &Args) -> Result<Vec<&'static str>, String> {
    let Some(only) = args.tests.as_deref() else {
        return Ok(against::TESTS.iter().map(|(name, _)| *name).collect());
    };
    let wanted: Vec<&str> = only.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    let unknown: Vec<&str> =
        wanted.iter().copied().filter(|t| !against::TESTS.iter().any(|(name, _)| name == t)).collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = against::TESTS.iter().map(|(name, _)| *name).collect();
        return Err(format!("unknown tests {unknown:?}; the tests are {}", known.join(",")));
    }
    Ok(against::TESTS.iter().map(|(name, _)| *name).filter(|name| wanted.contains(name)).collect())
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    connections::raise_fd_limit();
    if let Err(e) = floe_system::set_properties(&args.floe_properties) {
        eprintln!("floe-bench: {e}");
        return std::process::ExitCode::from(2);
    }
    if let Some(proxy) = &args.against {
        let only = match against_tests(&args) {
            Ok(only) => only,
            Err(e) => {
                eprintln!("floe-bench --against: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        return match against::run(proxy, args.quick, &only, args.stepped) {
            Ok(true) => std::process::ExitCode::SUCCESS,
            Ok(false) => std::process::ExitCode::from(1),
            Err(e) => {
                eprintln!("floe-bench --against: {e}");
                std::process::ExitCode::from(2)
            }
        };
    }
    if let Some(target) = args.relay {
        return match relay::serve(args.port, target) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("floe-bench --relay: {e}");
                std::process::ExitCode::from(2)
            }
        };
    }
    if let Some(proxy) = &args.router_client {
        let only: Vec<String> = args
            .tests
            .as_deref()
            .map_or_else(Vec::new, |l| l.split(',').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect());
        if let Some(bad) = only.iter().find(|t| !router_client::TESTS.contains(&t.as_str())) {
            eprintln!("floe-bench --router-client: no test {bad:?} (tests: {})", router_client::TESTS.join(", "));
            return std::process::ExitCode::from(2);
        }
        let ms = args.duration_ms.unwrap_or(300);
        return match router_client::run(proxy, args.router.as_deref(), ms, &only) {
            Ok(true) => std::process::ExitCode::SUCCESS,
            Ok(false) => std::process::ExitCode::from(1),
            Err(e) => {
                eprintln!("floe-bench --router-client: {e}");
                std::process::ExitCode::from(2)
            }
        };
    }
    if let Some(port) = args.raw_against {
        let only = match against_tests(&args) {
            Ok(only) => only,
            Err(e) => {
                eprintln!("floe-bench --raw-against: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        return match raw_tester::run(port, args.quick, &only, args.stepped) {
            Ok(true) => std::process::ExitCode::SUCCESS,
            Ok(false) => std::process::ExitCode::from(1),
            Err(e) => {
                eprintln!("floe-bench --raw-against: {e}");
                std::process::ExitCode::from(2)
            }
        };
    }
    if args.conn_load {
        let load = connections::LoadArgs {
            port: args.port,
            count: args.conn_count,
            source: args.conn_source,
            burst: args.conn_burst.max(1),
            interval: Duration::from_millis(args.conn_interval_ms.max(1)),
            duration: Duration::from_millis(args.duration_ms.unwrap_or(8_000)),
        };
        return match connections::load(load) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("floe-bench --conn-load: {e}");
                std::process::ExitCode::from(2)
            }
        };
    }
    // The certificates of the ssl tests: a child process is given them; the parent leaves the
    // ssl tests out, with a note, when they are not there.
    let certs_note = tls::set_certs(&args.certs.clone().unwrap_or_else(tls::default_certs)).err();
    if let Some(system) = &args.serve {
        let r = match system.as_str() {
            "raw" => raw::serve(args.port, args.ssl_port).map_err(|e| e.to_string()),
            "raw-scale" => connections::serve_raw_scale(args.port).map_err(|e| e.to_string()),
            "raw-tester" => raw_tester::serve(args.port).map_err(|e| e.to_string()),
            "tokio" => tokio_baseline::serve(args.port).map_err(|e| e.to_string()),
            "floe" => floe_system::serve(
                args.port,
                (!args.defaults).then_some(args.threads),
                args.exact_threads,
                args.ssl_port,
            )
            .map_err(|e| e.to_string()),
            #[cfg(feature = "tonic")]
            "tonic" => tonic_system::serve(args.port, args.threads),
            other => Err(format!("unknown system {other}")),
        };
        if let Err(e) = r {
            eprintln!("floe-bench --serve: {e}");
            return std::process::ExitCode::from(2);
        }
        return std::process::ExitCode::SUCCESS;
    }

    if let Some(system) = &args.client {
        for test in
            every_test().filter(|t| args.tests.as_deref().map(|l| l.split(',').any(|n| n == t.name)).unwrap_or(true))
        {
            let d = Duration::from_millis(args.duration_ms.unwrap_or(if args.quick { 150 } else { 700 }));
            let r = match system.as_str() {
                "raw" => raw::measure(test, args.port, d).map_err(|e| e.to_string()),
                "tokio" => tokio_baseline::measure(test, args.port, d).map_err(|e| e.to_string()),
                #[cfg(feature = "tonic")]
                "tonic" => tonic_system::measure(test, args.port, d),
                "floe" => floe_system::measure(test, args.port, d).map_err(|e| e.to_string()),
                other => Err(format!("no client for system {other}")),
            };
            // Operations and seconds first: the resource measurement reads them.
            match r {
                Ok((ops, secs)) => println!("{ops} {secs:.6} {} {} {:.0}", system, test.name, ops as f64 / secs),
                Err(e) => println!("{} {} error: {e}", system, test.name),
            }
        }
        eprintln!("peak-rss-kb {}", proc_stats(std::process::id()).1);
        return std::process::ExitCode::SUCCESS;
    }
    let runs = args.runs.unwrap_or(if args.quick { 3 } else { 5 }).max(1);
    let duration = Duration::from_millis(if args.quick { 150 } else { 700 });
    let mut selected: Vec<Test> = match &args.tests {
        Some(list) => {
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            every_test().filter(|t| names.contains(&t.name)).copied().collect()
        }
        None => every_test().copied().collect(),
    };
    let mut notes = Vec::new();
    if let Some(why) = certs_note {
        if selected.iter().any(Test::ssl) {
            notes.push(format!("ssl tests skipped: {why}"));
            selected.retain(|t| !t.ssl());
        }
    }
    let want_connections = args.tests.as_deref().is_none_or(|l| l.split(',').any(|n| n.trim() == "connections"));
    let conn_plan = connections::Plan::new(args.quick, args.connections, args.conn_per_process);
    let conn_runs = args.runs.unwrap_or(if args.quick { 1 } else { 3 }).clamp(1, 3);
    // Each side alone needs the Ice peer: it runs where Ice C++ is a peer.
    let want_cross = args.peers.split(',').any(|p| p.trim() == "ice")
        && args.tests.as_deref().is_none_or(|l| l.split(',').any(|n| n.trim() == "cross"));
    let cross_runs = args.runs.unwrap_or(3).clamp(1, 5);
    let want_locate = args.tests.as_deref().is_none_or(|l| l.split(',').any(|n| n.trim() == "locate"));
    let want_router = args.peers.split(',').any(|p| p.trim() == "ice")
        && args.tests.as_deref().is_none_or(|l| l.split(',').any(|n| n.trim() == "router"));
    let want_storm = args.peers.split(',').any(|p| p.trim() == "ice")
        && args.tests.as_deref().is_none_or(|l| l.split(',').any(|n| n.trim() == "storm"));
    let mut ice_dir = None;
    if args.peers.split(',').any(|p| p.trim() == "ice") {
        match build_ice_peer() {
            Ok(d) => ice_dir = Some(d),
            Err(e) => notes.push(format!("ice-cpp skipped: {e}")),
        }
    }
    let mut systems = vec![System::Floe, System::Raw];
    if selected.iter().any(tokio_baseline::supports) {
        systems.push(System::Tokio);
    }
    if ice_dir.is_some() {
        systems.push(System::Ice);
    }
    if args.peers.split(',').any(|p| p.trim() == "tonic") {
        if cfg!(feature = "tonic") {
            systems.push(System::Tonic);
        } else {
            notes.push("tonic skipped: build with `--features tonic` (bash scripts/bench does)".into());
        }
    }
    // The server sizes the tests want: (threads, exact), exact only mattering to floe.
    let mut sizes: Vec<(usize, bool)> =
        selected.iter().map(|t| (t.clients_and_threads().1, t.exact_threads())).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut servers = Vec::new();
    for s in &systems {
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
            match start_server(*s, size.0, size.1, ice_dir.as_deref(), false) {
                Ok(srv) => servers.push(srv),
                Err(e) => notes.push(format!("{} skipped: {e}", s.name())),
            }
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
                // The 48 payload variants of the batched oneways get shorter measurements, so
                // that the full run stays within its time.
                let this_duration = if test.kind().ends_with("-payload") { duration * 2 / 5 } else { duration };
                let r = measure(server, test, this_duration, ice_dir.as_deref());
                let (cpu1, rss) = proc_stats(server.child.id());
                match r {
                    Ok((ops, secs)) => {
                        let rate = ops as f64 / secs.max(1e-9);
                        eprintln!(
                            "[{done}/{total} {:>4.0}s] run {} {:<16} {:<8} {:>14.0} {}",
                            started.elapsed().as_secs_f64(),
                            run + 1,
                            test.name,
                            server.system.name(),
                            rate,
                            test.unit
                        );
                        let steps = match server.system {
                            System::Ice => ice_steps(None),
                            _ => report::take_steps().map(|s| s.stats()),
                        };
                        samples.push(Sample {
                            steps,
                            system: server.system.name(),
                            test: test.name,
                            rate,
                            server_cpu_per_100k: if ops > 0 { (cpu1 - cpu0) * 100_000.0 / ops as f64 } else { 0.0 },
                            server_peak_rss_kb: rss,
                        });
                    }
                    Err(e) => notes.push(format!("{} / {} run {}: {e}", server.system.name(), test.name, run + 1)),
                }
            }
        }
    }
    // Client resources: each system's twoway client twice more, as a process of its own, so
    // that its CPU time and peak RSS are its own (the floe and raw clients otherwise run in
    // this process); the two runs' difference leaves its start-up out.
    let mut clients: Vec<(&'static str, ClientUsage)> = Vec::new();
    if selected.iter().any(|t| t.name == "twoway") {
        for server in servers.iter().filter(|s| s.threads == 1 && !s.exact) {
            match client_call_usage(server, duration, ice_dir.as_deref()) {
                Ok(u) => clients.push((server.system.name(), u)),
                Err(e) => notes.push(format!("{} / client resources: {e}", server.system.name())),
            }
        }
    }
    drop(servers);
    let mut records = report::summarize(&selected, &samples, runs);
    for r in records.iter_mut().filter(|r| r.test == "twoway") {
        if let Some((_, u)) = clients.iter().find(|(sys, _)| *sys == r.system) {
            r.client = Some(report::ClientResources {
                cpu_per_100k: if u.ops > 0 { u.cpu * 100_000.0 / u.ops as f64 } else { 0.0 },
                peak_rss_kb: u.peak_rss_kb,
            });
        }
    }
    let mut machine = report::machine_description();
    if !args.floe_properties.is_empty() {
        // Every report says when floe did not run on its defaults.
        machine.push_str(&format!(", floe with {}", args.floe_properties.join(" ")));
    }
    if !selected.is_empty() {
        println!("{}", report::table(&selected, &records, &machine, started.elapsed()));
    }
    for n in &notes {
        println!("note: {n}");
    }
    let _: &[Record] = &records;
    // The stages after the rate tests add sections (title, text) to every report, and records
    // to the JSON array.
    let mut sections: Vec<(&str, String)> = Vec::new();
    let mut extra_json: Vec<String> = Vec::new();
    if want_cross {
        match cross::build_tester_peer() {
            Ok(dir) => {
                let (series, cross_notes) = cross::run(args.quick, cross_runs, &dir);
                let text = cross::table(&series, args.quick, cross_runs, &cross_notes);
                println!("\n{text}");
                extra_json.extend(cross::json_records(&series));
                sections.push(("Each side alone", text));
            }
            Err(e) => println!("note: cross pairs skipped: {e}"),
        }
    }
    if want_locate {
        let runs = args.runs.unwrap_or(if args.quick { 3 } else { 5 }).max(1);
        let (series, locate_notes) = locate::run(args.quick, runs);
        let text = locate::table(&series, args.quick, runs, &locate_notes);
        println!("\n{text}");
        extra_json.extend(locate::json_records(&series));
        sections.push(("Locate", text));
    }
    if want_router {
        let (series, router_notes) = router::run(args.quick, cross_runs);
        let text = router::table(&series, args.quick, cross_runs, &router_notes);
        println!("\n{text}");
        extra_json.extend(router::json_records(&series));
        sections.push(("Router", text));
    }
    if want_storm {
        let (series, storm_notes) = storm::run(args.quick, cross_runs);
        let text = storm::table(&series, args.quick, cross_runs, &storm_notes);
        println!("\n{text}");
        extra_json.extend(storm::json_records(&series));
        sections.push(("Storm", text));
    }
    if args.tests.as_deref().is_some_and(|l| l.split(',').any(|n| n.trim() == "router-sessions")) {
        let n = args.connections.unwrap_or(if args.quick { 2_000 } else { 10_000 });
        let (outcomes, notes) = router::run_sessions(n, args.quick);
        let text = router::sessions_table(&outcomes, &notes);
        println!("\n{text}");
        extra_json.extend(router::sessions_json(&outcomes));
        sections.push(("Router sessions", text));
    }
    if want_connections {
        let plan = connections::Plan {
            measure: args.conn_measure_ms.map(Duration::from_millis).unwrap_or(conn_plan.measure),
            ..conn_plan
        };
        let (outcomes, conn_notes) = run_connections(&plan, &systems, ice_dir.as_deref(), conn_runs);
        let text = connections::table(&plan, &outcomes, &conn_notes);
        println!("\n{text}");
        extra_json.extend(connections::json_records(&outcomes));
        sections.push(("Connections", text));
    }
    if let Some(path) = &args.json {
        let mut all = report::json(&records);
        if !extra_json.is_empty() {
            let body = all.trim_end().trim_end_matches(']').trim_end().to_string();
            let sep = if body.ends_with('[') { "\n" } else { ",\n" };
            all = format!("{body}{sep}  {}\n]\n", extra_json.join(",\n  "));
        }
        if let Err(e) = std::fs::write(path, all) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
    if let Some(path) = &args.markdown {
        let mut md = report::markdown(&records, &machine, started.elapsed(), std::time::SystemTime::now());
        for (_, text) in &sections {
            md.push('\n');
            md.push_str(text);
        }
        if let Err(e) = std::fs::write(path, md) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
    let html = args
        .html
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/floe-bench/report.html"));
    if let Some(dir) = html.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut page = report::html(&selected, &records, &machine, &notes);
    for (title, text) in &sections {
        let section = format!("<h2>{title}</h2>\n<pre>{}</pre>\n</body>", report::html_escape(text));
        page = page.replacen("</body>", &section, 1);
    }
    match std::fs::write(&html, page) {
        Ok(()) => println!("HTML report: {}", html.display()),
        Err(e) => eprintln!("cannot write {}: {e}", html.display()),
    }
    std::process::ExitCode::SUCCESS
}

/// The `connections` test: `runs` rounds, each starting every system's scale server afresh and
/// measuring it under the same load, systems interleaved within a round.
fn run_connections(
    plan: &connections::Plan,
    systems: &[System],
    ice_dir: Option<&Path>,
    runs: usize,
) -> (Vec<connections::Outcome>, Vec<String>) {
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
            match connections::run(system.name(), server.child.id(), server.port, plan) {
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
mod client_process_tests {
    use super::*;

    #[test]
    fn a_server_that_prints_nothing_is_given_up_on_within_the_limit() {
        let mut silent = Command::new("sleep").arg("10").stdout(Stdio::piped()).spawn().unwrap();
        let started = Instant::now();
        let r = first_line(&mut silent, Duration::from_millis(200));
        assert!(r.is_err() && started.elapsed() < Duration::from_secs(5), "{r:?}");
        let _ = silent.kill();
        let _ = silent.wait();
        let mut ready = Command::new("echo").arg("ready").stdout(Stdio::piped()).spawn().unwrap();
        assert_eq!(first_line(&mut ready, Duration::from_secs(10)).unwrap(), "ready\n");
        let _ = ready.wait();
    }

    #[test]
    fn the_calls_of_a_client_are_what_a_longer_run_adds() {
        let short = ClientUsage { ops: 10_000, cpu: 0.40, peak_rss_kb: 6_000 };
        let long = ClientUsage { ops: 30_000, cpu: 1.00, peak_rss_kb: 6_100 };
        let calls = calls_only(short, long);
        assert_eq!((calls.ops, calls.peak_rss_kb), (20_000, 6_100));
        assert!((calls.cpu - 0.60).abs() < 1e-9, "{calls:?}");
        // Noise that leaves no positive difference keeps the longer run whole.
        let noisy = ClientUsage { ops: 29_000, cpu: 0.30, peak_rss_kb: 5_900 };
        let whole = calls_only(long, noisy);
        assert_eq!((whole.ops, whole.peak_rss_kb), (29_000, 6_100));
        assert!((whole.cpu - 0.30).abs() < 1e-9, "{whole:?}");
    }

    #[test]
    fn a_client_process_reports_its_operations_cpu_and_peak_rss() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo 5 1.0 floe twoway 5; echo peak-rss-kb 123 >&2"]);
        let usage = run_client_process(cmd, Duration::from_secs(30)).expect("the client ran");
        assert_eq!((usage.ops, usage.peak_rss_kb), (5, 123));
        assert!(usage.cpu >= 0.0 && usage.cpu < 5.0, "{}", usage.cpu);
    }

    #[test]
    fn a_client_process_that_hangs_is_killed_and_reported() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let start = std::time::Instant::now();
        let r = run_client_process(cmd, Duration::from_millis(300));
        assert!(r.is_err(), "{r:?}");
        assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    }

    #[test]
    fn a_client_process_without_its_figures_is_an_error() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo 5 1.0"]);
        assert!(run_client_process(cmd, Duration::from_secs(30)).is_err());
    }

    #[test]
    fn against_runs_the_tests_named_and_refuses_unknown_names() {
        let args = |tests: Option<&str>| {
            let mut argv = vec!["floe-bench", "--against", "tester:tcp -p 1"];
            if let Some(t) = tests {
                argv.extend(["--tests", t]);
            }
            Args::parse_from(argv)
        };
        assert_eq!(against_tests(&args(None)).unwrap().len(), 10);
        // In the workload's order, whatever the order given.
        assert_eq!(against_tests(&args(Some("sd_recv, oneway"))).unwrap(), ["oneway", "sd_recv"]);
        let e = against_tests(&args(Some("oneway,onewya"))).unwrap_err();
        assert!(e.contains("onewya"), "{e}");
    }
}
