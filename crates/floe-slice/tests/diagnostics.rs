//! Invalid Slice gives diagnostics with stable codes and exact positions, never a panic.

use floe_slice::{compile_str, Code};
use proptest::prelude::*;

fn codes(src: &str) -> Vec<(Code, u32)> {
    let c = compile_str("test.ice", src, &[]);
    assert!(c.has_errors() == c.unit.is_none());
    c.diagnostics.iter().map(|d| (d.code, d.span.line)).collect()
}

fn expect(src: &str, code: Code, line: u32) {
    let got = codes(src);
    assert!(got.contains(&(code, line)), "expected {code:?} at line {line} in\n{src}\ngot {got:?}");
}

#[test]
fn every_code_is_reported_where_it_belongs() {
    expect("module M {\n  struct S { int x }\n};", Code::Syntax, 2);
    expect("module M {\n  struct S { Missing m; };\n};", Code::Undefined, 2);
    expect("module M {\n  struct S { int x; };\n  struct S { int y; };\n};", Code::Redefinition, 3);
    expect("module M {\n  struct Point { int x; };\n  struct point { int y; };\n};", Code::CaseClash, 3);
    expect("module M {\n  exception E {};\n  struct S { E e; };\n};", Code::WrongKind, 3);
    expect("module M {\n  dictionary<double, int> D;\n};", Code::IllegalKey, 2);
    expect("module M {\n  struct K { float f; };\n  dictionary<K, int> D;\n};", Code::IllegalKey, 3);
    expect("module M {\n  class C { optional(1) int a;\n optional(1) int b; };\n};", Code::DuplicateTag, 3);
    expect("module M {\n  interface I { void op(optional(2) int a, optional(2) int b); };\n};", Code::DuplicateTag, 2);
    expect("module M {\n  class A;\n  class B extends A {};\n  class A extends B {};\n};", Code::CyclicInheritance, 4);
    expect("module M {\n  interface I extends I {};\n};", Code::CyclicInheritance, 2);
    expect("module M {\n  struct S { int module; };\n};", Code::KeywordIdentifier, 2);
    expect("module M {\n  enum E { A = 1, B = 1 };\n};", Code::BadEnumerator, 2);
    expect("module M {\n  enum E { A = -1 };\n};", Code::BadEnumerator, 2);
    expect("module M {\n  const byte B = 300;\n};", Code::BadConstant, 2);
    expect("module M {\n  const string S = 5;\n};", Code::BadConstant, 2);
    expect("module M {\n  struct S { optional(1) int x; };\n};", Code::BadOptional, 2);
    expect("module M {\n  local interface L {};\n  interface I { void op(L* l); };\n};", Code::IllegalUse, 3);
    expect("module M {\n  interface I {};\n  struct S { I byValue; };\n};", Code::IllegalUse, 3);
    expect(
        "module M {\n  interface A { void op(); };\n  interface B extends A { void op(); };\n};",
        Code::Ambiguous,
        3,
    );
    expect("#include <Nope.ice>\nmodule M { struct S { int x; }; };", Code::Preprocessor, 1);
    expect("#ifndef X\nmodule M { struct S { int x; }; };", Code::Preprocessor, 2);
    expect("module M {\n  const string S = \"unterminated;\n};", Code::Lexical, 2);
    expect("module M {\n  struct S { int x; };\n  interface I { S op() throws S; };\n};", Code::WrongKind, 3);
    expect("module M {\n  interface I { void op(out int a, int b); };\n};", Code::Syntax, 2);
    expect("module M {\n  interface I { void ice_ping(); };\n};", Code::ReservedPrefix, 2);
    expect("module IceX {\n  struct S { int x; };\n};", Code::ReservedPrefix, 1);
    expect("module M {\n  interface I { void op(int \\iceberg); };\n};", Code::ReservedPrefix, 2);
    expect("module M {\n  struct S { int a_b; };\n};", Code::IllegalUnderscore, 2);
    expect("[[\"underscore\"]]\nmodule M {\n  enum E { _A };\n};", Code::IllegalUnderscore, 3);
    expect("[[\"underscore\"]]\nmodule M {\n  struct S { int a_; };\n};", Code::IllegalUnderscore, 3);
    expect("[[\"underscore\"]]\nmodule M {\n  struct S { int a__b; };\n};", Code::IllegalUnderscore, 3);
    expect("module M {\n  struct FooPrx { int x; };\n};", Code::ReservedSuffix, 2);
    expect("module M {};\nstruct S { int x; };", Code::GlobalDefinition, 2);
    expect("module M {\n  struct M { int x; };\n};", Code::EnclosingName, 2);
    expect("module M {\n  struct Data { int x; };\n  struct T { data d; };\n};", Code::Capitalization, 3);
    expect("module M {\n  struct Data { int x; };\n  interface I { Data data(); };\n};", Code::ChangedMeaning, 3);
}

