//! Ice 3.8's nested module syntax, `module A::B { … }`: the same definitions as modules
//! written one inside the other.

use floe_slice::{compile_str, generate};

fn rust(text: &str) -> String {
    let c = compile_str("t.ice", text, &[]);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    generate(c.unit.as_ref().expect("a unit"), &Default::default()).expect("generated code")
}

#[test]
fn nested_module_syntax_is_modules_inside_modules() {
    let nested = rust("module A::B::C { struct S { int x; } interface I { S op(); } }");
    let spelled_out = rust("module A { module B { module C { struct S { int x; } interface I { S op(); } } } }");
    assert_eq!(nested, spelled_out);
    assert!(nested.contains("pub mod c"), "{nested}");
}

#[test]
fn nested_module_syntax_reopens_modules() {
    let c = compile_str("t.ice", "module A { struct S { int x; } }\nmodule A::B { struct T { ::A::S s; } }", &[]);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
}

#[test]
fn a_scope_without_a_module_name_is_an_error() {
    assert!(compile_str("t.ice", "module A:: { struct S { int x; } }", &[]).has_errors());
}
