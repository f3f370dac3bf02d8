//! floe-bench: the seed documents' benchmarks, run for floe, a raw-socket baseline, the tokio
//! baseline, ZeroC Ice 3.7 C++ and tonic, reported as medians and ratios.
//!
//! The benchmark is a set of suites behind one trait ([`suite::Suite`]): the rate tests, the
//! cross pairs, locate, deployment, router, storm, router sessions and connections, registered in
//! [`run`]'s list. The processes a suite starts from this crate's code (servers, clients, load
//! processes, relays) are the helper roles of [`roles`], which both binaries run: floe-bench
//! starts them from `floe-bench-helper` beside it.
#![allow(clippy::approx_constant)] // 3.14 is the seeds' string-struct payload, not pi.

pub mod cli;
pub mod json;
pub mod proc;
pub mod roles;
pub mod stats;
pub mod suite;
pub mod summary;
pub mod tests;

mod against;
mod applications;
mod charts;
mod conn_load;
mod floe_system;
mod pipeline;
mod ports;
mod raw;
mod raw_tester;
mod relay;
mod report;
#[cfg(test)]
mod report_tests;
mod router_client;
mod servers;
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

use std::process::ExitCode;

/// Declares the suites' modules and runs them in the order given: adding a suite is adding
/// its file and its line here.
macro_rules! suites {
    ($($module:ident::$suite:ident),* $(,)?) => {
        $(mod $module;)*

        /// Runs the suites a run selects, in their order, printing each one's table; then
        /// writes the run's JSON, Markdown and HTML outputs.
        fn run_suites(ctx: &suite::Context) {
            let mut done: Vec<Box<dyn suite::Finished + '_>> = Vec::new();
            $(done.extend(suite::run_suite($module::$suite, ctx));)*
            suite::write_outputs(ctx, &done);
        }

        /// Each suite's name, whether the run selects it, and its systems.
        #[cfg(test)]
        fn suite_plan(ctx: &suite::Context) -> Vec<(&'static str, bool, Vec<String>)> {
            use suite::Suite as _;
            vec![$(($module::$suite.name(), $module::$suite.selected(ctx), $module::$suite.systems(ctx))),*]
        }
    };
}

suites! {
    rates::Rates,
    cross::Cross,
    locate::Locate,
    deployment::Deployment,
    router::Router,
    storm::Storm,
    router_sessions::RouterSessions,
    connections::Connections,
    scaling::Scaling,
}

/// What both binaries do first: raise the file limit (the connections test and the router
/// sessions need many descriptors, and children inherit it) and take the `--floe-property`
/// settings; an error ends the process with status 2.
pub fn prepare(args: &cli::Args) -> Result<(), ExitCode> {
    proc::raise_fd_limit();
    floe_system::set_properties(&args.floe_properties).map_err(|e| {
        eprintln!("floe-bench: {e}");
        ExitCode::from(2)
    })
}

/// floe-bench: the helper role the command line names, or else the benchmark run.
pub fn run(args: cli::Args) -> ExitCode {
    if let Err(code) = prepare(&args) {
        return code;
    }
    if let Some(code) = roles::dispatch(&args) {
        return code;
    }
    run_suites(&suite::Context::new(args));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod registry_tests {
    use clap::Parser;

    #[test]
    fn the_suites_run_in_order_and_as_tests_and_peers_select_them() {
        let ctx = |argv: &[&str]| {
            let mut all = vec!["floe-bench", "--peers", "none"];
            all.extend(argv);
            crate::suite::Context::new(crate::cli::Args::parse_from(all))
        };
        let plan = crate::suite_plan(&ctx(&[]));
        let names: Vec<&str> = plan.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(
            names,
            ["rates", "cross", "locate", "deployment", "router", "storm", "router-sessions", "connections", "scaling"]
        );
        // Without the Ice peer: the rate tests, locate, deployment and connections;
        // router-sessions only when named.
        let selected: Vec<&str> = plan.iter().filter(|(_, s, _)| *s).map(|(n, _, _)| *n).collect();
        assert_eq!(selected, ["rates", "locate", "deployment", "connections"]);
        let plan = crate::suite_plan(&ctx(&["--tests", "twoway,router-sessions"]));
        let selected: Vec<&str> = plan.iter().filter(|(_, s, _)| *s).map(|(n, _, _)| *n).collect();
        assert_eq!(selected, ["rates", "router-sessions"]);
        let systems = |name: &str| plan.iter().find(|(n, _, _)| *n == name).map(|(_, _, s)| s.clone()).unwrap();
        assert_eq!(systems("rates"), ["floe", "raw", "tokio"]);
        assert_eq!(systems("connections"), ["floe", "raw"]);
        assert_eq!(systems("locate").len(), 3);
        assert_eq!(systems("deployment").len(), 3);
        assert_eq!(systems("scaling"), ["floe server", "ice-cpp server", "raw server"]);
    }
}