/// The rules for names are Ice's: what a file's global metadata allows, and names that only
/// refer to definitions (like `Ice::Identity`) are never checked.
#[test]
fn names_follow_ices_rules_for_prefixes_and_underscores() {
    let valid = [
        "[[\"ice-prefix\"]]\nmodule IceX {\n  interface I { void iceOp(); };\n};",
        "[[\"underscore\"]]\nmodule M {\n  struct S { int a_b; };\n};",
        "module M {\n  struct Icy { int price; };\n  struct Ice2 { Icy icy; };\n};",
    ];
    for src in valid {
        let got = codes(src);
        let names: Vec<&(Code, u32)> =
            got.iter().filter(|(c, _)| matches!(c, Code::ReservedPrefix | Code::IllegalUnderscore)).collect();
        if src.contains("Ice2") {
            assert_eq!(names, vec![&(Code::ReservedPrefix, 3)], "Ice2 starts with ice:\n{src}");
        } else {
            assert!(got.is_empty(), "{src}\ngot {got:?}");
        }
    }
    let dir = std::env::temp_dir().join(format!("floe-slice-names-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("Ice")).unwrap();
    std::fs::write(
        dir.join("Ice/Ids.ice"),
        "#pragma once\n[[\"ice-prefix\"]]\nmodule Ice { struct Id { string name; }; };\n",
    )
    .unwrap();
    let user = "#include <Ice/Ids.ice>\nmodule M {\n  interface I { void op(Ice::Id id); };\n};";
    let c = compile_str("user.ice", user, std::slice::from_ref(&dir));
    assert!(c.diagnostics.is_empty(), "{}", c.render_diagnostics());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn diagnostics_render_like_rustc() {
    let c = compile_str("demo.ice", "module M {\n  struct S { Missing m; };\n};\n", &[]);
    let text = c.render_diagnostics();
    assert!(text.starts_with("error[E0004]: `Missing` is not defined"), "{text}");
    assert!(text.contains("--> demo.ice:2:14"), "{text}");
    assert!(text.contains("2 |   struct S { Missing m; };"), "{text}");
    assert!(text.contains("^"), "{text}");
}

#[test]
fn valid_slice_has_no_diagnostics() {
    let src = r#"
        [["java:package:x"]]
        #pragma once
        #ifndef GUARD
        #define GUARD
        module A { module B {
            /** A point. */
            struct P { int x; int y = 3; };
            sequence<P> PS;
            dictionary<string, PS> D;
            enum E { X, Y = 10, Z };
            const E Default = Y;
            const double Pi = 3.14;
            const long Big = -9223372036854775807;
            exception Ex { string why; };
            exception Ex2 extends Ex { optional(1) int code; };
            interface Base { idempotent int get(); };
            interface Other { void put(int v); };
            interface I extends Base, Other {
                ["amd"] optional(1) string op(P p, optional(2) PS seq, out D d, out optional(3) E e) throws Ex;
                Object* self();
                I* peer(\module m);
            };
            class Node { int v; Node next; };
            local interface Hidden { void x(); };
        }; };
        module A { struct Reopened { bool b; }; };
        #endif
        module \module { struct S { int x; }; };
    "#;
    let c = compile_str("ok.ice", &src.replace("\\module m", "string \\module"), &[]);
    assert!(!c.has_errors(), "{}", c.render_diagnostics());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(src in ".{0,300}") {
        let c = compile_str("fuzz.ice", &src, &[]);
        if let Some(u) = &c.unit {
            let generated = floe_slice::generate(u, &Default::default());
            prop_assert!(generated.is_ok(), "{}", generated.unwrap_err());
        }
    }

    #[test]
    fn mutated_valid_slice_never_panics(cut in 0usize..600, insert in "[{}();<>,:*=\\[\\]\"a-z0-9 ]{0,8}") {
        let base = include_str!("../../../tests/interop/Test.ice");
        let cut = cut.min(base.len());
        let cut = (0..=cut).rev().find(|i| base.is_char_boundary(*i)).unwrap_or(0);
        let src = format!("{}{}{}", &base[..cut], insert, &base[cut..]);
        let c = compile_str("fuzz.ice", &src, &[]);
        if let Some(u) = &c.unit {
            let generated = floe_slice::generate(u, &Default::default());
            prop_assert!(generated.is_ok(), "{}", generated.unwrap_err());
        }
    }
}

#[test]
fn enumerators_may_take_their_values_from_integer_constants() {
    let src = r#"
        module M {
            const byte Ten = 10;
            const long Forty = 40;
            const long AliasOfForty = Forty;
            module Inner { enum E { a, b = Ten, c, d = ::M::Forty, e = AliasOfForty }; };
        };
    "#;
    expect(src, Code::BadEnumerator, 6); // e = 40 repeats d's value
    let c = compile_str("ok.ice", &src.replace(", e = AliasOfForty", ""), &[]);
    assert!(!c.has_errors(), "{}", c.render_diagnostics());
    let unit = c.unit.expect("unit");
    let (_, def) = unit.lookup("::M::Inner::E").expect("E");
    let floe_slice::ast::DefKind::Enum { enumerators } = &def.kind else { panic!("not an enum") };
    let values: Vec<i64> = enumerators.iter().map(|e| e.value).collect();
    assert_eq!(values, [0, 10, 11, 40]);
    expect("module M { const string S = \"x\"; enum E { a = S }; };", Code::BadEnumerator, 1);
    expect("module M { enum E { a = Nowhere }; };", Code::Undefined, 1);
}

/// Ice's grammar puts an out-parameter's metadata after `out`; before the parameter (or
/// before `out`) is accepted too.
#[test]
fn metadata_after_out_is_accepted() {
    let src = "module M {\n  sequence<byte> B;\n  interface I {\n    B op([\"python:seq:tuple\"] B b1, \
               out [\"python:seq:list\"] B b2, [\"python:seq:list\"] out B b3);\n  };\n};";
    assert_eq!(codes(src), vec![]);
}
