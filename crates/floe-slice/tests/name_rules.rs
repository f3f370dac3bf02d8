//! Ice's rules for names: each rule has Slice it rejects (with its code, at the offending
//! name's line) and Slice it still accepts. The same table is run through ZeroC's `slice2cpp`
//! when it is installed, so both compilers must agree on every entry.

use std::path::Path;
use std::process::Command;

use floe_slice::{compile_str, Code};

/// `(what, Slice, None to accept or Some((code, line)) to reject)`.
type Case = (&'static str, &'static str, Option<(Code, u32)>);

const CASES: &[Case] = &[
    // Reserved suffixes.
    ("suffix Prx", "module M {\n  struct FooPrx { int x; };\n};", Some((Code::ReservedSuffix, 2))),
    ("suffix Helper", "module M {\n  struct S {\n    int aHelper;\n  };\n};", Some((Code::ReservedSuffix, 3))),
    ("suffix Ptr on a parameter", "module M {\n  interface I { void op(int xPtr); };\n};", Some((Code::ReservedSuffix, 2))),
    ("suffix Holder on an enumerator", "module M {\n  enum E { AHolder };\n};", Some((Code::ReservedSuffix, 2))),
    ("suffixes inside a name", "module M { struct PrxData { int helperCount; }; };", None),
    // Only modules at global scope.
    ("struct at global scope", "struct S { int x; };", Some((Code::GlobalDefinition, 1))),
    ("class declared at global scope", "class C;", Some((Code::GlobalDefinition, 1))),
    // Names of enclosing modules and interfaces.
    ("struct named like its module", "module M {\n  struct M { int x; };\n};", Some((Code::EnclosingName, 2))),
    ("module named like its module", "module M {\n  module M { struct S { int x; }; };\n};", Some((Code::EnclosingName, 2))),
    (
        "struct named like an outer module in other case",
        "module M {\n  module N {\n    struct m { int x; };\n  };\n};",
        Some((Code::EnclosingName, 3)),
    ),
    ("operation named like its interface", "module M {\n  interface I {\n    void I();\n  };\n};", Some((Code::EnclosingName, 3))),
    (
        "operation named like its interface in other case",
        "module M {\n  interface Get {\n    void get();\n  };\n};",
        Some((Code::EnclosingName, 3)),
    ),
    ("enumerator named like its module", "module M { enum E { M }; };", None),
    ("operation named like its module", "module M { interface I { void m(); }; };", None),
    ("data members named like their type", "module M { struct S { int s; }; class C { int C; }; };", None),
    // Capitalization clashes in one scope, across reopenings too.
    (
        "struct clashes across module reopenings",
        "module M { struct S { int x; }; };\nmodule M { struct s { int x; }; };",
        Some((Code::CaseClash, 2)),
    ),
    (
        "module reopened with other case",
        "module A { module M { struct S { int x; }; }; };\nmodule A { module m { struct T { int x; }; }; };",
        Some((Code::CaseClash, 2)),
    ),
    (
        "class data member and operation in other case",
        "module M {\n  class A {\n    int x;\n    void X();\n  };\n};",
        Some((Code::CaseClash, 4)),
    ),
    ("same names in other modules", "module M { struct S { int x; }; };\nmodule N { struct s { int x; }; };", None),
    ("an enumerator and a struct of one name", "module M {\n  enum E { S };\n  struct S { int x; };\n};", None),
    ("one enumerator name in two enums", "module M { enum A { X }; enum B { X }; };", None),
    // Case-insensitive lookup.
    (
        "reference in other case",
        "module M {\n  struct Data { int x; };\n  struct T { data d; };\n};",
        Some((Code::Capitalization, 3)),
    ),
    (
        "inner name in other case hides the outer one",
        "module M {\n  struct Data { int x; };\n  module N {\n    struct data { int y; };\n    struct T { Data d; };\n  };\n};",
        Some((Code::Capitalization, 5)),
    ),
    (
        "exception found as an operation",
        "module M {\n  exception Err {};\n  interface I { void err() throws Err; };\n};",
        Some((Code::Capitalization, 3)),
    ),
    ("parameter named like the exception thrown", "module M { exception Err {}; interface I { void op(int err) throws Err; }; };", None),
    ("parameter named like its type", "module M { struct Data { int x; }; interface I { void op(Data data); }; };", None),
    ("parameter named like its operation", "module M { interface I { void op(int op); }; };", None),
    ("members named like types", "module M { struct Data { int x; }; struct T { int data; Data d; }; struct U { Data d; int data; }; };", None),
    // Names that change meaning.
    (
        "type used, then defined in the same scope",
        "module M {\n  struct S { int x; };\n  module N {\n    sequence<S> Seq;\n    struct S { int y; };\n  };\n};",
        Some((Code::ChangedMeaning, 5)),
    ),
    (
        "operation named like the type it returns",
        "module M {\n  struct Data { int x; };\n  interface I { Data data(); };\n};",
        Some((Code::ChangedMeaning, 3)),
    ),
    (
        "first component of a qualified name",
        "module A { struct S { int x; }; };\nmodule M {\n  sequence<A::S> Seq;\n  struct a { int y; };\n};",
        Some((Code::ChangedMeaning, 4)),
    ),
    ("name used in an inner scope", "module M { struct S { int x; }; module N { struct T { S s; }; struct S { int y; }; }; };", None),
    (
        "name used in another reopening",
        "module M { struct S { int x; }; module N { struct T { S s; }; }; module N { struct S { int y; }; }; };",
        None,
    ),
    ("declared, used, then defined", "module M { class C; sequence<C> Cs; class C { int x; }; };\nmodule M { struct T { Cs c; }; };", None),
    ("operation after an unrelated return type", "module M { struct Data { int x; }; interface I { void data(); Data get(); }; };", None),
    // Inherited names.
    (
        "class member hides a base member in other case",
        "module M {\n  class A { int x; };\n  class B extends A { int X; };\n};",
        Some((Code::Ambiguous, 3)),
    ),
    (
        "exception member hides a base member",
        "module M {\n  exception A { int x; };\n  exception B extends A { int x; };\n};",
        Some((Code::Ambiguous, 3)),
    ),
    (
        "class operation hides a base member",
        "module M {\n  class A { int x; };\n  class B extends A { void x(); };\n};",
        Some((Code::Ambiguous, 3)),
    ),
    (
        "operation from unrelated bases",
        "module M {\n  interface A { void op(); };\n  interface B { void OP(); };\n  interface C extends A, B {};\n};",
        Some((Code::Ambiguous, 4)),
    ),
    (
        "operation from a base class and an interface",
        "module M {\n  interface A { void op(); };\n  class B { void op(); };\n  class C extends B implements A {};\n};",
        Some((Code::Ambiguous, 4)),
    ),
    (
        "one operation inherited along two paths",
        "module M { interface A { void op(); }; interface B extends A {}; interface C extends A {}; interface D extends B, C {}; };",
        None,
    ),
    // Redefinitions.
    ("two operations of a class", "module M {\n  class C {\n    void op();\n    void op();\n  };\n};", Some((Code::Redefinition, 4))),
    ("local declaration, non-local definition", "module M {\n  local interface C;\n  interface C {};\n};", Some((Code::Redefinition, 3))),
    (
        "base only declared so far",
        "module M {\n  interface A;\n  interface B extends A {};\n  interface A {};\n};",
        Some((Code::Undefined, 3)),
    ),
    (
        "in and out parameters share tags",
        "module M {\n  interface I { void op(optional(1) int a, out optional(1) int b); };\n};",
        Some((Code::DuplicateTag, 2)),
    ),
    (
        "default value naming a data member",
        "module M {\n  const int K = 1;\n  struct S { int k; int j = K; };\n};",
        Some((Code::WrongKind, 3)),
    ),
    ("struct containing itself", "module M {\n  struct S { int x; S s; };\n};", Some((Code::IllegalUse, 2))),
];

