//! Generates the Rust mapping of the Slice files of Ice 3.7 that IceGrid's client-facing
//! interfaces need (Debian package zeroc-ice-slice, installed by scripts/install-deps).
use std::path::PathBuf;

const FILES: &[&str] = &[
    "Ice/BuiltinSequences.ice",
    "Ice/Identity.ice",
    "Ice/Locator.ice",
    "Ice/Process.ice",
    "Ice/Properties.ice",
    "Ice/PropertiesAdmin.ice",
    "Ice/SliceChecksumDict.ice",
    "Glacier2/SSLInfo.ice",
    "Glacier2/Session.ice",
    "Glacier2/PermissionsVerifier.ice",
    "IceGrid/Exception.ice",
    "IceGrid/Descriptor.ice",
    "IceGrid/Admin.ice",
    "IceGrid/Session.ice",
    "IceGrid/Registry.ice",
];

fn main() {
    let root = PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    let files: Vec<PathBuf> = FILES.iter().map(|f| root.join(f)).collect();
    // Strings stay `String` here: the registry keeps them in its tables and its store as such.
    floe_build::configure().std_strings(true).compile_into(&files, &[&root], "icegrid.rs").unwrap_or_else(|e| {
        panic!("{e} (Ice's Slice files are expected under {}: bash scripts/install-deps)", root.display())
    });
}
