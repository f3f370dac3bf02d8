//! The whole matrix of Ice 3.7.8's C++ test clients against the floe servers of this crate:
//! every suite with a C++ client, with each encoding and format Ice's driver plays (and 1.0
//! where the suite allows it). Not part of the default run (its first run builds every
//! client); run it with `cargo test -p floe-conformance --test cpp_matrix`.

#[macro_use]
mod runner;

use runner::*;

// No cpp_location_1_0: the C++ client's "locator encoding resolution" check counts on its
// locator cache for 1.1 proxies being filled, which holds only when 1.1 is its default (Ice's
// driver runs this suite with 1.1 only).

#[test]
fn cpp_enums_1_1() {
    check_cpp(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_enums_1_0() {
    check_cpp(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_facets_1_1() {
    check_cpp(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_facets_1_0() {
    check_cpp(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_proxy_1_1() {
    check_cpp(suite!("proxy", "floe-conformance-proxy", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_exceptions_1_1() {
    check_cpp(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &[],
    );
}

#[test]
fn cpp_exceptions_1_0() {
    check_cpp(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.0",
        &[],
    );
}

#[test]
fn cpp_exceptions_1_1_sliced_format() {
    check_cpp(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn cpp_ami_1_1() {
    check_cpp(suite!("ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
fn cpp_ami_1_0() {
    check_cpp(suite!("ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2), "1.0", &[]);
}

#[test]
fn cpp_timeout_1_1() {
    check_cpp(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
fn cpp_timeout_1_0() {
    check_cpp(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.0", &[]);
}

#[test]
fn cpp_inheritance_1_1() {
    check_cpp(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_inheritance_1_0() {
    check_cpp(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_operations_1_1() {
    check_cpp(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_operations_1_0() {
    check_cpp(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_objects_1_1() {
    check_cpp(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_objects_1_0() {
    check_cpp(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_objects_1_1_sliced_format() {
    check_cpp(
        suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn cpp_optional_1_1() {
    check_cpp(suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_optional_1_1_sliced_format() {
    check_cpp(
        suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn cpp_slicing_exceptions_1_1() {
    check_cpp(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_slicing_exceptions_1_0() {
    check_cpp(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_slicing_objects_1_1() {
    check_cpp(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_slicing_objects_1_0() {
    check_cpp(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_servant_locator_1_1() {
    check_cpp(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_servant_locator_1_0() {
    check_cpp(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_binding_1_1() {
    check_cpp(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_binding_1_0() {
    check_cpp(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_acm_1_1() {
    check_cpp(suite!("acm", "floe-conformance-acm", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_acm_1_0() {
    check_cpp(suite!("acm", "floe-conformance-acm", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_info_1_1() {
    check_cpp(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_info_1_0() {
    check_cpp(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_location_1_1() {
    check_cpp(suite!("location", "floe-conformance-location", ["ServerManager"], 40), "1.1", &[]);
}

#[test]
fn cpp_scope_1_1() {
    check_cpp(suite!("scope", "floe-conformance-scope", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_scope_1_0() {
    check_cpp(suite!("scope", "floe-conformance-scope", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_adapter_deactivation_1_1() {
    check_cpp(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 11), "1.1", &[]);
}

#[test]
fn cpp_adapter_deactivation_1_0() {
    check_cpp(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 11), "1.0", &[]);
}

#[test]
fn cpp_checksum_1_1() {
    check_cpp(suite!("checksum", "floe-conformance-checksum", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_checksum_1_0() {
    check_cpp(suite!("checksum", "floe-conformance-checksum", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_dispatcher_1_1() {
    check_cpp(suite!("dispatcher", "floe-conformance-dispatcher", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
fn cpp_dispatcher_1_0() {
    check_cpp(suite!("dispatcher", "floe-conformance-dispatcher", ["TestAdapter", "ControllerAdapter"], 2), "1.0", &[]);
}

#[test]
fn cpp_fault_tolerance_1_1() {
    let suite =
        Suite { servers: 12, ..suite!("faultTolerance", "floe-conformance-fault-tolerance", ["TestAdapter"], 13) };
    check_cpp(suite, "1.1", &[]);
}

/// The C++ client also checks the Logger facet (`getLog` with filters, a remote logger) and
/// update callbacks removed and added again. The server leaves `Ice.AcceptClassCycles` unset
/// in the communicators it makes, as Ice for C++ does (the client counts the properties).
#[test]
fn cpp_admin_1_1() {
    check_cpp_server_with(
        suite!("admin", "floe-conformance-admin", ["TestAdapter"], 1),
        "1.1",
        &["--Test.Admin.AcceptClassCycles=0"],
    );
}

#[test]
fn cpp_admin_1_0() {
    check_cpp_server_with(
        suite!("admin", "floe-conformance-admin", ["TestAdapter"], 1),
        "1.0",
        &["--Test.Admin.AcceptClassCycles=0"],
    );
}
