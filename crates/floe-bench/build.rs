//! Generates the Rust mapping of the benchmark interface, and of the interop interface
//! (`tests/interop/Test.ice`, the same file as the shared one) for `--against`.
fn main() {
    floe_build::configure().compile(&["slice/Bench.ice"], &["slice"]).expect("Bench.ice compiles");
    floe_build::configure()
        .compile(&["../../tests/interop/Test.ice"], &["../../tests/interop"])
        .expect("tests/interop/Test.ice compiles");
    #[cfg(feature = "tonic")]
    tonic_build::compile_protos("proto/bench.proto").expect("proto/bench.proto compiles (is protoc installed?)");
}
