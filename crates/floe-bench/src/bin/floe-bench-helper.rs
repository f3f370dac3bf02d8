//! floe-bench-helper: the helper roles floe-bench starts as child processes (`--serve`,
//! `--client`, `--conn-load`, `--against`, `--raw-against`, `--relay`, `--router-client`),
//! with floe-bench's flags, and the `deployment` test's IceGrid server (`--grid-server`,
//! configured by `--Ice.Config=FILE`). floe-bench finds it beside itself.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(code) = floe_bench::roles::grid_server(&argv) {
        return code;
    }
    let args = floe_bench::cli::Args::parse();
    if let Err(code) = floe_bench::prepare(&args) {
        return code;
    }
    floe_bench::roles::dispatch(&args).unwrap_or_else(|| {
        eprintln!("floe-bench-helper: no role given (--serve, --client, --against, --conn-load, --relay, …)");
        ExitCode::from(2)
    })
}
