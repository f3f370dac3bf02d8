//! Generates the Rust mapping of the benchmark interface.
fn main() {
    floe_build::configure().compile(&["slice/Bench.ice"], &["slice"]).expect("Bench.ice compiles");
    #[cfg(feature = "tonic")]
    tonic_build::compile_protos("proto/bench.proto").expect("proto/bench.proto compiles (is protoc installed?)");
}
