//! The rules Ice's compiler checks once every name is resolved: dictionary keys, tags,
//! constant values, members, operations, and inheritance (cycles, clashes, bases).

use std::collections::{HashMap, HashSet};

use super::{join, Unit};
use crate::ast::*;
use crate::diag::{Code, Diagnostic, Span};

fn builtin_of(unit: &Unit, t: &TypeRef) -> Option<Builtin> {
    match t {
        TypeRef::Builtin(b, _) => Some(*b),
        _ => {
            let _ = unit;
            None
        }
    }
}

/// Legal dictionary key: integral types, bool, string, enums, and structs made only of these.
fn legal_key(unit: &Unit, t: &TypeRef, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    match t {
        TypeRef::Builtin(b, _) => {
            matches!(b, Builtin::Bool | Builtin::Byte | Builtin::Short | Builtin::Int | Builtin::Long | Builtin::String)
        }
        TypeRef::Named { proxy: true, .. } => false,
        TypeRef::Named { resolved: None, .. } => true, // already reported
        TypeRef::Named { resolved: Some(abs), .. } => match unit.lookup(abs) {
            Some((_, d)) => match &d.kind {
                DefKind::Enum { .. } => true,
                DefKind::Struct { members } => members.iter().all(|m| legal_key(unit, &m.ty, depth + 1)),
                _ => false,
            },
            None => true,
        },
    }
}

fn type_is_local(unit: &Unit, t: &TypeRef) -> bool {
    match t {
        TypeRef::Builtin(Builtin::LocalObject, _) => true,
        TypeRef::Named { resolved: Some(abs), .. } => unit.symbols.get(abs).map(|s| s.local).unwrap_or(false),
        _ => false,
    }
}

fn check_tags<'a>(tags: impl Iterator<Item = (i32, Span, &'a str)>, diags: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<i32, &str> = HashMap::new();
    for (tag, span, name) in tags {
        if let Some(prev) = seen.insert(tag, name) {
            diags.push(Diagnostic::error(
                Code::DuplicateTag,
                span,
                format!("tag {tag} of `{name}` is already used by `{prev}`"),
            ));
        }
    }
}

fn check_const(unit: &Unit, ty: &TypeRef, value: &ConstValue, span: Span, diags: &mut Vec<Diagnostic>) {
    let bad = |msg: String, diags: &mut Vec<Diagnostic>| diags.push(Diagnostic::error(Code::BadConstant, span, msg));
    match (builtin_of(unit, ty), value) {
        (Some(Builtin::Bool), ConstValue::Bool(_)) => {}
        (Some(Builtin::String), ConstValue::Str(_)) => {}
        (Some(b @ (Builtin::Byte | Builtin::Short | Builtin::Int | Builtin::Long)), ConstValue::Int(v)) => {
            let (lo, hi): (i128, i128) = match b {
                Builtin::Byte => (0, 255),
                Builtin::Short => (i16::MIN as i128, i16::MAX as i128),
                Builtin::Int => (i32::MIN as i128, i32::MAX as i128),
                _ => (i64::MIN as i128, i64::MAX as i128),
            };
            if *v < lo || *v > hi {
                bad(format!("{v} does not fit in a {}", b.name()), diags);
            }
        }
        (Some(Builtin::Float | Builtin::Double), ConstValue::Float(_) | ConstValue::Int(_)) => {}
        (Some(_), ConstValue::Name(..)) | (None, ConstValue::Name(..)) => {}
        (Some(b), v) => bad(format!("{v:?} is not a valid {} value", b.name()), diags),
        (None, v) => {
            if let TypeRef::Named { resolved: Some(abs), .. } = ty {
                if let Some((_, d)) = unit.lookup(abs) {
                    if !matches!(d.kind, DefKind::Enum { .. }) {
                        bad(format!("constants of type `{}` are not allowed", d.name), diags);
                    } else {
                        bad(format!("{v:?} is not an enumerator of `{}`", d.name), diags);
                    }
                }
            }
        }
    }
}

