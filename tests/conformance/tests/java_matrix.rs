//! Ice 3.7.8's Java test clients (built with slice2java and javac against Debian's
//! libzeroc-ice3.7-java) against the floe servers of this crate: every suite with a Java
//! client here, with each encoding and format Ice's driver plays. The default run plays a
//! subset of them (in `suites.rs`); this is the whole matrix:
//! `cargo test -p floe-conformance --test java_matrix`.

#[macro_use]
mod runner;

use runner::*;

#[test]
fn java_enums_1_1() {
    check_java(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_enums_1_0() {
    check_java(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn java_facets_1_1() {
    check_java(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_facets_1_0() {
    check_java(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn java_inheritance_1_0() {
    check_java(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn java_inheritance_1_1() {
    check_java(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_operations_1_1() {
    check_java(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_operations_1_0() {
    check_java(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn java_exceptions_1_1() {
    check_java(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &[],
    );
}

#[test]
fn java_exceptions_1_0() {
    check_java(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.0",
        &[],
    );
}

#[test]
fn java_exceptions_1_1_sliced_format() {
    check_java(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn java_objects_1_1() {
    check_java(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_objects_1_0() {
    check_java(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn java_objects_1_1_sliced_format() {
    check_java(
        suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn java_optional_1_1() {
    check_java(suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_optional_1_1_sliced_format() {
    check_java(
        suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn java_slicing_objects_1_1() {
    check_java(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_slicing_objects_1_0() {
    check_java(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn java_slicing_exceptions_1_1() {
    check_java(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_slicing_exceptions_1_0() {
    check_java(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.0", &[]);
}
