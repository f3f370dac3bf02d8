//! Generates the Rust mapping of the Slice files of Ice 3.7 that IceGrid's registries, nodes
//! and clients speak: the public ones from Debian's zeroc-ice-slice (installed by
//! scripts/install-deps, or `FLOE_ICE_SLICE_DIR`), and `IceGrid/Internal.ice` from Ice's
//! source package (`floe_build::ice_source`, or `FLOE_ICEGRID_INTERNAL_ICE=<path>`).
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

/// Where `Internal.ice` is in Ice's source tree.
const INTERNAL: &str = "cpp/src/IceGrid/Internal.ice";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    println!("cargo:rerun-if-env-changed=FLOE_ICEGRID_INTERNAL_ICE");
    let root = PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    let internal = match std::env::var_os("FLOE_ICEGRID_INTERNAL_ICE") {
        Some(p) => PathBuf::from(p),
        None => {
            let member = format!("ice-{}/{INTERNAL}", floe_build::ice_source::ICE_SOURCE_VERSION);
            let into = floe_build::ice_source::target_dir().join("ice-icegrid-internal");
            floe_build::ice_source::extract(&[&member], &into)
                .unwrap_or_else(|e| panic!("cannot fetch IceGrid's Internal.ice from Ice's source package: {e}"))
                .join(INTERNAL)
        }
    };
    let mut files: Vec<PathBuf> = FILES.iter().map(|f| root.join(f)).collect();
    files.push(internal);
    // Strings stay `String`: the registry and the node keep them in their tables and stores.
    floe_build::configure().std_strings(true).compile_into(&files, &[&root], "icegrid.rs").unwrap_or_else(|e| {
        panic!("{e} (Ice's Slice files are expected under {}: bash scripts/install-deps)", root.display())
    });
}
