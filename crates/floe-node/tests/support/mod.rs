//! Helpers of floe-node's tests: ports, child processes killed when dropped, temporary
//! directories, ZeroC's registry and icegridadmin, and floe-node itself, all on loopback.
#![allow(dead_code, unreachable_pub)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[allow(clippy::duplicate_mod)]
#[path = "../../../../tests/support/ports.rs"]
mod ports;

/// The instance name of the test grids.
pub const INSTANCE: &str = "NodeGrid";

/// A free loopback port (block 5 of `ports`).
pub fn free_port() -> u16 {
    ports::unused_port(5)
}

/// A child process killed when dropped; keeps what it printed.
pub struct Proc {
    pub child: Child,
    pub output: Arc<Mutex<String>>,
}

impl Drop for Proc {
    /// SIGTERM first, so that a node stops its servers (which run in process groups of their
    /// own and would outlive a killed node), then SIGKILL after 10 s.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// Sends SIGTERM and waits up to 30 s for the exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        kill(self.child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the process did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill_now(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What it printed so far.
    pub fn printed(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

/// Sends a signal with kill(1).
pub fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Starts `cmd` and waits (up to 30 s) for it to print `marker` on stdout.
pub fn start_until(mut cmd: Command, marker: &str) -> Proc {
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let output = Arc::new(Mutex::new(String::new()));
    let o = output.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            o.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let mut proc = Proc { child, output };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !proc.printed().contains(marker) {
        if let Some(status) = proc.child.try_wait().unwrap() {
            panic!("{cmd:?} exited ({status}) before `{marker}': {}", proc.printed());
        }
        assert!(Instant::now() < deadline, "{cmd:?} did not print `{marker}': {}", proc.printed());
        std::thread::sleep(Duration::from_millis(20));
    }
    proc
}

/// A temporary directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        // Unique in this test program too: tests run on each registry at the same time.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("node-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        open_to_all(&dir);
        TempDir(dir)
    }

    pub fn sub(&self, name: &str) -> PathBuf {
        let d = self.0.join(name);
        std::fs::create_dir_all(&d).unwrap();
        open_to_all(&d);
        d
    }
}

/// A node run as root runs servers as `nobody` (as IceGrid's does): they must be able to
/// reach and write the test's directories, as /tmp lets everyone.
fn open_to_all(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Kept when the test fails (or with FLOE_KEEP_TEST_DIRS set): the node's log and the
        // servers' output are in it.
        if std::thread::panicking() || std::env::var_os("FLOE_KEEP_TEST_DIRS").is_some() {
            eprintln!("kept {} (the node's log, the servers' files and output)", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The locator proxy of a registry whose client endpoint is on `port`.
pub fn locator(port: u16) -> String {
    format!("{INSTANCE}/Locator:tcp -h 127.0.0.1 -p {port}")
}

/// ZeroC's icegridregistry 3.7 on `port`, its database in `data`.
pub fn icegridregistry(port: u16, data: &Path) -> Proc {
    icegridregistry_with(port, data, &[])
}

/// ZeroC's icegridregistry 3.7 on `port`, its database in `data`, with `extra` arguments.
pub fn icegridregistry_with(port: u16, data: &Path, extra: &[String]) -> Proc {
    let mut cmd = Command::new("icegridregistry");
    cmd.args([
        &format!("--IceGrid.InstanceName={INSTANCE}"),
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        &format!("--IceGrid.Registry.LMDB.Path={}", data.display()),
        "--IceGrid.Registry.LMDB.MapSize=64",
        &format!("--IceGrid.Registry.AdminPermissionsVerifier={INSTANCE}/NullPermissionsVerifier"),
        "--IceGrid.Registry.Discovery.Enabled=0",
        "--Ice.PrintAdapterReady=1",
    ])
    .args(extra)
    .stderr(Stdio::null());
    start_until(cmd, "IceGrid.Registry.Client ready")
}

/// Which registry a test's grid runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registry {
    /// ZeroC's icegridregistry 3.7.
    Zeroc,
    /// floe-registry.
    Floe,
}

/// The registry of kind `kind` on `port`, its database in `data`.
pub fn registry(kind: Registry, port: u16, data: &Path) -> Proc {
    match kind {
        Registry::Zeroc => icegridregistry(port, data),
        Registry::Floe => floe_registry(port, data),
    }
}

/// The floe-registry binary of this build (beside the test program, in the target
/// directory's profile directory), built first if `cargo test` did not build it.
pub fn floe_registry_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
            let binary = profile_dir.join("floe-registry");
            if !binary.exists() {
                let status = Command::new(env!("CARGO"))
                    .args(["build", "-p", "floe-registry", "--bin", "floe-registry"])
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .status()
                    .unwrap();
                assert!(status.success(), "cannot build floe-registry");
            }
            binary
        })
        .clone()
}

