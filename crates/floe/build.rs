//! Generates the Rust mapping of the Slice interfaces of the `Ice.Admin` object's built-in
//! facets (`Ice::Process`, `Ice::PropertiesAdmin`, `Ice::LoggerAdmin` / `Ice::RemoteLogger`,
//! `IceMX::MetricsAdmin`) from Debian's zeroc-ice-slice (`/usr/share/ice/slice`, or
//! `FLOE_ICE_SLICE_DIR`), with floe's own Slice compiler.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    let root = PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    if !root.join("Ice/Process.ice").is_file() {
        panic!(
            "{} has no Ice/Process.ice: install Ice 3.7's Slice files (Debian: zeroc-ice-slice) or set FLOE_ICE_SLICE_DIR",
            root.display()
        );
    }
    let files: Vec<PathBuf> = [
        "Ice/BuiltinSequences.ice",
        "Ice/Process.ice",
        "Ice/PropertiesAdmin.ice",
        "Ice/RemoteLogger.ice",
        "Ice/Metrics.ice",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    floe_build::configure()
        .floe_path("crate")
        .compile_into(&files, &[root], "admin_slice.rs")
        .unwrap_or_else(|e| panic!("{e}"));
}
