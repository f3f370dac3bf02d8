//! The fast subset of the Ice 3.8 matrix in the default run: a few of Ice 3.8.2's own C++
//! test clients (built from its source tarball against the Ice 3.8 core that
//! `scripts/build-ice38` builds, see `cpp38_programs/mod.rs`) against the floe servers of this
//! crate. The whole matrix is `tests/cpp38_matrix.rs`; floe's client against an Ice 3.8
//! server is in `client_side.rs`.

#[macro_use]
#[allow(unused_macros)]
mod runner;
#[path = "cpp38_programs/mod.rs"]
#[allow(dead_code)]
mod cpp38_programs;

use cpp38_programs::check_cpp38;
use runner::*;

#[test]
fn cpp38_enums_1_0() {
    check_cpp38(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp38_operations() {
    check_cpp38(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_slicing_exceptions() {
    check_cpp38(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.1", &[]);
}

/// floe's server generated from 3.8's own Test.ice (see `cpp38_matrix.rs` for the others).
#[test]
fn cpp38_proxy() {
    check_cpp38(suite!("proxy", "floe-conformance-proxy38", ["TestAdapter"], 1), "1.1", &[]);
}

/// Ice 3.8's `executor` is 3.7's `dispatcher` renamed (the same interfaces): floe's
/// dispatcher server.
#[test]
fn cpp38_executor() {
    check_cpp38(suite!("executor", "floe-conformance-dispatcher", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}
