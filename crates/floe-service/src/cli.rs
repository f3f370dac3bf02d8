//! The binary scaffolding of a service: the communicator from Ice-style arguments
//! (`--Ice.Config=FILE`, `--Name=value`), tracing to stderr, SIGTERM/SIGINT, exit codes
//! and the "ready" line.

use std::future::Future;
use std::io::Write as _;
use std::process::ExitCode;

use floe::Communicator;

/// The exit code of a bad command line or configuration.
pub const EXIT_USAGE: u8 = 2;
/// The exit code of a service that could not start or failed while running.
pub const EXIT_FAILURE: u8 = 1;

/// Sends log lines to stderr, filtered by `filter` when given, else by `RUST_LOG`, else by
/// `fallback` (such as `"warn"`). Colours only when stderr is a terminal. Does nothing if a
/// subscriber is installed already.
pub fn init_tracing(filter: Option<&str>, fallback: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = match filter {
        Some(f) => EnvFilter::new(f),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(fallback)),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .try_init();
}

/// Prints `{service}: {error}` on stderr and returns `code`.
pub fn fail(service: &str, error: impl std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("{service}: {error}");
    ExitCode::from(code)
}

/// Prints the line that tells whoever started the service that it is ready (on stdout,
/// flushed).
pub fn ready(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// `--help`/`-h` prints `usage`, `--version`/`-v` the version given: returns the exit code
/// when one of them was asked for (`args` without the program name).
pub fn help_or_version(args: &[String], usage: &str, version: &str) -> Option<ExitCode> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{usage}");
        return Some(ExitCode::SUCCESS);
    }
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!("{version}");
        return Some(ExitCode::SUCCESS);
    }
    None
}

/// The communicator of the command line `args` (Ice's `--Ice.Config=FILE` and
/// `--Name=value` arguments), with `defaults` for properties neither sets; returns it with
/// the arguments it did not take.
pub fn communicator(
    args: impl IntoIterator<Item = String>,
    defaults: &[(&str, &str)],
) -> floe::Result<(Communicator, Vec<String>)> {
    Communicator::from_args_with_defaults(args, defaults)
}

/// The communicator of the command line `args` (see [`communicator`]) and the service's
/// configuration read from its properties by `read`; on failure, the error printed as
/// `{service}: {error}` and the exit code [`EXIT_USAGE`].
pub fn configure<C, E: std::fmt::Display>(
    service: &str,
    args: impl IntoIterator<Item = String>,
    defaults: &[(&str, &str)],
    read: impl FnOnce(&floe::Properties) -> Result<C, E>,
) -> Result<(Communicator, C), ExitCode> {
    let (communicator, _rest) = communicator(args, defaults).map_err(|e| fail(service, e, EXIT_USAGE))?;
    let config = read(communicator.properties()).map_err(|e| fail(service, e, EXIT_USAGE))?;
    Ok((communicator, config))
}

/// Runs the service's `run` on the communicator's runtime: exit code 0 once it returns,
/// [`EXIT_FAILURE`] with `{service}: {error}` printed when it fails.
pub fn serve(service: &str, communicator: &Communicator, run: impl Future<Output = floe::Result<()>>) -> ExitCode {
    match communicator.block_on(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(service, e, EXIT_FAILURE),
    }
}

/// The life of a service binary: on the communicator's runtime, `start` the service, print
/// `ready_line`, wait for SIGTERM or SIGINT, `stop` the service and destroy the
/// communicator; exit codes as [`serve`] gives them.
pub fn run_until_signal<S, Stop: Future<Output = ()>>(
    service: &str,
    communicator: &Communicator,
    ready_line: &str,
    start: impl Future<Output = floe::Result<S>>,
    stop: impl FnOnce(S) -> Stop,
) -> ExitCode {
    serve(service, communicator, async {
        let started = start.await?;
        ready(ready_line);
        wait_for_signal().await;
        stop(started).await;
        communicator.destroy().await;
        Ok(())
    })
}

/// Waits for SIGTERM or SIGINT (for ever when the handlers cannot be installed).
pub async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn help_and_version_are_answered() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(super::help_or_version(&args(&["--help"]), "usage", "1").is_some());
        assert!(super::help_or_version(&args(&["-v"]), "usage", "1").is_some());
        assert!(super::help_or_version(&args(&["--Ice.Config=x"]), "usage", "1").is_none());
    }
}