/// floe-registry on `port`, its database in `data`, with null permissions verifiers.
pub fn floe_registry(port: u16, data: &Path) -> Proc {
    floe_registry_with(port, data, &[format!("--IceGrid.Registry.LMDB.Path={}", data.display())])
}

/// floe-registry on `port` with null permissions verifiers, its log in `dir`, and `extra`.
pub fn floe_registry_with(port: u16, dir: &Path, extra: &[String]) -> Proc {
    let mut cmd = Command::new(floe_registry_binary());
    cmd.args([
        &format!("--IceGrid.InstanceName={INSTANCE}"),
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        &format!("--IceGrid.Registry.PermissionsVerifier={INSTANCE}/NullPermissionsVerifier"),
        &format!("--IceGrid.Registry.AdminPermissionsVerifier={INSTANCE}/NullPermissionsVerifier"),
    ])
    .args(extra)
    .env("RUST_LOG", "floe_registry=debug")
    .stderr(std::fs::File::create(dir.join(format!("floe-registry-{port}.log"))).unwrap());
    start_until(cmd, "ready")
}

/// floe-node `name` for the registry on `port`, with its data and output under `dir`.
pub fn floe_node(name: &str, port: u16, dir: &TempDir, extra: &[String]) -> Proc {
    let mut args = vec![format!("--Ice.Default.Locator={}", locator(port))];
    args.extend_from_slice(extra);
    floe_node_with(name, dir, &args)
}

/// The properties of node `name` that lay it out under `dir`, for floe-node and icegridnode
/// alike: its endpoints, `<name>-data` and `<name>-out`, and the wait for its servers.
fn node_layout(name: &str, dir: &TempDir) -> [String; 5] {
    [
        format!("--IceGrid.Node.Name={name}"),
        "--IceGrid.Node.Endpoints=tcp -h 127.0.0.1".to_string(),
        format!("--IceGrid.Node.Data={}", dir.sub(&format!("{name}-data")).display()),
        format!("--IceGrid.Node.Output={}", dir.sub(&format!("{name}-out")).display()),
        "--IceGrid.Node.WaitTime=20".to_string(),
    ]
}

/// Which node program a grid runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// ZeroC's icegridnode 3.7.
    Zeroc,
    /// floe-node.
    Floe,
}

/// Node `name` of kind `kind` for the registry on `port`, laid out under `dir`, with `extra`.
pub fn node(kind: Node, name: &str, port: u16, dir: &TempDir, extra: &[String]) -> Proc {
    match kind {
        Node::Zeroc => icegridnode(name, port, dir, extra),
        Node::Floe => floe_node(name, port, dir, extra),
    }
}

/// floe-node `name` with its data and output under `dir`, and `args`.
pub fn floe_node_with(name: &str, dir: &TempDir, args: &[String]) -> Proc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-node"));
    cmd.args(node_layout(name, dir))
        .args(args)
        .env("RUST_LOG", "floe_node=debug,floe_registry=debug")
        .stderr(std::fs::File::create(dir.0.join(format!("{name}.log"))).unwrap());
    start_until(cmd, "floe-node ready")
}

