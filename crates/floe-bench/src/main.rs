//! floe-bench: the benchmark run (`cargo run --release --bin floe-bench -- [--quick] [--json
//! PATH] [--html PATH] [--peers ice]`), or the helper role its flags name (`--serve`,
//! `--client`, `--against`, …), as `floe-bench-helper` runs them.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(code) = floe_bench::roles::grid_server(&argv) {
        return code;
    }
    floe_bench::run(floe_bench::cli::Args::parse())
}
