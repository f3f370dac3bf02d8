//! Generates the Rust mapping of the Glacier2 Slice files (with the Ice files they use) from
//! Debian's zeroc-ice-slice, installed by scripts/install-deps.
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    let files: Vec<PathBuf> = [
        "Ice/BuiltinSequences.ice",
        "Ice/Identity.ice",
        "Ice/Router.ice",
        "Glacier2/SSLInfo.ice",
        "Glacier2/PermissionsVerifier.ice",
        "Glacier2/Session.ice",
        "Glacier2/Router.ice",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    floe_build::configure().compile_into(&files, &[root], "glacier2.rs").unwrap_or_else(|e| panic!("{e}"));
}
