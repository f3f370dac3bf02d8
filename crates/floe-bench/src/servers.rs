//! The systems of the rate tests and the `connections` test (floe, the raw baseline, the
//! tokio baseline, Ice C++ and tonic) and their benchmark servers, each a process of its own.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::proc::{first_line, free_port, helper_exe, ice_malloc_env, READY_LIMIT};
use crate::{floe_system, tls};

/// A system of the rate tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum System {
    /// floe (`floe_system`).
    Floe,
    /// The raw-socket baseline (`raw`).
    Raw,
    /// The bare tokio baseline (`tokio_baseline`), in the twoway tests on the default servers.
    Tokio,
    /// ZeroC Ice C++ (`peers/ice`).
    Ice,
    /// tonic, with the `tonic` feature (`tonic_system`).
    Tonic,
}

impl System {
    /// The system's name in tables and records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::Floe => "floe",
            System::Raw => "raw",
            System::Tokio => "tokio",
            System::Ice => "ice-cpp",
            System::Tonic => "tonic",
        }
    }
}

/// A benchmark server process, killed when dropped.
pub(crate) struct Server {
    /// The system it serves.
    pub(crate) system: System,
    /// Its runtime (or thread pool) threads.
    pub(crate) threads: usize,
    /// A floe server with exactly `threads` threads (`Floe.Runtime.ConnectionThreads=0`), for
    /// the tests that compare servers of a given size; otherwise floe's default runtimes.
    pub(crate) exact: bool,
    /// The process.
    pub(crate) child: Child,
    /// Its tcp port.
    pub(crate) port: u16,
    /// The port of the server's ssl endpoint, when the ssl tests run.
    pub(crate) ssl_port: Option<u16>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `system`'s benchmark server; `scale` starts the one of the `connections` test
/// instead: floe and Ice C++ on their default configuration (runtime size, ACM), and the raw
/// baseline as one epoll thread rather than a thread per connection.
pub(crate) fn start_server(
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
        _ => Command::new(helper_exe()?),
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