pub(super) fn rules(unit: &Unit, diags: &mut Vec<Diagnostic>) {
    fn walk(unit: &Unit, defs: &[Definition], scope: &str, diags: &mut Vec<Diagnostic>) {
        for d in defs {
            let abs = join(scope, &d.name);
            match &d.kind {
                DefKind::Module(inner) => walk(unit, inner, &abs, diags),
                DefKind::Dictionary { key, .. } if !legal_key(unit, key, 0) => {
                    diags.push(Diagnostic::error(
                        Code::IllegalKey,
                        key.span(),
                        format!("illegal dictionary key type in `{}`", d.name),
                    ));
                }
                DefKind::Struct { members } => {
                    member_rules(unit, d, members, diags);
                    for m in members {
                        if matches!(&m.ty, TypeRef::Named { proxy: false, resolved: Some(r), .. } if *r == abs) {
                            diags.push(Diagnostic::error(
                                Code::IllegalUse,
                                m.span,
                                format!("struct `{}` cannot contain itself", d.name),
                            ));
                        }
                        if m.tag.is_some() {
                            diags.push(Diagnostic::error(
                                Code::BadOptional,
                                m.span,
                                "struct members cannot be optional",
                            ));
                        }
                    }
                }
                DefKind::Exception { members, .. } | DefKind::Class { members, .. } => {
                    member_rules(unit, d, members, diags);
                    let mut all = Vec::new();
                    collect_inherited(unit, &abs, &mut all, 0);
                    check_tags(all.iter().filter_map(|m| m.tag.map(|t| (t, m.span, m.name.as_str()))), diags);
                    cycle_check(unit, &abs, d, diags);
                    if let DefKind::Class { ops, forward: false, .. } = &d.kind {
                        own_ops(unit, d, ops, diags);
                    }
                    inheritance_rules(unit, d, diags);
                }
                DefKind::Interface { ops, forward: false, .. } => {
                    cycle_check(unit, &abs, d, diags);
                    own_ops(unit, d, ops, diags);
                    inheritance_rules(unit, d, diags);
                }
                DefKind::Const { ty, value, .. } => check_const(unit, ty, value, d.span, diags),
                _ => {}
            }
        }
    }
    let defs = unit.defs.clone();
    walk(unit, &defs, "", diags);
}

fn member_rules(unit: &Unit, d: &Definition, members: &[Member], diags: &mut Vec<Diagnostic>) {
    let mut names: HashMap<String, &str> = HashMap::new();
    for m in members {
        if let Some(prev) = names.insert(m.name.to_lowercase(), &m.name) {
            diags.push(Diagnostic::error(
                Code::Redefinition,
                m.span,
                format!("member `{}` clashes with `{prev}`", m.name),
            ));
        }
        if !d.local && type_is_local(unit, &m.ty) {
            diags.push(Diagnostic::error(
                Code::IllegalUse,
                m.span,
                format!("non-local `{}` cannot use a local type", d.name),
            ));
        }
        if let Some(v) = &m.default {
            check_const(unit, &m.ty, v, m.span, diags);
        }
        if let Some(t) = m.tag {
            if t < 0 {
                diags.push(Diagnostic::error(Code::BadOptional, m.span, "tags must not be negative"));
            }
        }
    }
}

fn op_rules(unit: &Unit, iface: &Definition, o: &Operation, diags: &mut Vec<Diagnostic>) {
    let mut names: HashMap<String, &str> = HashMap::new();
    let mut seen_out = false;
    for p in &o.params {
        if let Some(prev) = names.insert(p.name.to_lowercase(), &p.name) {
            diags.push(Diagnostic::error(
                Code::Redefinition,
                p.span,
                format!("parameter `{}` clashes with `{prev}`", p.name),
            ));
        }
        if p.out {
            seen_out = true;
        } else if seen_out {
            diags.push(Diagnostic::error(
                Code::Syntax,
                p.span,
                format!("in-parameter `{}` follows an out-parameter", p.name),
            ));
        }
        if !iface.local && type_is_local(unit, &p.ty) {
            diags.push(Diagnostic::error(Code::IllegalUse, p.span, "a remote operation cannot use a local type"));
        }
    }
    if let Some(r) = &o.ret {
        if !iface.local && type_is_local(unit, r) {
            diags.push(Diagnostic::error(Code::IllegalUse, r.span(), "a remote operation cannot return a local type"));
        }
    }
    // In-parameters, out-parameters and the return value share one set of tags.
    let tags = o
        .ret_tag
        .map(|t| (t, o.span, "return value"))
        .into_iter()
        .chain(o.params.iter().filter_map(|p| p.tag.map(|t| (t, p.span, p.name.as_str()))));
    check_tags(tags, diags);
    let mut thrown = HashSet::new();
    for (n, s, _) in &o.throws {
        if !thrown.insert(n.clone()) {
            diags.push(Diagnostic::error(Code::Redefinition, *s, format!("exception `{n}` is listed twice")));
        }
    }
}

fn collect_inherited<'a>(unit: &'a Unit, abs: &str, out: &mut Vec<&'a Member>, depth: usize) {
    if depth > 64 {
        return;
    }
    let Some((_, d)) = unit.lookup(abs) else { return };
    match &d.kind {
        DefKind::Exception { base, members } | DefKind::Class { base, members, .. } => {
            if let Some((_, _, Some(b))) = base {
                collect_inherited(unit, b, out, depth + 1);
            }
            out.extend(members.iter());
        }
        _ => {}
    }
}

fn bases_of(d: &Definition) -> Vec<String> {
    match &d.kind {
        DefKind::Interface { bases, .. } => bases.iter().filter_map(|(_, _, r)| r.clone()).collect(),
        DefKind::Class { base, .. } | DefKind::Exception { base, .. } => {
            base.iter().filter_map(|(_, _, r)| r.clone()).collect()
        }
        _ => vec![],
    }
}

