//! Compact type ids given as integers, integer constants and enumerators (Ice 3.8's objects
//! suite writes `class Compact(First)` and `class CompactScoped(CompactIdEnum::Second)`).

use floe_slice::ast::DefKind;
use floe_slice::compile_str;

/// The compact ids of the classes of `text`, module `M`, by class name.
fn compact_ids(text: &str) -> Vec<(String, Option<i32>)> {
    let c = compile_str("t.ice", text, &[]);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let unit = c.unit.expect("a unit");
    let mut ids = Vec::new();
    for d in &unit.defs {
        if let DefKind::Module(inner) = &d.kind {
            for d in inner {
                if let DefKind::Class { compact_id, forward: false, .. } = &d.kind {
                    ids.push((d.name.clone(), *compact_id));
                }
            }
        }
    }
    ids
}

#[test]
fn compact_ids_from_literals_constants_and_enumerators() {
    let ids = compact_ids(
        "module M {
            enum CompactIdEnum { First = 1, Second = 2, Third }
            const int CompactExtId = 789;
            class Literal(5) {}
            class FromConst(CompactExtId) {}
            class FromEnumerator(First) {}
            class FromScopedEnumerator(CompactIdEnum::Second) {}
            class FromImplicitValue(::M::CompactIdEnum::Third) {}
            class None {}
        }",
    );
    let expect = |name: &str| ids.iter().find(|(n, _)| n == name).map(|(_, id)| *id).expect(name);
    assert_eq!(expect("Literal"), Some(5));
    assert_eq!(expect("FromConst"), Some(789));
    assert_eq!(expect("FromEnumerator"), Some(1));
    assert_eq!(expect("FromScopedEnumerator"), Some(2));
    assert_eq!(expect("FromImplicitValue"), Some(3));
    assert_eq!(expect("None"), None);
}

#[test]
fn a_compact_id_that_is_neither_constant_nor_enumerator_is_an_error() {
    for text in [
        "module M { struct S { int x; } class C(S) {} }",
        "module M { const string Name = \"x\"; class C(Name) {} }",
        "module M { class C(Missing) {} }",
    ] {
        assert!(compile_str("t.ice", text, &[]).has_errors(), "{text}");
    }
}
