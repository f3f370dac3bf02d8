//! Compiles every Slice file of ZeroC Ice 3.7 (Debian package zeroc-ice-slice, installed by
//! scripts/install-deps) as one unit; the crate then compiles the generated Rust.
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()));
    println!("cargo:rerun-if-env-changed=FLOE_ICE_SLICE_DIR");
    let mut files = Vec::new();
    let dirs = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e} (install zeroc-ice-slice: bash scripts/install-deps)", root.display()));
    for dir in dirs.flatten() {
        if let Ok(entries) = std::fs::read_dir(dir.path()) {
            for f in entries.flatten() {
                if f.path().extension().is_some_and(|e| e == "ice") {
                    files.push(f.path());
                }
            }
        }
    }
    files.sort();
    assert!(files.len() >= 60, "expected Ice's Slice files under {}, found {}", root.display(), files.len());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("files.txt"), files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join("\n"))
        .unwrap();
    floe_build::configure().compile_into(&files, &[root], "ice_slice.rs").unwrap_or_else(|e| panic!("{e}"));
}
