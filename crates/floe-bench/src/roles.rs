//! The helper roles: what floe-bench starts as child processes (the rate tests' servers and
//! client processes, the load processes of `connections`, the cross pairs' clients, the router
//! test's client and copy relay) and what scripts and users run by hand (`--serve`, `--client`,
//! `--against`). Both binaries dispatch here: `floe-bench-helper`, which the benchmark starts
//! its children from, and `floe-bench` itself, so that `floe-bench --serve floe` and the other
//! documented command lines keep working.

use std::process::ExitCode;
use std::time::Duration;

use crate::cli::Args;
use crate::tests::every_test;
use crate::{against, conn_load, floe_system, raw, raw_tester, relay, router_client, tls, tokio_baseline};

/// Runs the helper role `args` asks for, if it asks for one: `None` when it names no role
/// (the caller then runs the benchmark, or says that a role is missing).
pub fn dispatch(args: &Args) -> Option<ExitCode> {
    if let Some(proxy) = &args.against {
        let only = match against_tests(args) {
            Ok(only) => only,
            Err(e) => return Some(fail("--against", e)),
        };
        return Some(outcome("--against", against::run(proxy, args.quick, &only, args.stepped)));
    }
    if let Some(target) = args.relay {
        return Some(match relay::serve(args.port, target) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail("--relay", e.to_string()),
        });
    }
    if let Some(proxy) = &args.router_client {
        let only: Vec<String> = args
            .tests
            .as_deref()
            .map_or_else(Vec::new, |l| l.split(',').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect());
        if let Some(bad) = only.iter().find(|t| !router_client::TESTS.contains(&t.as_str())) {
            let e = format!("no test {bad:?} (tests: {})", router_client::TESTS.join(", "));
            return Some(fail("--router-client", e));
        }
        let ms = args.duration_ms.unwrap_or(300);
        return Some(outcome("--router-client", router_client::run(proxy, args.router.as_deref(), ms, &only)));
    }
    if let Some(port) = args.raw_against {
        let only = match against_tests(args) {
            Ok(only) => only,
            Err(e) => return Some(fail("--raw-against", e)),
        };
        return Some(outcome(
            "--raw-against",
            raw_tester::run(port, args.quick, &only, args.stepped).map_err(|e| e.to_string()),
        ));
    }
    if args.conn_load {
        let load = conn_load::LoadArgs {
            port: args.port,
            count: args.conn_count,
            source: args.conn_source,
            burst: args.conn_burst.max(1),
            interval: Duration::from_millis(args.conn_interval_ms.max(1)),
            duration: Duration::from_millis(args.duration_ms.unwrap_or(8_000)),
        };
        return Some(match conn_load::load(load) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail("--conn-load", e),
        });
    }
    if args.serve.is_none() && args.client.is_none() {
        return None;
    }
    // The certificates of the ssl tests, which a server or client process is given.
    let _ = tls::set_certs(&args.certs.clone().unwrap_or_else(tls::default_certs));
    if let Some(system) = &args.serve {
        return Some(match serve(system, args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail("--serve", e),
        });
    }
    if let Some(system) = &args.client {
        client(system, args);
        return Some(ExitCode::SUCCESS);
    }
    None
}

/// The flag that makes either binary the `deployment` test's IceGrid server
/// ([`grid_server`]): it comes first on the command line, before the `--Ice.Config=FILE` the
/// node adds, which the benchmark's own flags would refuse.
pub const GRID_SERVER: &str = "--grid-server";

/// Runs the `deployment` test's server if the command line starts with [`GRID_SERVER`]:
/// `None` otherwise.
pub fn grid_server(args: &[String]) -> Option<ExitCode> {
    if args.get(1).map(String::as_str) != Some(GRID_SERVER) {
        return None;
    }
    Some(match floe_system::serve_grid(args.to_vec()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(GRID_SERVER, e.to_string()),
    })
}

/// `--serve SYSTEM`: serves one system on `--port` until killed.
fn serve(system: &str, args: &Args) -> Result<(), String> {
    match system {
        "raw" => raw::serve(args.port, args.ssl_port).map_err(|e| e.to_string()),
        "raw-scale" => conn_load::serve_raw_scale(args.port).map_err(|e| e.to_string()),
        "raw-tester" => raw_tester::serve(args.port).map_err(|e| e.to_string()),
        "tokio" => tokio_baseline::serve(args.port).map_err(|e| e.to_string()),
        "floe" => {
            floe_system::serve(args.port, (!args.defaults).then_some(args.threads), args.exact_threads, args.ssl_port)
                .map_err(|e| e.to_string())
        }
        #[cfg(feature = "tonic")]
        "tonic" => crate::tonic_system::serve(args.port, args.threads),
        other => Err(format!("unknown system {other}")),
    }
}

/// `--client SYSTEM`: measures the tests `--tests` names (every one without it) against the
/// server on `--port`, printing `<ops> <seconds> <system> <test> <rate>` per test, then its
/// own peak RSS on stderr (`peak-rss-kb <n>`).
fn client(system: &str, args: &Args) {
    for test in
        every_test().filter(|t| args.tests.as_deref().map(|l| l.split(',').any(|n| n == t.name)).unwrap_or(true))
    {
        let d = Duration::from_millis(args.duration_ms.unwrap_or(if args.quick { 150 } else { 700 }));
        let r = match system {
            "raw" => raw::measure(test, args.port, d).map_err(|e| e.to_string()),
            "tokio" => tokio_baseline::measure(test, args.port, d).map_err(|e| e.to_string()),
            #[cfg(feature = "tonic")]
            "tonic" => crate::tonic_system::measure(test, args.port, d),
            "floe" => floe_system::measure(test, args.port, d).map_err(|e| e.to_string()),
            other => Err(format!("no client for system {other}")),
        };
        // Operations and seconds first: the resource measurement reads them.
        match r {
            Ok(m) => println!("{} {:.6} {} {} {:.0}", m.ops, m.secs, system, test.name, m.ops as f64 / m.secs),
            Err(e) => println!("{} {} error: {e}", system, test.name),
        }
    }
    eprintln!("peak-rss-kb {}", crate::proc::proc_stats(std::process::id()).1);
}

/// The exit of a role that returns whether every test produced its value.
fn outcome(role: &str, r: Result<bool, String>) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => fail(role, e),
    }
}

/// Says what failed in `role` and exits with 2.
fn fail(role: &str, e: String) -> ExitCode {
    eprintln!("floe-bench {role}: {e}");
    ExitCode::from(2)
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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
