//! The matrix of Ice 3.8.2's C++ test clients against the floe servers of this crate: every
//! suite of the 3.7 C++ matrix that Ice 3.8 still has and whose 3.8 client floe's server
//! serves, with each encoding and format Ice 3.8's driver plays (`scripts/tests/Ice/*.py`:
//! 1.0 for enums, exceptions, objects and slicing, the sliced format for exceptions, objects
//! and optional), and (module `cpp38_servers`) floe's ported client checks against Ice 3.8's
//! C++ servers. Not part of the default run (its first run builds every client); run it
//! with `cargo test -p floe-conformance --test cpp38_matrix`. Which suites are not here, and
//! why, is in this crate's README.

#[macro_use]
#[allow(unused_macros)]
mod runner;
#[path = "client_side/mod.rs"]
#[allow(dead_code)]
mod client_side;
#[path = "cpp38_programs/mod.rs"]
mod cpp38_programs;
/// floe's client against Ice 3.8's C++ servers.
#[path = "cpp38_servers/mod.rs"]
mod cpp38_servers;

use cpp38_programs::{check_cpp38, check_cpp38_sides};
use runner::*;

#[test]
fn cpp38_enums() {
    check_cpp38(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_enums_1_0() {
    check_cpp38(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp38_facets() {
    check_cpp38(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_inheritance() {
    check_cpp38(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_operations() {
    check_cpp38(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_slicing_exceptions() {
    check_cpp38(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_slicing_exceptions_1_0() {
    check_cpp38(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp38_servant_locator() {
    check_cpp38(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_binding() {
    check_cpp38(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_info() {
    check_cpp38(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_adapter_deactivation() {
    check_cpp38(
        suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 11),
        "1.1",
        &[],
    );
}

/// Ice 3.8's `executor` is 3.7's `dispatcher` renamed (its Test.ice is the same): floe's
/// dispatcher server.
#[test]
fn cpp38_executor() {
    check_cpp38(suite!("executor", "floe-conformance-dispatcher", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
fn cpp38_fault_tolerance() {
    let suite =
        Suite { servers: 12, ..suite!("faultTolerance", "floe-conformance-fault-tolerance", ["TestAdapter"], 13) };
    check_cpp38(suite, "1.1", &[]);
}

/// The close timeout check holds the adapter and expects another connection's graceful close to
/// time out: floe's held connections act on no message read after the hold.
#[test]
fn cpp38_timeout() {
    check_cpp38(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

/// As for the 3.7 C++ client, the server leaves `Ice.AcceptClassCycles` unset in the
/// communicators it makes; and it sets `Ice.ProgramName` in them, as Ice 3.8 for C++ does in
/// every communicator (the client counts the properties).
#[test]
fn cpp38_admin() {
    check_cpp38_sides(
        suite!("admin", "floe-conformance-admin", ["TestAdapter"], 1),
        "1.1",
        &[],
        &["--Test.Admin.AcceptClassCycles=0", "--Test.Admin.ProgramName=server"],
    );
}

#[test]
fn cpp38_exceptions() {
    check_cpp38(
        suite!("exceptions", "floe-conformance-exceptions38", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &[],
    );
}

#[test]
fn cpp38_exceptions_1_0() {
    check_cpp38(
        suite!("exceptions", "floe-conformance-exceptions38", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.0",
        &[],
    );
}

#[test]
fn cpp38_exceptions_sliced_format() {
    check_cpp38(
        suite!("exceptions", "floe-conformance-exceptions38", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn cpp38_proxy() {
    check_cpp38(suite!("proxy", "floe-conformance-proxy38", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_location() {
    check_cpp38(suite!("location", "floe-conformance-location38", ["ServerManager"], 40), "1.1", &[]);
}

#[test]
fn cpp38_optional() {
    check_cpp38(suite!("optional", "floe-conformance-optional38", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_ami() {
    check_cpp38(suite!("ami", "floe-conformance-ami38", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
fn cpp38_scope() {
    check_cpp38(suite!("scope", "floe-conformance-scope38", ["TestAdapter"], 1), "1.1", &[]);
}

/// floe's server generated from 3.8's Slice with every class keeping unknown slices, as Ice
/// 3.8 does.
#[test]
fn cpp38_slicing_objects() {
    check_cpp38(suite!("slicing/objects", "floe-conformance-slicing-objects38", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_slicing_objects_1_0() {
    check_cpp38(suite!("slicing/objects", "floe-conformance-slicing-objects38", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp38_optional_sliced_format() {
    check_cpp38(
        suite!("optional", "floe-conformance-optional38", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

/// floe's server generated from 3.8's objects Slice (renamed classes, compact ids given as
/// enumerators), with 3.8's class graph depth limit.
#[test]
fn cpp38_objects() {
    check_cpp38(suite!("objects", "floe-conformance-objects38", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp38_objects_1_0() {
    check_cpp38(suite!("objects", "floe-conformance-objects38", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp38_objects_sliced_format() {
    check_cpp38(
        suite!("objects", "floe-conformance-objects38", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}