#[test]
fn every_name_rule_rejects_and_accepts() {
    for (what, src, want) in CASES {
        let c = compile_str("test.ice", src, &[]);
        let got: Vec<(Code, u32)> = c.diagnostics.iter().map(|d| (d.code, d.span.line)).collect();
        match want {
            None => assert!(!c.has_errors(), "{what}: must be accepted\n{src}\n{}", c.render_diagnostics()),
            Some(w) => assert!(got.contains(w), "{what}: expected {w:?}\n{src}\ngot {got:?}"),
        }
    }
}

#[test]
fn a_miscapitalized_name_is_not_also_undefined() {
    let c = compile_str("test.ice", "module M {\n  struct Data { int x; };\n  struct T { data d; };\n};", &[]);
    let codes: Vec<Code> = c.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, vec![Code::Capitalization], "{}", c.render_diagnostics());
}

/// ZeroC's compiler agrees with the table: what it accepts, slice2rs accepts, and the reverse.
#[test]
fn slice2cpp_agrees_with_the_table() {
    let slice2cpp = Path::new("/usr/bin/slice2cpp");
    if !slice2cpp.exists() {
        if std::env::var_os("CI").is_some() || std::env::var_os("FLOE_REQUIRE_ICE").is_some() {
            panic!("/usr/bin/slice2cpp is missing (install zeroc-ice-compilers); CI or FLOE_REQUIRE_ICE requires it");
        }
        eprintln!("note: /usr/bin/slice2cpp not found; the name rules are not compared with ZeroC's compiler");
        return;
    }
    let dir = std::env::temp_dir().join(format!("floe-slice-name-rules-{}", std::process::id()));
    let mut disagree = Vec::new();
    for (i, (what, src, want)) in CASES.iter().enumerate() {
        let case = dir.join(format!("case{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let file = case.join("Case.ice");
        std::fs::write(&file, src).unwrap();
        let out = Command::new(slice2cpp).arg("--output-dir").arg(&case).arg(&file).output().unwrap();
        let ice_accepts = out.status.success();
        if ice_accepts != want.is_none() {
            disagree.push(format!(
                "{what}: slice2cpp {} it\n{src}\n{}",
                if ice_accepts { "accepts" } else { "rejects" },
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(disagree.is_empty(), "slice2cpp disagrees with the table:\n{}", disagree.join("\n"));
}