/// ZeroC's icegridnode 3.7 `name` for the registry on `port`, laid out as [`floe_node`]
/// lays floe-node out (data and output under `dir`), with `extra` arguments; returned once
/// it has registered and its servers are ready (the line it prints on stderr, which goes to
/// `<dir>/<name>.log` unless `Ice.StdErr` is among `extra`).
pub fn icegridnode(name: &str, port: u16, dir: &TempDir, extra: &[String]) -> Proc {
    let log = dir.0.join(format!("{name}.log"));
    let ready_file =
        extra.iter().find_map(|a| a.strip_prefix("--Ice.StdErr=")).map(PathBuf::from).unwrap_or_else(|| log.clone());
    let mut cmd = Command::new("icegridnode");
    cmd.args(node_layout(name, dir))
        .args([format!("--IceGrid.Node.PrintServersReady={name}"), format!("--Ice.Default.Locator={}", locator(port))])
        .args(extra)
        .stderr(std::fs::File::create(&log).unwrap());
    let proc = start_until(cmd, "");
    let marker = format!("{name} ready");
    eventually(Duration::from_secs(30), &format!("icegridnode printed `{marker}'"), || {
        std::fs::read_to_string(&ready_file).unwrap_or_default().contains(&marker)
    });
    proc
}

/// Runs one icegridadmin command against the registry on `port`: (success, stdout, stderr).
pub fn icegridadmin(port: u16, command: &str) -> (bool, String, String) {
    let out = Command::new("icegridadmin")
        .args([
            &format!("--Ice.Default.Locator={}", locator(port)),
            "--IceGridAdmin.Username=admin",
            "--IceGridAdmin.Password=any",
            "-e",
            command,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An icegridadmin command that must succeed; its output.
pub fn admin_ok(port: u16, command: &str) -> String {
    let (ok, out, err) = icegridadmin(port, command);
    assert!(ok, "`{command}' failed:\n{out}\n{err}");
    out
}

/// Polls `what` every 100 ms until it holds, up to `limit`.
pub fn eventually(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The test servers' directory.
pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers")
}

/// Writes an application descriptor from `template` (in tests/servers), with `@SERVERS@`
/// replaced by the test servers' directory and `@BUILT@` by where [`cpp_server`] builds;
/// returns its path.
pub fn descriptor(dir: &TempDir, template: &str) -> PathBuf {
    let text = std::fs::read_to_string(servers_dir().join(template)).unwrap();
    let path = dir.0.join(template);
    let text =
        text.replace("@SERVERS@", &servers_dir().to_string_lossy()).replace("@BUILT@", &built_dir().to_string_lossy());
    std::fs::write(&path, text).unwrap();
    path
}

fn built_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("floe-node-test-servers")
}

/// Builds tests/servers/pinged.cpp with g++ against Ice for C++ (libzeroc-ice-dev), once per
/// test program; returns the executable.
pub fn cpp_server() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = built_dir();
            std::fs::create_dir_all(&dir).unwrap();
            let exe = dir.join("pinged");
            let tmp = dir.join(format!("pinged.{}", std::process::id()));
            let out = Command::new("g++")
                .args(["-std=c++11", "-DICE_CPP11_MAPPING", "-O0", "-o"])
                .arg(&tmp)
                .arg(servers_dir().join("pinged.cpp"))
                .args(["-lIce++11", "-lpthread"])
                .output()
                .unwrap();
            assert!(out.status.success(), "g++ failed: {}", String::from_utf8_lossy(&out.stderr));
            std::fs::rename(&tmp, &exe).unwrap();
            exe
        })
        .clone()
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compiles tests/servers/Ping.java against Ice for Java (libzeroc-ice3.7-java), once per test
/// program; returns the class path to run `Ping` with.
pub fn java_client() -> String {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = built_dir().join(format!("java-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let out = Command::new("javac")
                .args(["-cp", ICE_JAR, "-d"])
                .arg(&dir)
                .arg(servers_dir().join("Ping.java"))
                .output()
                .unwrap();
            assert!(out.status.success(), "javac failed: {}", String::from_utf8_lossy(&out.stderr));
            format!("{}:{ICE_JAR}", dir.display())
        })
        .clone()
}

/// Ice for Java's jar (Debian libzeroc-ice3.7-java).
pub const ICE_JAR: &str = "/usr/share/java/ice-3.7.8.jar";

/// Waits (up to 20 s) until the registry on `port` lists node `name`.
pub fn wait_for_node(port: u16, name: &str) {
    eventually(Duration::from_secs(20), &format!("{name} is listed"), || {
        icegridadmin(port, "node list").1.lines().any(|l| l.trim() == name)
    });
}
