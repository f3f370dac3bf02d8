//! floe's client against Ice's own servers: a suite's Python server (`Server.py`, unmodified)
//! or Ice 3.8's C++ server of the suite is started as Ice's test driver starts servers, and a
//! Rust port of that suite's client checks (`AllTests.py`) runs against it on a floe
//! communicator configured as the driver configures clients.

pub(crate) mod binding;
pub(crate) mod exceptions;
pub(crate) mod location;
pub(crate) mod objects;
pub(crate) mod operations;
pub(crate) mod optional;
pub(crate) mod proxy;

use std::future::Future;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use floe::Communicator;

use crate::runner::{kill, port_base, sources, wait_with_limit, DRIVER_PROPERTIES, PYTHON, SERVER_PROPERTIES};

/// What a port gets: the client communicator and the test endpoints of the server.
pub(crate) struct Helper {
    pub(crate) communicator: Communicator,
    pub(crate) base: u16,
    /// The arguments the communicator was made from (for more communicators like it).
    pub(crate) args: Vec<String>,
}

impl Helper {
    /// The endpoint of test port `num`, as Ice's `getTestEndpoint(num)` makes it.
    pub(crate) fn endpoint(&self, num: u16) -> String {
        format!("tcp -p {}", self.base + num)
    }

    /// A proxy to `identity` on test port 0.
    pub(crate) fn proxy(&self, identity: &str) -> floe::ObjectPrx {
        let s = format!("{identity}:{}", self.endpoint(0));
        self.communicator.string_to_proxy(&s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }
}

/// An Ice server process, killed when dropped (a failed check must not leave it running).
struct Server {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            kill(child);
        }
    }
}

/// Starts `python/test/Ice/<dir>/<script>` (cwd the suite's directory, as the driver runs it)
/// and waits for each of `adapters` to be reported ready.
fn start_python(dir: &str, script: &str, args: &[String], adapters: &[&str]) -> Result<Server, String> {
    let suite = sources().join("Ice").join(dir);
    let mut command = Command::new(PYTHON);
    command
        .current_dir(&suite)
        .env("PYTHONPATH", format!("{}:.", sources().display()))
        .arg(sources().join("TestHelper.py"))
        .arg(script);
    start_server(command, &format!("{dir}/{script}"), args, adapters)
}

/// Starts `command` with `args` and waits for each of `adapters` to be reported ready.
fn start_server(mut command: Command, what: &str, args: &[String], adapters: &[&str]) -> Result<Server, String> {
    let mut child = command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut server = Server { child: Some(child), stderr: Some(stderr) };
    let mut waiting: Vec<&str> = adapters.to_vec();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !waiting.is_empty() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => waiting.retain(|a| line.trim() != format!("{a} ready")),
            Err(_) => {
                if let Some(c) = server.child.as_mut() {
                    kill(c);
                }
                let err = server.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
                return Err(format!("{what} never printed `{} ready`; stderr:\n{err}", waiting[0]));
            }
        }
    }
    Ok(server)
}

/// How a port is run: the suite's directory, the server script, the adapters it reports
/// ready, the number of test ports it uses, and properties for both sides (besides the
/// driver's).
pub(crate) struct Setup<'a> {
    pub(crate) dir: &'a str,
    pub(crate) script: &'a str,
    pub(crate) adapters: &'a [&'a str],
    pub(crate) ports: u16,
    pub(crate) encoding: &'a str,
    pub(crate) extra: &'a [&'a str],
    /// Properties for the client only (those the suite's `Client.py` sets).
    pub(crate) client_extra: &'a [&'a str],
}

/// Runs `checks` against the suite's Python server and requires the server to exit 0 after
/// the checks (which end with the suite's `shutdown`).
pub(crate) fn run<F, Fut>(setup: Setup<'_>, checks: F)
where
    F: FnOnce(Helper) -> Fut,
    Fut: Future<Output = ()>,
{
    let (dir, script) = (setup.dir, setup.script);
    run_against(setup, |args, adapters| start_python(dir, script, args, adapters), checks);
}

/// [`run`] against a server that is a program of its own (an Ice 3.8 C++ test server), run
/// in `cwd` (ignores `setup.script`).
pub(crate) fn run_program<F, Fut>(setup: Setup<'_>, program: &std::path::Path, cwd: &std::path::Path, checks: F)
where
    F: FnOnce(Helper) -> Fut,
    Fut: Future<Output = ()>,
{
    let what = format!("{} ({})", program.display(), setup.dir);
    let start = |args: &[String], adapters: &[&str]| {
        let mut command = Command::new(program);
        command.current_dir(cwd);
        start_server(command, &what, args, adapters)
    };
    run_against(setup, start, checks);
}

/// Starts the server with `start` (given its arguments and the adapters to wait for), runs
/// `checks` on a client communicator, and requires the server to exit 0 afterwards.
fn run_against<S, F, Fut>(setup: Setup<'_>, start: S, checks: F)
where
    S: FnOnce(&[String], &[&str]) -> Result<Server, String>,
    F: FnOnce(Helper) -> Fut,
    Fut: Future<Output = ()>,
{
    let base = port_base(setup.ports);
    let mut common: Vec<String> = DRIVER_PROPERTIES.iter().map(|s| s.to_string()).collect();
    common.push(format!("--Test.BasePort={base}"));
    common.push(format!("--Ice.Default.EncodingVersion={}", setup.encoding));
    common.extend(setup.extra.iter().map(|s| s.to_string()));
    let mut server_args = common.clone();
    server_args.extend(SERVER_PROPERTIES.iter().map(|s| s.to_string()));
    let mut server = start(&server_args, setup.adapters).unwrap_or_else(|e| panic!("{e}"));

    let mut client_args = vec!["client".to_string()];
    client_args.extend(common);
    client_args.extend(setup.client_extra.iter().map(|s| s.to_string()));
    let (communicator, _) = Communicator::from_args(client_args.clone()).expect("client communicator");
    let helper = Helper { communicator: communicator.clone(), base, args: client_args };
    // Every check is bounded: a hung call fails the test instead of hanging it.
    let limit = Duration::from_secs(60);
    let outcome = communicator.block_on(async move { tokio::time::timeout(limit, checks(helper)).await });
    communicator.destroy_blocking();
    if outcome.is_err() {
        panic!("{}: the checks did not finish within {limit:?}", setup.dir);
    }

    let child = server.child.as_mut().expect("server");
    let status = wait_with_limit(child, Duration::from_secs(15));
    let err = server.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
    server.child = None;
    match status {
        None => panic!("{}: Ice's server did not exit after shutdown(); stderr:\n{err}", setup.dir),
        Some(s) if !s.success() => panic!("{}: Ice's server failed: {s}; stderr:\n{err}", setup.dir),
        Some(_) => {}
    }
}

/// Fails unless `result` is the error `matches` accepts (Ice's `try: …; test(False) except X:`).
#[track_caller]
pub(crate) fn expect_err<T: std::fmt::Debug>(
    result: floe::Result<T>,
    what: &str,
    matches: impl Fn(&floe::Error) -> bool,
) {
    match result {
        Err(e) if matches(&e) => {}
        other => panic!("expected {what}, got {other:?}"),
    }
}
