//! Generates the Rust mapping of IceStorm's Slice (with the Ice files it uses) from Debian's
//! zeroc-ice-slice, installed by scripts/install-deps, and of the link interfaces in
//! `slice/StormLink.ice`.
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    println!("cargo:rerun-if-changed=slice/StormLink.ice");
    let mut files: Vec<PathBuf> = [
        "Ice/BuiltinSequences.ice",
        "Ice/Identity.ice",
        "Ice/SliceChecksumDict.ice",
        "Ice/Current.ice",
        "IceStorm/IceStorm.ice",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    files.push(PathBuf::from("slice/StormLink.ice"));
    floe_build::configure().compile_into(&files, &[root], "icestorm.rs").unwrap_or_else(|e| panic!("{e}"));
}
