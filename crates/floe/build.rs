//! Generates the Rust mapping of the Slice interfaces of the `Ice.Admin` object's built-in
//! facets (`Ice::Process`, `Ice::PropertiesAdmin`, `Ice::LoggerAdmin` / `Ice::RemoteLogger`,
//! `IceMX::MetricsAdmin`) from floe's own definitions in `slice/admin.ice`, with floe's Slice
//! compiler. No Ice installation is needed.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("slice");
    floe_build::configure()
        .floe_path("crate")
        .compile_into(&[dir.join("admin.ice")], std::slice::from_ref(&dir), "admin_slice.rs")
        .unwrap_or_else(|e| panic!("{e}"));
}
