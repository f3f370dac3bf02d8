//! Helpers shared by the interop test files: ports, the floe interop server as a child
//! process, raw connections and process memory.
#![allow(dead_code, unreachable_pub)]

use std::io::Read;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../support/ports.rs"]
mod ports;

/// A loopback port for a server a test starts, free now and never handed out before by this
/// test program; from below the ephemeral range, so that no `bind(0)` or outgoing connection
/// takes it before the server binds it (`tests/support/ports.rs`, block 2).
pub fn free_port() -> u16 {
    ports::unused_port(2)
}

/// A child process killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Server {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// Starts `cmd` and waits (up to 30 s) for it to print `TestAdapter ready`.
pub fn start(cmd: Command) -> Server {
    start_until(cmd, "TestAdapter ready")
}

/// Starts `cmd` and waits (up to 30 s) for it to print `marker`.
pub fn start_until(cmd: Command, marker: &str) -> Server {
    start_logged(cmd, marker, None)
}

/// [`start_until`] for a program whose stderr goes to `log`, which a failure to start shows.
pub fn start_logged(mut cmd: Command, marker: &str, log: Option<&std::path::Path>) -> Server {
    let logged = || log.and_then(|l| std::fs::read_to_string(l).ok()).unwrap_or_default();
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(marker) {
        assert!(
            Instant::now() < deadline,
            "{cmd:?} did not get ready: {:?}\n{}",
            String::from_utf8_lossy(&seen),
            logged()
        );
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            panic!("{cmd:?} exited ({status}): {:?}\n{}", String::from_utf8_lossy(&seen), logged());
        }
        seen.extend_from_slice(&buf[..n]);
    }
    // Keep draining its output so that it never blocks on a full pipe.
    std::thread::spawn(move || while out.read(&mut buf).map(|n| n > 0).unwrap_or(false) {});
    Server(child)
}

/// The floe interop server on `endpoints`, with extra arguments. Its stderr goes to a file
/// of the test's temporary directory, shown if it fails to start.
pub fn floe_server(endpoints: &str, extra: &[&str]) -> Server {
    static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("floe-interop-server-{}-{n}.stderr", std::process::id()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-interop-server"));
    cmd.args(["--endpoints", endpoints]).args(extra);
    match std::fs::File::create(&log) {
        Ok(file) => cmd.stderr(file),
        Err(_) => cmd.stderr(Stdio::null()),
    };
    start_logged(cmd, "TestAdapter ready", Some(&log))
}

/// A raw connection that has read the server's ValidateConnection message.
pub fn connect(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut v = [0u8; 14];
    s.read_exact(&mut v).unwrap();
    assert_eq!(&v[..4], b"IceP");
    s
}

/// Whether the peer closed the connection within `limit` (whatever it sent before).
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 1024];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// Resident memory of a process, in kB.
pub fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap()
}

/// Runs an interop client (floe's or Ice's) to completion, checks its closing
/// `N passed, 0 failed` line with at least `min_checks` passed and no `FAIL` line, and returns
/// that line.
pub fn run_client(mut cmd: Command, min_checks: usize) -> String {
    let start = Instant::now();
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let last = stdout.lines().last().unwrap_or("").to_string();
    assert!(
        out.status.success() && failures.is_empty(),
        "{cmd:?} failed ({:?}):\n{}\n{}",
        out.status,
        failures.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    let passed: usize = last.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(last.ends_with(" 0 failed") && passed >= min_checks, "unexpected summary {last:?}");
    eprintln!("{cmd:?}: {last} in {:?}", start.elapsed());
    last
}

/// The floe-router binary, built once per test process (it belongs to another package).
pub fn router_binary() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "floe-router", "--bin", "floe-router"])
                .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building floe-router failed");
            std::path::Path::new(env!("CARGO_BIN_EXE_floe-interop-client")).with_file_name("floe-router")
        })
        .clone()
}
