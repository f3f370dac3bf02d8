//! Generates the Rust mapping of Test.ice with floe-build.
fn main() {
    floe_build::configure().compile(&["Test.ice"], &["."]).expect("Test.ice compiles");
}
