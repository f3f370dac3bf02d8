//! Processes: finding the binaries beside this one (the helper, floe's servers and services),
//! building the C++ peers, starting a peer and waiting for its ready line, running a client
//! process to its end with its CPU time (`wait4`), and reading a process's CPU time, RSS and
//! file limit from `/proc`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

pub use crate::ports::free_port;

/// The name of the binary of the helper roles (`--serve`, `--client`, `--against`, …).
pub const HELPER: &str = "floe-bench-helper";

/// How long a server may take to say it is ready.
pub const READY_LIMIT: Duration = Duration::from_secs(30);

/// The binary the benchmark starts its helper processes from: `floe-bench-helper` beside this
/// executable when it is there and not older than this executable (`cargo run --bin
/// floe-bench` builds only floe-bench), otherwise this executable, which takes the helper
/// roles' flags too.
pub fn helper_exe() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let helper = exe.with_file_name(HELPER);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(&helper), modified(&exe)) {
        (Some(h), Some(e)) if h >= e => Ok(helper),
        _ => Ok(exe),
    }
}

/// The binary `name` built beside this executable, or an error saying how to build it
/// (`build`, e.g. `cargo build --release -p floe-registry`, which `scripts/bench` does).
pub fn beside_exe(name: &str, build: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} is not built ({build})", path.display()))
    }
}

/// The first line `child` prints on stdout (a server's ready line), waiting at most `limit`.
/// The rest of its output is read and dropped, so that it never blocks on a full pipe.
pub fn first_line(child: &mut Child, limit: Duration) -> Result<String, String> {
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
pub fn proc_stats(pid: u32) -> (f64, u64) {
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
    (cpu, status_kb(pid, "VmHWM:"))
}

/// The resident set of process `pid` in kB (VmRSS: what it holds now, not its peak).
pub fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS:")
}

/// A kB figure of `/proc/<pid>/status` (0 when it cannot be read).
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

/// The soft file limit of process `pid`, from /proc.
pub fn fd_limit_of(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Raises this process's soft file-descriptor limit to its hard limit; returns the limit.
/// Children (servers, load processes) inherit it.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    lim.rlim_cur
}

/// The Ice peer gets the allocator settings floe applies to itself (the tuning ZeroC recommends
/// for large messages), so that both run as their users would run them.
pub fn ice_malloc_env(cmd: &mut Command) {
    cmd.env("MALLOC_MMAP_THRESHOLD_", (64u32 << 20).to_string())
        .env("MALLOC_TRIM_THRESHOLD_", (128u32 << 20).to_string());
}

/// Builds the C++ peer in `peers/<dir>` into `target/floe-bench/<dir>` with its Makefile.
pub fn build_cpp_peer(dir: &str, what: &str) -> Result<PathBuf, String> {
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

/// Builds Ice 3.8's C++ core once (`scripts/build-ice38`, cached under `target/ice38/`; about
/// five minutes on two cores the first time), then the C++ peer in `peers/<dir>` against it
/// into `target/floe-bench/<dir>-3.8`.
pub fn build_cpp_peer_ice38(dir: &str, what: &str) -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    eprintln!("building Ice 3.8 (once) and the {what} against it…");
    let built = Command::new("bash")
        .arg(root.join("scripts/build-ice38"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("scripts/build-ice38: {e}"))?;
    if !built.status.success() {
        return Err("building Ice 3.8 failed (scripts/build-ice38)".into());
    }
    let cpp = String::from_utf8_lossy(&built.stdout).lines().last().unwrap_or("").trim().to_string();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers").join(dir);
    let out = root.join("target/floe-bench").join(format!("{dir}-3.8"));
    let status = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg(format!("OUT={}", out.display()))
        .arg(format!("ICE_CPP={cpp}"))
        .status()
        .map_err(|e| format!("make: {e}"))?;
    if !status.success() {
        return Err(format!("building the {what} against Ice 3.8 failed"));
    }
    Ok(out)
}

/// What a client process used: the operations it did, its CPU seconds (user + system) and
/// its peak RSS in kB.
#[derive(Debug, Clone, Copy)]
pub struct ClientUsage {
    /// Operations done (the first figure it printed).
    pub ops: u64,
    /// CPU seconds, user + system.
    pub cpu: f64,
    /// Peak RSS in kB, as the client reported it.
    pub peak_rss_kb: u64,
}

/// Runs `cmd` (a client that prints its operation count first on stdout and
/// `peak-rss-kb <n>` on stderr) and takes its CPU time from the kernel when it exits (`wait4`).
/// A client still running after `limit` is killed.
pub fn run_client_process(mut cmd: Command, limit: Duration) -> Result<ClientUsage, String> {
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

/// The operations and CPU time that `long` has beyond `short` (the peak RSS is the larger
/// one); `long` whole when the difference is not positive, as noise can make it.
pub fn calls_only(short: ClientUsage, long: ClientUsage) -> ClientUsage {
    let peak_rss_kb = short.peak_rss_kb.max(long.peak_rss_kb);
    if long.ops > short.ops && long.cpu > short.cpu {
        ClientUsage { ops: long.ops - short.ops, cpu: long.cpu - short.cpu, peak_rss_kb }
    } else {
        ClientUsage { peak_rss_kb, ..long }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::time::Instant;

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
}
