//! Generates the Rust mapping of the benchmark interface, and of the interop interface
//! (`tests/interop/Test.ice`, the same file as the shared one) for `--against`, and of Ice's
//! locator (`/usr/share/ice/slice`, Debian zeroc-ice-slice) for the `locate` test.
fn main() {
    floe_build::configure().compile(&["slice/Bench.ice"], &["slice"]).expect("Bench.ice compiles");
    floe_build::configure()
        .compile(&["../../tests/interop/Test.ice"], &["../../tests/interop"])
        .expect("tests/interop/Test.ice compiles");
    let ice =
        std::path::PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    let files: Vec<_> =
        ["Ice/Identity.ice", "Ice/Process.ice", "Ice/Locator.ice"].iter().map(|f| ice.join(f)).collect();
    floe_build::configure().compile_into(&files, &[&ice], "locator.rs").unwrap_or_else(|e| {
        panic!("{e} (Ice's Slice files are expected under {}: bash scripts/install-deps)", ice.display())
    });
    #[cfg(feature = "tonic")]
    tonic_build::compile_protos("proto/bench.proto").expect("proto/bench.proto compiles (is protoc installed?)");
}