fn cycle_check(unit: &Unit, abs: &str, d: &Definition, diags: &mut Vec<Diagnostic>) {
    let mut stack: Vec<String> = bases_of(d);
    let mut seen = HashSet::new();
    while let Some(b) = stack.pop() {
        if b == abs {
            diags.push(Diagnostic::error(
                Code::CyclicInheritance,
                d.span,
                format!("`{}` inherits from itself", d.name),
            ));
            return;
        }
        if seen.insert(b.clone()) {
            if let Some((_, bd)) = unit.lookup(&b) {
                stack.extend(bases_of(bd));
            }
        }
        if seen.len() > 10_000 {
            return;
        }
    }
}

/// The operations of an interface or class: its own and those of all its bases (base class
/// and interfaces), each with the interface or class that defines it.
fn all_ops<'a>(unit: &'a Unit, abs: &str, out: &mut Vec<(&'a str, String)>, seen: &mut HashSet<String>, depth: usize) {
    if depth > 64 || !seen.insert(abs.to_string()) {
        return;
    }
    let Some((_, d)) = unit.lookup(abs) else { return };
    let ops = match &d.kind {
        DefKind::Interface { ops, .. } | DefKind::Class { ops, .. } => ops,
        _ => return,
    };
    for b in class_bases(d) {
        all_ops(unit, &b, out, seen, depth + 1);
    }
    out.extend(ops.iter().map(|o| (o.name.as_str(), abs.to_string())));
}

/// The direct bases of an interface or class: its base class, then the interfaces it extends
/// or implements.
fn class_bases(d: &Definition) -> Vec<String> {
    match &d.kind {
        DefKind::Interface { bases, .. } => bases.iter().filter_map(|(_, _, r)| r.clone()).collect(),
        DefKind::Class { base, implements, .. } => {
            base.iter().chain(implements).filter_map(|(_, _, r)| r.clone()).collect()
        }
        _ => vec![],
    }
}

/// The operations of an interface or class among themselves.
fn own_ops(unit: &Unit, d: &Definition, ops: &[Operation], diags: &mut Vec<Diagnostic>) {
    let mut names: HashMap<String, &str> = HashMap::new();
    for o in ops {
        if let Some(prev) = names.insert(o.name.to_lowercase(), &o.name) {
            diags.push(Diagnostic::error(
                Code::Redefinition,
                o.span,
                format!("operation `{}` clashes with `{prev}`", o.name),
            ));
        }
        op_rules(unit, d, o, diags);
    }
}

/// Names an interface, class or exception inherits: its operations and data members may not
/// take (in any capitalization) the name of an inherited operation or data member, and
/// operations inherited from unrelated bases may not clash.
fn inheritance_rules(unit: &Unit, d: &Definition, diags: &mut Vec<Diagnostic>) {
    // (name, what it is, where it comes from) of everything inherited.
    let mut inherited: Vec<(&str, &str, String)> = Vec::new();
    let (own_members, own_ops): (&[Member], &[Operation]) = match &d.kind {
        DefKind::Exception { base, members } => {
            if let Some((_, _, Some(b))) = base {
                let mut all = Vec::new();
                collect_inherited(unit, b, &mut all, 0);
                inherited.extend(all.iter().map(|m| (m.name.as_str(), "data member", b.clone())));
            }
            (members, &[])
        }
        DefKind::Class { base, members, ops, forward: false, .. } => {
            if let Some((_, _, Some(b))) = base {
                let mut all = Vec::new();
                collect_inherited(unit, b, &mut all, 0);
                inherited.extend(all.iter().map(|m| (m.name.as_str(), "data member", b.clone())));
            }
            (members, ops)
        }
        DefKind::Interface { ops, forward: false, .. } => (&[], ops),
        _ => return,
    };
    let bases = class_bases(d);
    let mut per_base = Vec::new();
    for b in &bases {
        let mut ops = Vec::new();
        all_ops(unit, b, &mut ops, &mut HashSet::new(), 0);
        inherited.extend(ops.iter().map(|(n, from)| (*n, "operation", from.clone())));
        per_base.push(ops);
    }
    let own = own_members
        .iter()
        .map(|m| (&m.name, m.span, "data member"))
        .chain(own_ops.iter().map(|o| (&o.name, o.span, "operation")));
    for (name, span, what) in own {
        if let Some((other, kind, from)) = inherited.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(name)) {
            let how = if other == name { "has the name of" } else { "differs only in capitalization from" };
            diags.push(Diagnostic::error(
                Code::Ambiguous,
                span,
                format!("{what} `{name}` {how} {kind} `{other}` inherited from `{from}`"),
            ));
        }
    }
    // Bases that share an ancestor share its operations; others must not bring the same name.
    let mut reported = HashSet::new();
    for (i, a) in per_base.iter().enumerate() {
        for b in &per_base[i + 1..] {
            for (na, fa) in a {
                let clash = b.iter().find(|(nb, fb)| nb.eq_ignore_ascii_case(na) && fb != fa);
                if let Some((nb, fb)) = clash {
                    if reported.insert(na.to_lowercase()) {
                        diags.push(Diagnostic::error(
                            Code::Ambiguous,
                            d.span,
                            format!("`{}` inherits operation `{na}` from `{fa}` and `{nb}` from `{fb}`, which are unrelated", d.name),
                        ));
                    }
                }
            }
        }
    }
}
