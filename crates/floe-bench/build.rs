//! Generates the Rust mapping of the benchmark interface.
fn main() {
    floe_build::configure().compile(&["slice/Bench.ice"], &["slice"]).expect("Bench.ice compiles");
}
