//! Helpers shared by the registry's tests: ports, child processes (killed when dropped),
//! temporary directories, and the floe-registry binary started on loopback.
#![allow(dead_code, unreachable_pub)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// The etcd test loads this file a second time through `etcd_cluster`; each copy hands out
// ports of its own block.
#[allow(clippy::duplicate_mod)]
#[path = "../../../../tests/support/ports.rs"]
mod ports;

/// A free port on the loopback interface that no other server of this test program was given
/// (block 1 of `ports`; the etcd cluster's members take block 0).
pub fn free_port() -> u16 {
    ports::unused_port(1)
}

/// A child process killed when dropped; keeps what it printed.
pub struct Server {
    pub child: Child,
    pub output: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Sends SIGTERM and waits (up to 10 s) for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        send_signal(self.child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the process did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

/// Sends a signal with kill(1), to the one process `pid`.
fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success());
}

/// Starts `cmd` and waits (up to 30 s) for it to print `marker`.
pub fn start_until(mut cmd: Command, marker: &str) -> Server {
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(marker) {
        assert!(Instant::now() < deadline, "{cmd:?} did not get ready: {:?}", String::from_utf8_lossy(&seen));
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "{cmd:?} exited: {:?}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let output = Arc::new(Mutex::new(String::from_utf8_lossy(&seen).to_string()));
    let o = output.clone();
    // Keep draining its output so that it never blocks on a full pipe.
    std::thread::spawn(move || {
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            o.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Server { child, output }
}

/// A temporary directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The instance name the tests use.
pub const INSTANCE: &str = "TestGrid";

/// floe-registry on `port` (client endpoints) with its data in `data` and null permissions
/// verifiers, plus `extra` arguments.
pub fn registry(port: u16, data: &Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--IceGrid.Registry.PermissionsVerifier=TestGrid/NullPermissionsVerifier",
        "--IceGrid.Registry.AdminPermissionsVerifier=TestGrid/NullPermissionsVerifier",
    ];
    args.extend_from_slice(extra);
    bare_registry(port, data, &args)
}

/// floe-registry on `port` with its data in `data` and only the `extra` arguments besides.
pub fn bare_registry(port: u16, data: &Path, extra: &[&str]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-registry"));
    cmd.args([
        &format!("--IceGrid.InstanceName={INSTANCE}"),
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        &format!("--IceGrid.Registry.LMDB.Path={}", data.display()),
    ])
    .args(extra)
    .stderr(Stdio::null());
    start_until(cmd, "ready")
}

/// The locator proxy string for a registry on `port`.
pub fn locator(port: u16) -> String {
    format!("{INSTANCE}/Locator:tcp -h 127.0.0.1 -p {port}")
}

/// `--Ice.Default.Locator=…` for a registry on `port`.
pub fn locator_property(port: u16) -> String {
    format!("--Ice.Default.Locator={}", locator(port))
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A binary of the floe-interop package (`floe-interop-server`, `floe-interop-client`),
/// built into this build's target directory if it is not there yet (cargo releases its build
/// lock while tests run).
pub fn interop_binary(name: &str) -> PathBuf {
    static BUILT: Mutex<bool> = Mutex::new(false);
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test>
    let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let target_dir = profile_dir.parent().unwrap().to_path_buf();
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let mut built = BUILT.lock().unwrap();
    if !*built {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.current_dir(repo_root())
            .args(["build", "--quiet", "--locked", "-p", "floe-interop", "--bins", "--target-dir"])
            .arg(&target_dir);
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "cannot build the floe-interop binaries");
        *built = true;
    }
    profile_dir.join(name)
}

/// Runs an interop client to completion; returns its summary line after checking that it
/// passed at least `min_checks` checks and failed none.
pub fn run_client(mut cmd: Command, min_checks: usize) -> String {
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
    last
}

/// Runs icegridadmin against the registry on `port` with one command; returns (success,
/// stdout, stderr).
pub fn icegridadmin(port: u16, command: &str) -> (bool, String, String) {
    let out = Command::new("timeout")
        .args(["30", "icegridadmin", &locator_property(port), "-u", "admin", "-p", "admin", "-e", command])
        .output()
        .expect("icegridadmin runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A tokio runtime for in-process clients.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}
