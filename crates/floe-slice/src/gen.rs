//! Rust code generation.
//!
//! Mapping (documented in docs/slice-rust-mapping.md):
//! modules → `pub mod snake_case`; structs → structs with derives (plus a bulk-copy layout when
//! the wire layout equals the memory layout); enums → `#[repr(i32)]` enums; sequences →
//! `Vec<T>` (byte sequences → `bytes::Bytes`, or `Vec<u8>` with `["rust:vec"]`); dictionaries →
//! `HashMap` (or `BTreeMap` with `["rust:btreemap"]`); constants → `pub const`; exceptions →
//! structs implementing `UserExceptionSlices` and `std::error::Error`; interfaces → a typed
//! proxy `NamePrx`, a servant trait `Name` with async methods, and a dispatcher
//! `NameServer<T>`. Operations that declare exceptions return `CallError<NameOpError>` where
//! `NameOpError` lists the declared exceptions and their known subtypes.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;

use crate::ast::*;
use crate::check::{SymKind, Unit};

/// Generation options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Path of the floe crate in generated code.
    pub floe: String,
}

impl Default for Options {
    fn default() -> Self {
        Options { floe: "::floe".to_string() }
    }
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield", "gen",
];

/// `opBoolSeq` → `op_bool_seq`, `getURL` → `get_url`.
pub fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = if i > 0 { Some(chars[i - 1]) } else { None };
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.map(|n| n.is_lowercase()).unwrap_or(false),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Escapes a Rust keyword (`type` → `r#type`; `self` → `self_`).
pub fn ident(name: &str) -> String {
    match name {
        "self" | "Self" | "super" | "crate" => format!("{name}_"),
        n if RUST_KEYWORDS.contains(&n) => format!("r#{n}"),
        n => n.to_string(),
    }
}

/// True when an operation returns something (a result or out parameters): it can only be
/// called twoway, and has no batched form.
fn returns_values(o: &Operation) -> bool {
    o.ret.is_some() || o.params.iter().any(|p| p.out)
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut up = true;
    for c in name.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn doc_lines(out: &mut String, ind: &str, doc: &Option<String>) {
    if let Some(d) = doc {
        for line in d.lines() {
            let line = line.trim();
            if line.is_empty() {
                let _ = writeln!(out, "{ind}///");
            } else {
                let _ = writeln!(out, "{ind}/// {}", line.replace("*/", "* /"));
            }
        }
    }
}

/// A trailing sequence that is sent from its own memory when large, in requests (by the
/// `ObjectPrx` method that [`invoke`](Self::invoke) names) and replies (by the `Current`
/// method that [`reply`](Self::reply) names).
#[derive(Clone, Copy)]
enum SeparateTail {
    /// A byte sequence mapped to `Bytes`.
    Bytes,
    /// A `Vec` of numbers or of structs of numbers (`floe::encoding::WireLayout`).
    WireLayout,
}

impl SeparateTail {
    fn invoke(self) -> &'static str {
        match self {
            SeparateTail::Bytes => "invoke_with_tail",
            SeparateTail::WireLayout => "invoke_with_seq_tail",
        }
    }

    /// The reply expression's method and argument for the results' last value `name`.
    fn reply(self, name: &str) -> (&'static str, String) {
        match self {
            SeparateTail::Bytes => ("ok_with_tail", format!("&{name}")),
            SeparateTail::WireLayout => ("ok_with_seq_tail", name.to_string()),
        }
    }
}

/// How an optional value is written after its tag.
enum OptKind {
    /// The value alone (F1–F8, Size, and VSize for strings and byte/bool sequences).
    Plain,
    /// VSize with a fixed size prefix (fixed-size structs).
    FixedStruct(usize),
    /// VSize with `n * elem + size-of-n` as prefix (sequences of fixed-size elements).
    FixedSeq(usize),
    /// FSize: int32 length, then the value.
    FSize,
}

struct Gen<'a> {
    unit: &'a Unit,
    compact_strings: bool,
    f: String,
    out: String,
    depth: usize,
    module: Vec<String>,
    skipped: Vec<String>,
    /// Classes generated so far, with their compact ids (for the unit's class factory).
    classes: Vec<(String, Option<i32>)>,
}

/// Generates Rust for every non-local definition of `unit` that does not come from an
/// included file.
pub fn generate(unit: &Unit, options: &Options) -> String {
    let compact_strings = unit.global_metadata.iter().any(|m| m == "rust:compact-strings");
    let mut g = Gen {
        unit,
        compact_strings,
        f: options.floe.clone(),
        out: String::new(),
        depth: 0,
        module: Vec::new(),
        skipped: Vec::new(),
        classes: Vec::new(),
    };
    g.out.push_str("// Generated by slice2rs. Do not edit.\n\n");
    let defs: Vec<Definition> = unit.defs.clone();
    g.defs(&defs);
    g.gen_class_factory();
    if !g.skipped.is_empty() {
        let mut note = String::from("// Not generated:\n");
        for s in &g.skipped {
            let _ = writeln!(note, "//   {s}");
        }
        g.out.push_str(&note);
    }
    g.out
}

impl<'a> Gen<'a> {
    /// The unit's class factory: every class it defines, by type id and compact id.
    fn gen_class_factory(&mut self) {
        let f = self.f.clone();
        self.line("/// Creates the classes of this Slice compilation by type id (used when decoding).");
        self.line("#[doc(hidden)]");
        self.line("pub mod __floe_classes {");
        self.module.push("__floe_classes".into());
        self.depth += 1;
        self.line("#![allow(clippy::all, unreachable_patterns)]");
        self.line("/// A default instance of the class with this type id.");
        self.line(&format!("pub fn create(type_id: &str) -> Option<Box<dyn {f}::encoding::ClassValue>> {{"));
        self.line("    match type_id {");
        let classes = self.classes.clone();
        for (abs, _) in &classes {
            let p = self.path(abs);
            self.line(&format!("        {abs:?} => Some(Box::new(<{p} as Default>::default())),"));
        }
        // Interfaces passed by value (deprecated): instances carrying only the type id.
        let interfaces: Vec<String> = self
            .unit
            .symbols
            .iter()
            .filter(|(_, sym)| sym.kind == SymKind::Interface && !sym.local)
            .filter(|(_, sym)| {
                let d = self.unit.def(&sym.path);
                !d.included && matches!(d.kind, DefKind::Interface { forward: false, .. })
            })
            .map(|(abs, _)| abs.clone())
            .collect();
        for abs in &interfaces {
            self.line(&format!("        {abs:?} => Some(Box::new({f}::encoding::InterfaceByValue::new({abs:?}))),"));
        }
        self.line("        _ => None,");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line("/// The type id a compact id stands for.");
        self.line("pub fn compact(id: i32) -> Option<&'static str> {");
        self.line("    match id {");
        for (abs, c) in &classes {
            if let Some(c) = c {
                self.line(&format!("        {c} => Some({abs:?}),"));
            }
        }
        self.line("        _ => None,");
        self.line("    }");
        self.line("}");
        self.depth -= 1;
        self.module.pop();
        self.line("}");
    }

    fn ind(&self) -> String {
        "    ".repeat(self.depth)
    }

    fn doc(&mut self, doc: &Option<String>) {
        let ind = self.ind();
        doc_lines(&mut self.out, &ind, doc);
    }

    fn line(&mut self, s: &str) {
        if s.is_empty() {
            self.out.push('\n');
        } else {
            let ind = self.ind();
            let _ = writeln!(self.out, "{ind}{s}");
        }
    }

    fn has_output(&self, defs: &[Definition]) -> bool {
        defs.iter().any(|d| {
            !d.local
                && match &d.kind {
                    DefKind::Module(inner) => self.has_output(inner),
                    _ if d.included => false,
                    DefKind::Class { forward, .. } => !forward,
                    DefKind::Interface { forward: true, .. } => false,
                    _ => true,
                }
        })
    }

    fn abs(&self, name: &str) -> String {
        let mut s = String::new();
        for m in &self.module {
            s.push_str("::");
            s.push_str(m);
        }
        s.push_str("::");
        s.push_str(name);
        s
    }

    fn defs(&mut self, defs: &[Definition]) {
        // A module reopened several times (in one file or across files) becomes one Rust module.
        let mut merged: Vec<Definition> = Vec::new();
        for d in defs {
            if let DefKind::Module(inner) = &d.kind {
                if let Some(prev) = merged.iter_mut().find(|m| m.name == d.name && matches!(m.kind, DefKind::Module(_)))
                {
                    if let DefKind::Module(all) = &mut prev.kind {
                        all.extend(inner.iter().cloned());
                    }
                    prev.included &= d.included;
                    continue;
                }
            }
            merged.push(d.clone());
        }
        for d in &merged {
            if d.included && !matches!(d.kind, DefKind::Module(_)) {
                continue;
            }
            if d.local {
                continue;
            }
            let abs = self.abs(&d.name);
            if let DefKind::Module(inner) = &d.kind {
                if !self.has_output(inner) {
                    continue;
                }
                self.doc(&d.doc);
                let name = ident(&snake(&d.name));
                self.line(&format!("pub mod {name} {{"));
                self.depth += 1;
                self.line(
                    "#![allow(unused_imports, dead_code, clippy::all, unused_mut, unused_variables, non_snake_case)]",
                );
                self.line(&format!("use {}::encoding::{{Decode as _, Encode as _}};", self.f));
                self.module.push(d.name.clone());
                self.defs(inner);
                self.module.pop();
                self.depth -= 1;
                self.line("}");
                self.line("");
                continue;
            }
            if let DefKind::Class { forward: false, .. } = &d.kind {
                self.gen_class(d, &abs);
                if self.class_has_proxy(&abs) {
                    // Its operations are served and invoked like an interface's.
                    self.gen_interface(d, &abs);
                }
                continue;
            }
            match &d.kind {
                DefKind::Struct { members } => self.gen_struct(d, &abs, members),
                DefKind::Enum { enumerators } => self.gen_enum(d, &abs, enumerators),
                DefKind::Sequence { elem } => self.gen_sequence(d, elem),
                DefKind::Dictionary { key, value } => self.gen_dictionary(d, key, value),
                DefKind::Const { ty, value } => self.gen_const(d, ty, value),
                DefKind::Exception { .. } => self.gen_exception(d, &abs),
                DefKind::Interface { forward: false, .. } => self.gen_interface(d, &abs),
                _ => {}
            }
        }
    }

    // ---- type analysis

    fn resolved(&self, t: &TypeRef) -> Option<(&'a Definition, String)> {
        match t {
            TypeRef::Named { resolved: Some(abs), .. } => self.unit.lookup(abs).map(|(_, d)| (d, abs.clone())),
            _ => None,
        }
    }

    fn uses_class(&self, t: &TypeRef, seen: &mut HashSet<String>) -> bool {
        match t {
            TypeRef::Builtin(b, _) => matches!(b, Builtin::Object | Builtin::Value | Builtin::LocalObject),
            TypeRef::Named { proxy: true, .. } => false,
            TypeRef::Named { resolved: Some(abs), .. } => {
                if !seen.insert(abs.clone()) {
                    return false;
                }
                match self.unit.lookup(abs).map(|(_, d)| &d.kind) {
                    // A class, or an interface passed by value (a class instance in Ice 3.7).
                    Some(DefKind::Class { .. }) | Some(DefKind::Interface { .. }) => true,
                    Some(DefKind::Struct { members }) => members.iter().any(|m| self.uses_class(&m.ty, seen)),
                    Some(DefKind::Sequence { elem }) => self.uses_class(elem, seen),
                    Some(DefKind::Dictionary { key, value }) => {
                        self.uses_class(key, seen) || self.uses_class(value, seen)
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// True when values of the type hold neither proxies nor class instances, at any depth:
    /// decoding them needs no communicator.
    fn is_plain_data(&self, t: &TypeRef, seen: &mut HashSet<String>) -> bool {
        match t {
            TypeRef::Builtin(b, _) => {
                !matches!(b, Builtin::Object | Builtin::ObjectProxy | Builtin::Value | Builtin::LocalObject)
            }
            TypeRef::Named { proxy: true, .. } => false,
            TypeRef::Named { resolved: Some(abs), .. } => {
                if !seen.insert(abs.clone()) {
                    return true;
                }
                match self.unit.lookup(abs).map(|(_, d)| &d.kind) {
                    Some(DefKind::Enum { .. }) => true,
                    Some(DefKind::Struct { members }) => members.iter().all(|m| self.is_plain_data(&m.ty, seen)),
                    Some(DefKind::Sequence { elem }) => self.is_plain_data(elem, seen),
                    Some(DefKind::Dictionary { key, value }) => {
                        self.is_plain_data(key, seen) && self.is_plain_data(value, seen)
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// How the in-parameters use classes: `(any, required)`. Encoding 1.0 writes pending
    /// values after them only when a required one does (optionals do not exist in 1.0).
    fn op_sends_classes(&self, o: &Operation) -> (bool, bool) {
        let mut seen = HashSet::new();
        let ins: Vec<&Param> = o.params.iter().filter(|p| !p.out).collect();
        let any = ins.iter().any(|p| self.uses_class(&p.ty, &mut seen.clone()));
        let required = ins.iter().filter(|p| p.tag.is_none()).any(|p| self.uses_class(&p.ty, &mut seen));
        (any, required)
    }

    /// How the return value and out-parameters use classes: `(any, required)`.
    fn op_returns_classes(&self, o: &Operation) -> (bool, bool) {
        let mut seen = HashSet::new();
        let ret = o.ret.as_ref().map(|r| (r, o.ret_tag.is_some()));
        let outs = o.params.iter().filter(|p| p.out).map(|p| (&p.ty, p.tag.is_some()));
        let all: Vec<(&TypeRef, bool)> = ret.into_iter().chain(outs).collect();
        let any = all.iter().any(|(t, _)| self.uses_class(t, &mut seen.clone()));
        let required = all.iter().filter(|(_, optional)| !optional).any(|(t, _)| self.uses_class(t, &mut seen));
        (any, required)
    }

    /// The code that ends reading classes: pending values (and type checks) when required
    /// parameters hold classes, type checks alone when only optional ones do.
    fn finish_classes(uses: (bool, bool)) -> Option<&'static str> {
        match uses {
            (_, true) => Some("dec.read_pending_values()?;"),
            (true, false) => Some("dec.check_class_types()?;"),
            _ => None,
        }
    }

    /// Encoded size when fixed, else `None`.
    fn fixed_size(&self, t: &TypeRef, depth: usize) -> Option<usize> {
        if depth > 32 {
            return None;
        }
        match t {
            TypeRef::Builtin(b, _) => match b {
                Builtin::Bool | Builtin::Byte => Some(1),
                Builtin::Short => Some(2),
                Builtin::Int | Builtin::Float => Some(4),
                Builtin::Long | Builtin::Double => Some(8),
                _ => None,
            },
            TypeRef::Named { proxy: true, .. } => None,
            TypeRef::Named { .. } => match self.resolved(t).map(|(d, _)| &d.kind) {
                Some(DefKind::Struct { members }) => {
                    members.iter().map(|m| self.fixed_size(&m.ty, depth + 1)).sum::<Option<usize>>()
                }
                _ => None,
            },
        }
    }

    fn min_size(&self, t: &TypeRef, depth: usize) -> usize {
        if depth > 32 {
            return 1;
        }
        match t {
            TypeRef::Builtin(Builtin::ObjectProxy, _) | TypeRef::Named { proxy: true, .. } => 2,
            TypeRef::Builtin(..) => self.fixed_size(t, depth).unwrap_or(1),
            TypeRef::Named { .. } => match self.resolved(t).map(|(d, _)| &d.kind) {
                Some(DefKind::Struct { members }) => {
                    members.iter().map(|m| self.min_size(&m.ty, depth + 1)).sum::<usize>().max(1)
                }
                _ => 1,
            },
        }
    }

    /// (size, alignment) in memory when the type can be bulk-copied (`#[repr(C)]`, no padding,
    /// no bool).
    fn layout(&self, t: &TypeRef, depth: usize) -> Option<(usize, usize)> {
        if depth > 32 {
            return None;
        }
        match t {
            TypeRef::Builtin(b, _) => match b {
                Builtin::Byte => Some((1, 1)),
                Builtin::Short => Some((2, 2)),
                Builtin::Int | Builtin::Float => Some((4, 4)),
                Builtin::Long | Builtin::Double => Some((8, 8)),
                _ => None,
            },
            TypeRef::Named { proxy: true, .. } => None,
            TypeRef::Named { .. } => match self.resolved(t).map(|(d, _)| &d.kind) {
                Some(DefKind::Struct { members }) => self.struct_layout(members, depth + 1),
                _ => None,
            },
        }
    }

    fn struct_layout(&self, members: &[Member], depth: usize) -> Option<(usize, usize)> {
        let mut offset = 0;
        let mut align = 1;
        for m in members {
            let (s, a) = self.layout(&m.ty, depth)?;
            if offset % a != 0 {
                return None;
            }
            offset += s;
            align = align.max(a);
        }
        if offset % align != 0 || !cfg!(target_endian = "little") {
            return None;
        }
        Some((offset, align))
    }

    fn keyable(&self, t: &TypeRef, depth: usize) -> bool {
        if depth > 32 {
            return false;
        }
        match t {
            TypeRef::Builtin(b, _) => {
                matches!(
                    b,
                    Builtin::Bool | Builtin::Byte | Builtin::Short | Builtin::Int | Builtin::Long | Builtin::String
                )
            }
            TypeRef::Named { proxy: true, .. } => false,
            TypeRef::Named { .. } => match self.resolved(t).map(|(d, _)| &d.kind) {
                Some(DefKind::Enum { .. }) => true,
                Some(DefKind::Struct { members }) => members.iter().all(|m| self.keyable(&m.ty, depth + 1)),
                Some(DefKind::Sequence { elem }) => self.keyable(elem, depth + 1),
                Some(DefKind::Dictionary { .. }) => false,
                _ => false,
            },
        }
    }

    fn is_copy(&self, t: &TypeRef) -> bool {
        match t {
            TypeRef::Builtin(b, _) => !matches!(
                b,
                Builtin::String | Builtin::ObjectProxy | Builtin::Object | Builtin::Value | Builtin::LocalObject
            ),
            TypeRef::Named { proxy: true, .. } => false,
            TypeRef::Named { .. } => matches!(self.resolved(t).map(|(d, _)| &d.kind), Some(DefKind::Enum { .. })),
        }
    }

    fn opt_kind(&self, t: &TypeRef) -> (&'static str, OptKind) {
        match t {
            TypeRef::Builtin(Builtin::Object | Builtin::Value, _) => ("Class", OptKind::Plain),
            TypeRef::Named { proxy: false, resolved: Some(abs), .. }
                if self.is_class(abs) || self.is_interface(abs) =>
            {
                ("Class", OptKind::Plain)
            }
            TypeRef::Builtin(b, _) => match b {
                Builtin::Bool | Builtin::Byte => ("F1", OptKind::Plain),
                Builtin::Short => ("F2", OptKind::Plain),
                Builtin::Int | Builtin::Float => ("F4", OptKind::Plain),
                Builtin::Long | Builtin::Double => ("F8", OptKind::Plain),
                Builtin::String => ("VSize", OptKind::Plain),
                _ => ("FSize", OptKind::FSize),
            },
            TypeRef::Named { proxy: true, .. } => ("FSize", OptKind::FSize),
            TypeRef::Named { .. } => match self.resolved(t).map(|(d, _)| &d.kind) {
                Some(DefKind::Enum { .. }) => ("Size", OptKind::Plain),
                Some(DefKind::Struct { .. }) => match self.fixed_size(t, 0) {
                    Some(n) => ("VSize", OptKind::FixedStruct(n)),
                    None => ("FSize", OptKind::FSize),
                },
                Some(DefKind::Sequence { elem }) => match self.fixed_size(elem, 0) {
                    Some(1) => ("VSize", OptKind::Plain),
                    Some(n) => ("VSize", OptKind::FixedSeq(n)),
                    None => ("FSize", OptKind::FSize),
                },
                Some(DefKind::Dictionary { key, value }) => {
                    match (self.fixed_size(key, 0), self.fixed_size(value, 0)) {
                        (Some(k), Some(v)) => ("VSize", OptKind::FixedSeq(k + v)),
                        _ => ("FSize", OptKind::FSize),
                    }
                }
                _ => ("FSize", OptKind::FSize),
            },
        }
    }

    /// Rust path of a Slice type defined at absolute name `abs`, as seen from the current module.
    fn path(&self, abs: &str) -> String {
        match abs {
            "::Ice::Identity" => return format!("{}::Identity", self.f),
            "::Ice::Context" => return format!("{}::Context", self.f),
            _ => {}
        }
        let parts: Vec<&str> = abs.trim_start_matches("::").split("::").collect();
        let (mods, last) = parts.split_at(parts.len() - 1);
        let common = self.module.iter().zip(mods.iter()).take_while(|(a, b)| a.as_str() == **b).count();
        let mut s = String::new();
        for _ in common..self.module.len() {
            s.push_str("super::");
        }
        for m in &mods[common..] {
            s.push_str(&ident(&snake(m)));
            s.push_str("::");
        }
        let (sym, _) = self.unit.lookup(abs).expect("resolved names exist");
        let name = match sym.kind {
            SymKind::Const => ident(&snake(last[0]).to_uppercase()),
            _ => ident(last[0]),
        };
        s.push_str(&name);
        s
    }

    fn rust_type(&self, t: &TypeRef) -> String {
        match t {
            TypeRef::Builtin(b, _) => match b {
                Builtin::Bool => "bool".into(),
                Builtin::Byte => "u8".into(),
                Builtin::Short => "i16".into(),
                Builtin::Int => "i32".into(),
                Builtin::Long => "i64".into(),
                Builtin::Float => "f32".into(),
                Builtin::Double => "f64".into(),
                Builtin::String if self.compact_strings => format!("{}::CompactString", self.f),
                Builtin::String => "String".into(),
                Builtin::ObjectProxy => format!("Option<{}::ObjectPrx>", self.f),
                Builtin::Object | Builtin::Value => format!("Option<{}::AnyClass>", self.f),
                _ => "()".into(),
            },
            TypeRef::Named { proxy: true, resolved: Some(abs), .. }
                if self.is_class(abs) && !self.class_has_proxy(abs) =>
            {
                format!("Option<{}::ObjectPrx>", self.f)
            }
            TypeRef::Named { proxy: true, resolved: Some(abs), .. } => format!("Option<{}Prx>", self.path(abs)),
            // A class by value; an interface by value (deprecated) is any class implementing it.
            TypeRef::Named { resolved: Some(abs), .. } if self.is_class(abs) => {
                format!("Option<{}::Class<{}>>", self.f, self.path(abs))
            }
            TypeRef::Named { resolved: Some(abs), .. } if self.is_interface(abs) => {
                format!("Option<{}::AnyClass>", self.f)
            }
            TypeRef::Named { resolved: Some(abs), .. } => self.path(abs),
            TypeRef::Named { .. } => "()".into(),
        }
    }

    /// The type used for an in-parameter on the client side (borrowed when not Copy).
    fn param_type(&self, t: &TypeRef) -> String {
        if self.is_copy(t) {
            return self.rust_type(t);
        }
        match t {
            TypeRef::Builtin(Builtin::String, _) => "&str".into(),
            TypeRef::Builtin(Builtin::ObjectProxy, _) => format!("Option<&{}::ObjectPrx>", self.f),
            TypeRef::Builtin(Builtin::Object | Builtin::Value, _) => format!("Option<&{}::AnyClass>", self.f),
            TypeRef::Named { proxy: false, resolved: Some(abs), .. } if self.is_class(abs) => {
                format!("Option<&{}::Class<{}>>", self.f, self.path(abs))
            }
            TypeRef::Named { proxy: false, resolved: Some(abs), .. } if self.is_interface(abs) => {
                format!("Option<&{}::AnyClass>", self.f)
            }
            TypeRef::Named { proxy: true, resolved: Some(abs), .. }
                if self.is_class(abs) && !self.class_has_proxy(abs) =>
            {
                format!("Option<&{}::ObjectPrx>", self.f)
            }
            TypeRef::Named { proxy: true, resolved: Some(abs), .. } => format!("Option<&{}Prx>", self.path(abs)),
            _ => match self.resolved(t).map(|(d, _)| &d.kind) {
                Some(DefKind::Sequence { elem }) if !self.is_byte_seq_bytes(t) => {
                    format!("&[{}]", self.rust_type(elem))
                }
                _ => format!("&{}", self.rust_type(t)),
            },
        }
    }

    fn is_byte_seq_bytes(&self, t: &TypeRef) -> bool {
        match self.resolved(t) {
            Some((d, _)) => match &d.kind {
                DefKind::Sequence { elem: TypeRef::Builtin(Builtin::Byte, _) } => {
                    !d.metadata.iter().any(|m| m == "rust:vec")
                }
                _ => false,
            },
            None => false,
        }
    }

    /// Expression that encodes the in-parameter `v` (as typed by `param_type`).
    fn encode_param(&self, t: &TypeRef, v: &str) -> String {
        if self.is_class_type(t) {
            return format!("enc.write_class({v})");
        }
        match t {
            TypeRef::Builtin(Builtin::ObjectProxy, _) | TypeRef::Named { proxy: true, .. } => {
                format!("{}::ObjectPrx::encode_nullable({v}.map(|p| {}::Proxy::as_object(p)), enc)", self.f, self.f)
            }
            _ => format!("{v}.encode(enc)"),
        }
    }

    // ---- optionals

    fn write_optional(&self, tag: i32, t: &TypeRef, v: &str, by_ref: bool) -> String {
        let (fmt, kind) = self.opt_kind(t);
        let f = &self.f;
        // The body refers to the present value as `__v` (a reference for borrowed types).
        let _ = by_ref;
        let value = "__v";
        let body = match kind {
            OptKind::Plain if fmt == "Class" => format!("enc.write_class(Some({value}));"),
            OptKind::Plain => format!("{value}.encode(enc);"),
            OptKind::FixedStruct(n) => format!("enc.write_size({n}); {value}.encode(enc);"),
            OptKind::FixedSeq(n) => format!(
                "let __n = {value}.len(); enc.write_size(__n * {n} + if __n < 255 {{ 1 }} else {{ 5 }}); {value}.encode(enc);"
            ),
            OptKind::FSize => match t {
                TypeRef::Builtin(Builtin::ObjectProxy, _) | TypeRef::Named { proxy: true, .. } => format!(
                    "let __p = enc.start_fsize(); {f}::ObjectPrx::encode_nullable(Some({f}::Proxy::as_object({value})), enc); enc.end_fsize(__p);"
                ),
                _ => format!("let __p = enc.start_fsize(); {value}.encode(enc); enc.end_fsize(__p);"),
            },
        };
        format!("if let Some(__v) = {v} {{ if enc.write_optional_tag({tag}, {f}::encoding::OptionalFormat::{fmt}) {{ let _ = &__v; {body} }} }}")
    }

    fn read_optional(&self, tag: i32, t: &TypeRef) -> String {
        let (fmt, kind) = self.opt_kind(t);
        let f = &self.f;
        let skip = match kind {
            OptKind::Plain => "",
            OptKind::FixedStruct(_) | OptKind::FixedSeq(_) => "dec.read_size()?;",
            OptKind::FSize => "dec.read_fsize()?;",
        };
        let ty = match t {
            TypeRef::Builtin(Builtin::ObjectProxy, _) | TypeRef::Named { proxy: true, .. } => self.rust_type(t),
            _ => self.rust_type(t),
        };
        let read = match t {
            TypeRef::Builtin(Builtin::ObjectProxy, _) | TypeRef::Named { proxy: true, .. } => {
                format!("<{ty} as {f}::encoding::Decode>::decode(dec)?")
            }
            _ if fmt == "Class" => format!("<{ty} as {f}::encoding::Decode>::decode(dec)?"),
            _ => format!("Some(<{ty} as {f}::encoding::Decode>::decode(dec)?)"),
        };
        format!(
            "if dec.read_optional({tag}, {f}::encoding::OptionalFormat::{fmt})? {{ {skip} {read} }} else {{ None }}"
        )
    }

    fn member_type(&self, m: &Member) -> String {
        let t = self.rust_type(&m.ty);
        if m.tag.is_some() && !t.starts_with("Option<") {
            format!("Option<{t}>")
        } else {
            t
        }
    }

    fn const_expr(&self, ty: &TypeRef, v: &ConstValue) -> String {
        let rt = self.rust_type(ty);
        match v {
            ConstValue::Int(i) => match ty {
                TypeRef::Builtin(Builtin::Float, _) | TypeRef::Builtin(Builtin::Double, _) => format!("{i}.0 as {rt}"),
                _ => format!("{i}{rt}").replace("i128", ""),
            },
            ConstValue::Float(x) => {
                let s = format!("{x:?}");
                format!("{s}{rt}")
            }
            ConstValue::Str(s) => match ty {
                TypeRef::Builtin(Builtin::String, _) => format!("{s:?}"),
                _ => format!("{s:?}"),
            },
            ConstValue::Bool(b) => b.to_string(),
            ConstValue::Name(n, _) => {
                // An enumerator (possibly qualified) or another constant.
                let scope = self.abs("x");
                let scope = scope.trim_end_matches("::x");
                let mut s = scope.to_string();
                loop {
                    let cand = format!("{s}::{n}");
                    if let Some(sym) = self.unit.symbols.get(&cand) {
                        if sym.kind == SymKind::Enumerator {
                            let enum_def = self.unit.def(&sym.path);
                            let enum_abs = self.enum_abs(&sym.path, &enum_def.name);
                            let en = n.rsplit("::").next().unwrap_or(n);
                            return format!("{}::{}", self.path(&enum_abs), ident(&camel(en)));
                        }
                        return self.path(&cand);
                    }
                    if s.is_empty() {
                        return "Default::default()".into();
                    }
                    s.truncate(s.rfind("::").unwrap_or(0));
                }
            }
        }
    }

    fn enum_abs(&self, path: &[usize], name: &str) -> String {
        let mut s = String::new();
        let mut defs = &self.unit.defs;
        for &i in &path[..path.len() - 1] {
            let d = &defs[i];
            s.push_str("::");
            s.push_str(&d.name);
            if let DefKind::Module(inner) = &d.kind {
                defs = inner;
            }
        }
        format!("{s}::{name}")
    }

    // ---- definitions

    fn gen_struct(&mut self, d: &Definition, abs: &str, members: &[Member]) {
        let f = self.f.clone();
        let name = ident(&d.name);
        let keyable = members.iter().all(|m| self.keyable(&m.ty, 0));
        let layout = self.struct_layout(members, 0);
        let has_defaults = members.iter().any(|m| m.default.is_some());
        self.doc(&d.doc);
        let mut derives = vec!["Debug", "Clone", "PartialEq"];
        if keyable {
            derives.extend(["Eq", "Hash", "PartialOrd", "Ord"]);
        }
        if layout.is_some() {
            derives.push("Copy");
        }
        if !has_defaults {
            derives.push("Default");
        }
        self.line(&format!("#[derive({})]", derives.join(", ")));
        if layout.is_some() {
            self.line("#[repr(C)]");
        }
        self.line(&format!("pub struct {name} {{"));
        self.depth += 1;
        for m in members {
            self.doc(&m.doc);
            let t = self.member_type(m);
            self.line(&format!("pub {}: {t},", ident(&snake(&m.name))));
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        if has_defaults {
            self.line(&format!("impl Default for {name} {{"));
            self.line("    fn default() -> Self {");
            self.line("        Self {");
            for m in members {
                let v = self.member_default(m);
                self.line(&format!("            {}: {v},", ident(&snake(&m.name))));
            }
            self.line("        }");
            self.line("    }");
            self.line("}");
            self.line("");
        }
        let _ = abs;
        let min: usize = members.iter().map(|m| self.min_size(&m.ty, 0)).sum::<usize>().max(1);
        self.line(&format!("impl {f}::encoding::Encode for {name} {{"));
        self.line("    #[inline]");
        self.line(&format!("    fn encode(&self, enc: &mut {f}::encoding::Encoder) {{"));
        for m in members {
            self.line(&format!("        self.{}.encode(enc);", ident(&snake(&m.name))));
        }
        self.line("    }");
        self.line(&format!("    fn encode_seq(items: &[Self], enc: &mut {f}::encoding::Encoder) {{"));
        if layout.is_some() {
            self.line(&format!("        {f}::encoding::encode_seq_bulk(items, enc);"));
        } else {
            // Room for the smallest encoding of every element, reserved once.
            self.line(&format!("        enc.reserve(5 + items.len() * {min});"));
            self.line("        enc.write_size(items.len());");
            self.line("        for item in items {");
            self.line("            item.encode(enc);");
            self.line("        }");
        }
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {f}::encoding::Decode for {name} {{"));
        self.line(&format!("    const MIN_WIRE_SIZE: usize = {min};"));
        self.line("    #[inline]");
        self.line(&format!("    fn decode(dec: &mut {f}::encoding::Decoder) -> {f}::encoding::Result<Self> {{"));
        self.line("        Ok(Self {");
        for m in members {
            self.line(&format!("            {}: {f}::encoding::Decode::decode(dec)?,", ident(&snake(&m.name))));
        }
        self.line("        })");
        self.line("    }");
        if layout.is_some() {
            self.line(&format!(
                "    fn decode_seq(dec: &mut {f}::encoding::Decoder) -> {f}::encoding::Result<Vec<Self>> {{"
            ));
            self.line(&format!("        {f}::encoding::decode_seq_bulk(dec)"));
            self.line("    }");
        }
        self.line("}");
        self.line("");
        if layout.is_some() {
            self.line("// SAFETY: #[repr(C)], fields in wire order, no padding (checked by the generator), and");
            self.line("// every bit pattern of every field is valid.");
            self.line(&format!("unsafe impl {f}::encoding::WireLayout for {name} {{}}"));
            self.line("");
        }
    }

    fn gen_enum(&mut self, d: &Definition, abs: &str, enumerators: &[Enumerator]) {
        let f = self.f.clone();
        let name = ident(&d.name);
        let max = enumerators.iter().map(|e| e.value).max().unwrap_or(0);
        self.doc(&d.doc);
        self.line("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]");
        self.line("#[repr(i32)]");
        self.line(&format!("pub enum {name} {{"));
        self.depth += 1;
        for (i, e) in enumerators.iter().enumerate() {
            self.doc(&e.doc);
            if i == 0 {
                self.line("#[default]");
            }
            self.line(&format!("{} = {},", ident(&camel(&e.name)), e.value));
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        self.line(&format!("impl {name} {{"));
        self.line("    /// The largest enumerator value (it decides the 1.0 encoding's width).");
        self.line(&format!("    pub const MAX_VALUE: i32 = {max};"));
        self.line("    /// The Slice type id.");
        self.line(&format!("    pub const TYPE_ID: &'static str = {abs:?};"));
        self.line("    /// The enumerator with this value.");
        self.line("    pub fn from_i32(v: i32) -> Option<Self> {");
        self.line("        match v {");
        for e in enumerators {
            self.line(&format!("            {} => Some(Self::{}),", e.value, ident(&camel(&e.name))));
        }
        self.line("            _ => None,");
        self.line("        }");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {f}::encoding::Encode for {name} {{"));
        self.line(&format!("    fn encode(&self, enc: &mut {f}::encoding::Encoder) {{"));
        self.line("        enc.write_enum(*self as i32, Self::MAX_VALUE);");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {f}::encoding::Decode for {name} {{"));
        self.line("    const MIN_WIRE_SIZE: usize = 1;");
        self.line(&format!("    fn decode(dec: &mut {f}::encoding::Decoder) -> {f}::encoding::Result<Self> {{"));
        self.line("        let v = dec.read_enum(Self::MAX_VALUE)?;");
        self.line(&format!(
            "        Self::from_i32(v).ok_or({f}::encoding::DecodeError::UnknownEnumerator {{ type_id: Self::TYPE_ID, value: v }})"
        ));
        self.line("    }");
        self.line("}");
        self.line("");
    }

    fn gen_sequence(&mut self, d: &Definition, elem: &TypeRef) {
        self.doc(&d.doc);
        let name = ident(&d.name);
        let is_bytes =
            matches!(elem, TypeRef::Builtin(Builtin::Byte, _)) && !d.metadata.iter().any(|m| m == "rust:vec");
        if is_bytes {
            self.line(&format!("pub type {name} = {}::bytes::Bytes;", self.f));
        } else {
            let t = self.rust_type(elem);
            self.line(&format!("pub type {name} = Vec<{t}>;"));
        }
        self.line("");
    }

    fn gen_dictionary(&mut self, d: &Definition, key: &TypeRef, value: &TypeRef) {
        self.doc(&d.doc);
        let name = ident(&d.name);
        let map = if d.metadata.iter().any(|m| m == "rust:btreemap") { "BTreeMap" } else { "HashMap" };
        let k = self.rust_type(key);
        let v = self.rust_type(value);
        self.line(&format!("pub type {name} = std::collections::{map}<{k}, {v}>;"));
        self.line("");
    }

    fn gen_const(&mut self, d: &Definition, ty: &TypeRef, value: &ConstValue) {
        self.doc(&d.doc);
        let name = ident(&snake(&d.name).to_uppercase());
        let t = match ty {
            TypeRef::Builtin(Builtin::String, _) => "&str".to_string(),
            _ => self.rust_type(ty),
        };
        let v = self.const_expr(ty, value);
        self.line(&format!("pub const {name}: {t} = {v};"));
        self.line("");
    }

    /// `(type id, members)` from most derived to base.
    fn exception_chain(&self, abs: &str) -> Vec<(String, &'a [Member])> {
        let mut out = Vec::new();
        let mut cur = Some(abs.to_string());
        while let Some(a) = cur {
            if out.len() > 64 {
                break;
            }
            let Some((_, d)) = self.unit.lookup(&a) else { break };
            match &d.kind {
                DefKind::Exception { base, members } => {
                    out.push((a.clone(), members.as_slice()));
                    cur = base.as_ref().and_then(|(_, _, r)| r.clone());
                }
                _ => break,
            }
        }
        out
    }

    fn write_members_code(&self, members: &[Member], prefix: &str) -> Vec<String> {
        let mut lines = Vec::new();
        for m in members.iter().filter(|m| m.tag.is_none()) {
            lines.push(format!("{prefix}{}.encode(enc);", ident(&snake(&m.name))));
        }
        let mut opts: Vec<&Member> = members.iter().filter(|m| m.tag.is_some()).collect();
        opts.sort_by_key(|m| m.tag);
        for m in opts {
            let v = format!("&{prefix}{}", ident(&snake(&m.name)));
            lines.push(self.write_optional(m.tag.unwrap_or(0), &m.ty, &v, true));
        }
        lines
    }

    fn read_members_code(&self, members: &[Member]) -> Vec<String> {
        let f = &self.f;
        let mut lines = Vec::new();
        for m in members.iter().filter(|m| m.tag.is_none()) {
            lines.push(format!("let {} = {f}::encoding::Decode::decode(dec)?;", ident(&snake(&m.name))));
        }
        let mut opts: Vec<&Member> = members.iter().filter(|m| m.tag.is_some()).collect();
        opts.sort_by_key(|m| m.tag);
        for m in opts {
            lines.push(format!("let {} = {};", ident(&snake(&m.name)), self.read_optional(m.tag.unwrap_or(0), &m.ty)));
        }
        lines
    }

    fn gen_exception(&mut self, d: &Definition, abs: &str) {
        let f = self.f.clone();
        let name = ident(&d.name);
        let chain = self.exception_chain(abs);
        let mut all: Vec<&Member> = Vec::new();
        for (_, ms) in chain.iter().rev() {
            all.extend(ms.iter());
        }
        self.doc(&d.doc);
        let has_defaults = all.iter().any(|m| m.default.is_some());
        let preserves = self.preserves_slices(abs);
        self.line(if has_defaults {
            "#[derive(Debug, Clone, PartialEq)]"
        } else {
            "#[derive(Debug, Clone, PartialEq, Default)]"
        });
        self.line(&format!("pub struct {name} {{"));
        for m in &all {
            self.depth += 1;
            self.doc(&m.doc);
            self.depth -= 1;
            let t = self.member_type(m);
            self.line(&format!("    pub {}: {t},", ident(&snake(&m.name))));
        }
        if preserves {
            self.line("    /// Slices of more derived exception types this program does not know, kept");
            self.line("    /// (`[\"preserve-slice\"]`) and written back when the exception is raised again.");
            self.line(&format!("    pub preserved_slices: Vec<{f}::encoding::SliceInfo>,"));
        }
        self.line("}");
        self.line("");
        if has_defaults {
            self.line(&format!("impl Default for {name} {{"));
            self.line("    fn default() -> Self {");
            self.line("        Self {");
            for m in &all {
                let v = self.member_default(m);
                self.line(&format!("            {}: {v},", ident(&snake(&m.name))));
            }
            if preserves {
                self.line("            preserved_slices: Vec::new(),");
            }
            self.line("        }");
            self.line("    }");
            self.line("}");
            self.line("");
        }
        self.line(&format!("impl {name} {{"));
        self.line("    /// The Slice type id.");
        self.line(&format!("    pub const TYPE_ID: &'static str = {abs:?};"));
        self.line("}");
        self.line("");
        self.line(&format!("impl std::fmt::Display for {name} {{"));
        self.line("    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {");
        self.line("        write!(f, \"{} {:?}\", Self::TYPE_ID, self)");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl std::error::Error for {name} {{}}"));
        self.line("");
        // (any member holds classes, a required one does): 1.0 announces and writes pending
        // values only for required ones, since it leaves optional members out.
        let uses = {
            let members: Vec<&Member> = chain.iter().flat_map(|(_, ms)| ms.iter()).collect();
            let any = members.iter().any(|m| self.uses_class(&m.ty, &mut HashSet::new()));
            let required =
                members.iter().filter(|m| m.tag.is_none()).any(|m| self.uses_class(&m.ty, &mut HashSet::new()));
            (any, required)
        };
        let uses_classes = uses.0;
        self.line(&format!("impl {f}::encoding::UserExceptionSlices for {name} {{"));
        self.line("    fn type_id(&self) -> &'static str {");
        self.line("        Self::TYPE_ID");
        self.line("    }");
        if uses.1 {
            self.line(&format!("    fn encode_exception(&self, enc: &mut {f}::encoding::Encoder) {{"));
            self.line("        enc.start_exception_with_classes(true);");
            self.line("        self.encode_slices(enc);");
            self.line("        enc.write_pending_values();");
            self.line("    }");
        }
        self.line(&format!("    fn encode_slices(&self, enc: &mut {f}::encoding::Encoder) {{"));
        if preserves {
            self.line("        enc.write_preserved_exception_slices(&self.preserved_slices);");
        }
        for (i, (tid, ms)) in chain.iter().enumerate() {
            let last = i + 1 == chain.len();
            let has_opt = ms.iter().any(|m| m.tag.is_some());
            self.line(&format!("        enc.start_exception_slice({tid:?}, {last}, {has_opt});"));
            for l in self.write_members_code(ms, "self.") {
                self.line(&format!("        {l}"));
            }
            self.line("        enc.end_exception_slice();");
        }
        self.line("    }");
        self.line(&format!("    fn decode_body(dec: &mut {f}::encoding::Decoder) -> {f}::encoding::Result<Self> {{"));
        if uses_classes {
            let factory = self.unit_factory();
            self.line(&format!("        dec.set_class_factory({factory});"));
        }
        for (i, (tid, ms)) in chain.iter().enumerate() {
            if i > 0 {
                self.line("        let __h = dec.start_exception_slice()?;");
                self.line(&format!("        if __h.type_id != {tid:?} {{"));
                self.line(&format!("            return Err({f}::encoding::DecodeError::Malformed(\"unexpected base exception slice\"));"));
                self.line("        }");
            }
            for l in self.read_members_code(ms) {
                self.line(&format!("        {l}"));
            }
            self.line("        dec.end_exception_slice()?;");
        }
        match Self::finish_classes(uses) {
            Some(finish) => self.line(&format!("        {finish}")),
            // Kept slices may hold class instances: end their decoding too.
            None if preserves => self.line("        dec.check_class_types()?;"),
            None => {}
        }
        let mut fields: Vec<String> = all.iter().map(|m| ident(&snake(&m.name))).collect();
        if preserves {
            fields.push("preserved_slices: dec.take_skipped_exception_slices()".into());
        }
        self.line(&format!("        Ok(Self {{ {} }})", fields.join(", ")));
        self.line("    }");
        self.line("}");
        self.line("");
    }

    /// The initial value of a member: its Slice default (inside `Some` for an optional one),
    /// or the type's default.
    fn member_default(&self, m: &Member) -> String {
        match &m.default {
            Some(v) => {
                let e = self.const_expr(&m.ty, v);
                let e = if matches!(m.ty, TypeRef::Builtin(Builtin::String, _)) { format!("{e}.into()") } else { e };
                if m.tag.is_some() {
                    format!("Some({e})")
                } else {
                    e
                }
            }
            None => "Default::default()".into(),
        }
    }

    fn gen_class(&mut self, d: &Definition, abs: &str) {
        let f = self.f.clone();
        let name = ident(&d.name);
        let DefKind::Class { base, compact_id, members, .. } = &d.kind else { return };
        let base = base.as_ref().and_then(|(_, _, b)| b.clone());
        let has_defaults = members.iter().any(|m| m.default.is_some());
        self.doc(&d.doc);
        self.line(&format!("/// Class `{abs}`: share instances as `{f}::Class<{name}>`."));
        self.line(if has_defaults {
            "#[derive(Debug, Clone, PartialEq)]"
        } else {
            "#[derive(Debug, Clone, PartialEq, Default)]"
        });
        self.line(&format!("pub struct {name} {{"));
        self.depth += 1;
        if let Some(b) = &base {
            self.line("/// The base class's part (also reachable through `Deref`).");
            let bp = self.path(b);
            self.line(&format!("pub base: {bp},"));
        }
        for m in members {
            self.doc(&m.doc);
            let t = self.member_type(m);
            self.line(&format!("pub {}: {t},", ident(&snake(&m.name))));
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        if has_defaults {
            self.line(&format!("impl Default for {name} {{"));
            self.line("    fn default() -> Self {");
            self.line("        Self {");
            if base.is_some() {
                self.line("            base: Default::default(),");
            }
            for m in members {
                let v = match &m.default {
                    Some(v) => {
                        let e = self.const_expr(&m.ty, v);
                        let e = if matches!(m.ty, TypeRef::Builtin(Builtin::String, _)) {
                            format!("{e}.into()")
                        } else {
                            e
                        };
                        if m.tag.is_some() {
                            format!("Some({e})")
                        } else {
                            e
                        }
                    }
                    None => "Default::default()".into(),
                };
                self.line(&format!("            {}: {v},", ident(&snake(&m.name))));
            }
            self.line("        }");
            self.line("    }");
            self.line("}");
            self.line("");
        }
        self.line(&format!("impl {name} {{"));
        self.line("    /// The Slice type id.");
        self.line(&format!("    pub const TYPE_ID: &'static str = {abs:?};"));
        self.line("    #[doc(hidden)]");
        self.line("    pub fn __has_part(t: std::any::TypeId) -> bool {");
        match &base {
            Some(b) => {
                let bp = self.path(b);
                self.line(&format!("        t == std::any::TypeId::of::<Self>() || {bp}::__has_part(t)"));
            }
            None => self.line("        t == std::any::TypeId::of::<Self>()"),
        }
        self.line("    }");
        if let Some(c) = compact_id {
            self.line("    /// The compact type id.");
            self.line(&format!("    pub const COMPACT_ID: i32 = {c};"));
        }
        self.line("}");
        self.line("");
        if let Some(b) = &base {
            let bp = self.path(b);
            self.line(&format!("impl std::ops::Deref for {name} {{"));
            self.line(&format!("    type Target = {bp};"));
            self.line(&format!("    fn deref(&self) -> &{bp} {{"));
            self.line("        &self.base");
            self.line("    }");
            self.line("}");
            self.line("");
            self.line(&format!("impl std::ops::DerefMut for {name} {{"));
            self.line(&format!("    fn deref_mut(&mut self) -> &mut {bp} {{"));
            self.line("        &mut self.base");
            self.line("    }");
            self.line("}");
            self.line("");
        }
        let any = "dyn std::any::Any";
        self.line(&format!("impl {f}::encoding::ClassValue for {name} {{"));
        self.line("    fn ice_id(&self) -> &'static str {");
        self.line("        Self::TYPE_ID");
        self.line("    }");
        let (up, up_mut) =
            if base.is_some() { ("self.base.part(t)", "self.base.part_mut(t)") } else { ("None", "None") };
        self.line("    fn part_checker(&self) -> fn(std::any::TypeId) -> bool {");
        self.line("        Self::__has_part");
        self.line("    }");
        if self.preserves_slices(abs) {
            self.line("    fn preserves_slices(&self) -> bool {");
            self.line("        true");
            self.line("    }");
        }
        self.line(&format!("    fn part(&self, t: std::any::TypeId) -> Option<&{any}> {{"));
        self.line(&format!(
            "        if t == std::any::TypeId::of::<Self>() {{ Some(self as &{any}) }} else {{ {up} }}"
        ));
        self.line("    }");
        self.line(&format!("    fn part_mut(&mut self, t: std::any::TypeId) -> Option<&mut {any}> {{"));
        self.line(&format!(
            "        if t == std::any::TypeId::of::<Self>() {{ Some(self as &mut {any}) }} else {{ {up_mut} }}"
        ));
        self.line("    }");
        let compact = compact_id.map(|c| format!("Some({c})")).unwrap_or_else(|| "None".into());
        let has_opt = members.iter().any(|m| m.tag.is_some());
        self.line(&format!("    fn encode_slices(&self, enc: &mut {f}::encoding::Encoder) {{"));
        self.line(&format!("        enc.start_class_slice(Self::TYPE_ID, {compact}, {}, {has_opt});", base.is_none()));
        for l in self.write_members_code(members, "self.") {
            self.line(&format!("        {l}"));
        }
        self.line("        enc.end_class_slice();");
        if base.is_some() {
            self.line("        self.base.encode_slices(enc);");
        }
        self.line("    }");
        self.line(&format!(
            "    fn decode_slices(&mut self, dec: &mut {f}::encoding::Decoder) -> {f}::encoding::Result<()> {{"
        ));
        self.line("        dec.start_class_slice()?;");
        for m in members.iter().filter(|m| m.tag.is_none()) {
            self.line(&format!("        self.{} = {f}::encoding::Decode::decode(dec)?;", ident(&snake(&m.name))));
        }
        let mut opts: Vec<&Member> = members.iter().filter(|m| m.tag.is_some()).collect();
        opts.sort_by_key(|m| m.tag);
        for m in opts {
            self.line(&format!(
                "        self.{} = {};",
                ident(&snake(&m.name)),
                self.read_optional(m.tag.unwrap_or(0), &m.ty)
            ));
        }
        self.line("        dec.end_class_slice()?;");
        if base.is_some() {
            self.line("        self.base.decode_slices(dec)");
        } else {
            self.line("        Ok(())");
        }
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {f}::encoding::ClassType for {name} {{"));
        self.line(&format!("    const TYPE_ID: &'static str = {abs:?};"));
        let factory = self.unit_factory();
        self.line(&format!("    const FACTORY: {f}::encoding::ClassFactory = {factory};"));
        self.line("}");
        self.line("");
        self.classes.push((abs.to_string(), *compact_id));
    }

    /// True when the class or exception at `abs`, or one of its bases, satisfies `test`.
    fn any_in_base_chain(&self, abs: &str, test: impl Fn(&Definition) -> bool) -> bool {
        let mut at = abs.to_string();
        for _ in 0..256 {
            let Some((_, d)) = self.unit.lookup(&at) else { return false };
            if test(d) {
                return true;
            }
            match &d.kind {
                DefKind::Class { base: Some((_, _, Some(b))), .. }
                | DefKind::Exception { base: Some((_, _, Some(b))), .. } => at = b.clone(),
                _ => return false,
            }
        }
        false
    }

    /// The class or exception, or one of its bases, is marked `["preserve-slice"]`.
    fn preserves_slices(&self, abs: &str) -> bool {
        self.any_in_base_chain(abs, |d| d.metadata.iter().any(|m| m == "preserve-slice"))
    }

    /// A class with operations, or implementing interfaces, or deriving from such a class: it
    /// has a proxy type and a servant trait (`<Name>Disp`), as in Ice 3.7.
    fn class_has_proxy(&self, abs: &str) -> bool {
        self.any_in_base_chain(abs, |d| {
            matches!(&d.kind, DefKind::Class { ops, implements, forward: false, .. } if !ops.is_empty() || !implements.is_empty())
        })
    }

    fn is_class(&self, abs: &str) -> bool {
        matches!(self.unit.lookup(abs).map(|(_, d)| &d.kind), Some(DefKind::Class { .. }))
    }

    /// A class (or `Value`/`Object`, or an interface) passed by value.
    fn is_class_type(&self, t: &TypeRef) -> bool {
        match t {
            TypeRef::Builtin(Builtin::Object | Builtin::Value, _) => true,
            TypeRef::Named { proxy: false, resolved: Some(abs), .. } => self.is_class(abs) || self.is_interface(abs),
            _ => false,
        }
    }

    /// The path of the class factory of the compilation unit, as seen from here.
    fn unit_factory(&self) -> String {
        let up = "super::".repeat(self.module.len());
        format!(
            "{}::encoding::ClassFactory {{ create: {up}__floe_classes::create, compact: {up}__floe_classes::compact }}",
            self.f
        )
    }

    fn is_interface(&self, abs: &str) -> bool {
        matches!(self.unit.lookup(abs).map(|(_, d)| &d.kind), Some(DefKind::Interface { .. }))
    }

    /// The direct supertypes whose operations an interface (or class with operations)
    /// inherits: an interface's bases; a class's base class and the interfaces it implements.
    fn supertypes(&self, abs: &str) -> Vec<String> {
        match self.unit.lookup(abs).map(|(_, d)| &d.kind) {
            Some(DefKind::Interface { bases, .. }) => bases.iter().filter_map(|(_, _, b)| b.clone()).collect(),
            Some(DefKind::Class { base, implements, .. }) => {
                base.iter().chain(implements.iter()).filter_map(|(_, _, b)| b.clone()).collect()
            }
            _ => vec![],
        }
    }

    /// The path of the servant trait of an interface (`Name`) or class (`NameDisp`).
    fn servant_trait(&self, abs: &str) -> String {
        if self.is_class(abs) {
            format!("{}Disp", self.path(abs))
        } else {
            self.path(abs)
        }
    }

    /// Every operation of an interface and its bases: `(interface abs, op)`, own first.
    fn interface_ops(&self, abs: &str) -> Vec<(String, &'a Operation)> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut stack = vec![abs.to_string()];
        while let Some(a) = stack.pop() {
            if !seen.insert(a.clone()) || seen.len() > 256 {
                continue;
            }
            if let Some((_, d)) = self.unit.lookup(&a) {
                if let DefKind::Interface { ops, .. } | DefKind::Class { ops, .. } = &d.kind {
                    for o in ops {
                        out.push((a.clone(), o));
                    }
                    for b in self.supertypes(&a).into_iter().rev() {
                        stack.push(b);
                    }
                }
            }
        }
        out
    }

    fn interface_ids(&self, abs: &str) -> Vec<String> {
        let mut ids = BTreeSet::new();
        ids.insert("::Ice::Object".to_string());
        for (a, _) in self.interface_ops(abs) {
            ids.insert(a);
        }
        let mut stack = vec![abs.to_string()];
        while let Some(a) = stack.pop() {
            if !ids.insert(a.clone()) && a != abs {
                continue;
            }
            stack.extend(self.supertypes(&a));
            if ids.len() > 512 {
                break;
            }
        }
        ids.into_iter().collect()
    }

    /// Exceptions an operation may raise: the declared ones and their known subtypes.
    fn op_exceptions(&self, o: &Operation) -> Vec<String> {
        let declared: Vec<String> = o.throws.iter().filter_map(|(_, _, r)| r.clone()).collect();
        let mut out = BTreeSet::new();
        for (abs, sym) in &self.unit.symbols {
            if sym.kind != SymKind::Exception || sym.local {
                continue;
            }
            let chain = self.exception_chain(abs);
            if chain.iter().any(|(id, _)| declared.contains(id)) {
                out.insert(abs.clone());
            }
        }
        out.into_iter().collect()
    }

    /// The exceptions of `op_exceptions` with their variant names in the operation's error
    /// enum: the exception's own name, or its whole scoped name run together (`TestModA`) when
    /// two of them share a name.
    fn error_variants(&self, o: &Operation) -> Vec<(String, String)> {
        let all = self.op_exceptions(o);
        let last = |e: &str| e.rsplit("::").next().unwrap_or(e).to_string();
        all.iter()
            .map(|e| {
                let short = last(e);
                let clash = all.iter().filter(|other| last(other) == short).count() > 1;
                let variant = if clash { e.split("::").map(camel).collect::<String>() } else { short };
                (e.clone(), ident(&variant))
            })
            .collect()
    }

    fn op_mode(o: &Operation) -> &'static str {
        if o.metadata.iter().any(|m| m == "nonmutating") {
            "Nonmutating"
        } else if o.idempotent {
            "Idempotent"
        } else {
            "Normal"
        }
    }

    /// The format of an operation's classes and exceptions: its own `format:` metadata, else
    /// its interface's, else compact.
    fn op_format(&self, o: &Operation, iface: &Definition) -> &'static str {
        let format = |md: &[String]| {
            md.iter().find_map(|m| match m.as_str() {
                "format:sliced" => Some("Sliced"),
                "format:compact" | "format:default" => Some("Compact"),
                _ => None,
            })
        };
        format(&o.metadata).or_else(|| format(&iface.metadata)).unwrap_or("Compact")
    }

    /// The Rust type of an operation's results and the names in order (return first, then outs).
    fn result_type(&self, o: &Operation) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &o.ret {
            let t = self.rust_type(r);
            parts.push(if o.ret_tag.is_some() && !t.starts_with("Option<") { format!("Option<{t}>") } else { t });
        }
        for p in o.params.iter().filter(|p| p.out) {
            let t = self.rust_type(&p.ty);
            parts.push(if p.tag.is_some() && !t.starts_with("Option<") { format!("Option<{t}>") } else { t });
        }
        match parts.len() {
            0 => "()".into(),
            1 => parts.remove(0),
            _ => format!("({})", parts.join(", ")),
        }
    }

    fn gen_interface(&mut self, d: &Definition, abs: &str) {
        let f = self.f.clone();
        let name = ident(&d.name);
        let prx = format!("{name}Prx");
        let ops = self.interface_ops(abs);
        let ids = self.interface_ids(abs);

        // Error enums for operations with throws (own operations only; bases have theirs).
        for (owner, o) in &ops {
            if owner != abs || o.throws.is_empty() {
                continue;
            }
            let ename = format!("{name}{}Error", camel(&o.name));
            self.line(&format!("/// The user exceptions `{}::{}` may raise.", d.name, o.name));
            self.line("#[derive(Debug, Clone, PartialEq)]");
            self.line(&format!("pub enum {ename} {{"));
            for (e, variant) in self.error_variants(o) {
                let p = self.path(&e);
                self.line(&format!("    /// `{e}`"));
                self.line(&format!("    {variant}({p}),"));
            }
            self.line("}");
            self.line("");
            self.line(&format!("impl From<{ename}> for {f}::Error {{"));
            self.line("    /// The exception as a servant raises it (to relay it, for instance).");
            self.line(&format!("    fn from(e: {ename}) -> Self {{"));
            self.line("        match e {");
            for (_, variant) in self.error_variants(o) {
                self.line(&format!("            {ename}::{variant}(x) => {f}::Error::user(x),"));
            }
            self.line("        }");
            self.line("    }");
            self.line("}");
            self.line("");
            self.line(&format!("impl std::fmt::Display for {ename} {{"));
            self.line("    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {");
            self.line("        write!(f, \"{self:?}\")");
            self.line("    }");
            self.line("}");
            self.line("");
        }

        // Proxy.
        self.doc(&d.doc);
        self.line(&format!("/// Proxy for `{abs}`."));
        self.line("#[derive(Clone, Debug, PartialEq)]");
        self.line(&format!("pub struct {prx}({f}::ObjectPrx);"));
        self.line("");
        self.line(&format!("impl {f}::Proxy for {prx} {{"));
        self.line(&format!("    const TYPE_ID: &'static str = {abs:?};"));
        self.line(&format!("    fn from_object(proxy: {f}::ObjectPrx) -> Self {{"));
        self.line("        Self(proxy)");
        self.line("    }");
        self.line(&format!("    fn as_object(&self) -> &{f}::ObjectPrx {{"));
        self.line("        &self.0");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl std::fmt::Display for {prx} {{"));
        self.line("    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {");
        self.line("        std::fmt::Display::fmt(&self.0, f)");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {prx} {{"));
        self.depth += 1;
        for (owner, o) in &ops {
            self.gen_proxy_op(d, owner, o);
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        self.gen_batch_writer(d, abs, &prx, &ops);

        // Servant trait.
        let bases: Vec<String> = self
            .supertypes(abs)
            .into_iter()
            .filter(|b| !self.is_class(b) || self.class_has_proxy(b))
            .map(|b| self.servant_trait(&b))
            .collect();
        // A class's servant trait is `<Name>Disp`, leaving `<Name>` to the class's data.
        let name = if self.is_class(abs) { format!("{name}Disp") } else { name };
        self.doc(&d.doc);
        self.line(&format!("/// Servant trait for `{abs}`: implement it and serve it with [`{name}Server`]."));
        let supers = if bases.is_empty() { String::new() } else { format!("{} + ", bases.join(" + ")) };
        self.line(&format!("pub trait {name}: {supers}Send + Sync + 'static {{"));
        self.depth += 1;
        for (owner, o) in &ops {
            if owner != abs {
                continue;
            }
            self.doc(&o.doc);
            let mut params = vec!["&self".to_string()];
            for p in o.params.iter().filter(|p| !p.out) {
                let t = self.rust_type(&p.ty);
                let t = if p.tag.is_some() && !t.starts_with("Option<") { format!("Option<{t}>") } else { t };
                params.push(format!("{}: {t}", ident(&snake(&p.name))));
            }
            params.push(format!("current: &{f}::Current"));
            let rt = self.result_type(o);
            self.line(&format!(
                "fn {}({}) -> impl std::future::Future<Output = {f}::Result<{rt}>> + Send;",
                ident(&snake(&o.name)),
                params.join(", ")
            ));
        }
        self.depth -= 1;
        self.line("}");
        self.line("");

        // Dispatcher.
        self.line(&format!("/// Dispatches requests for `{abs}` to a [`{name}`] servant."));
        self.line(&format!("pub struct {name}Server<T: {name}>(pub std::sync::Arc<T>);"));
        self.line("");
        self.line(&format!("impl<T: {name}> {name}Server<T> {{"));
        self.line("    /// The Slice type ids of the interface and all its bases, sorted.");
        let ids_lit = ids.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(", ");
        self.line(&format!("    pub const IDS: &'static [&'static str] = &[{ids_lit}];"));
        self.line("    /// Wraps a servant, ready for `ObjectAdapter::add`.");
        self.line(&format!("    pub fn new(servant: T) -> std::sync::Arc<dyn {f}::Dispatcher> {{"));
        self.line("        std::sync::Arc::new(Self(std::sync::Arc::new(servant)))");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl<T: {name}> {f}::Dispatcher for {name}Server<T> {{"));
        self.line(&format!(
            "    fn dispatch(&self, #[allow(unused_mut)] mut request: {f}::IncomingRequest) -> {f}::DispatchFuture {{"
        ));
        self.line("        let servant = self.0.clone();");
        // The future is built in its heap slot, allocated first, instead of being moved there.
        self.line(&format!("        {f}::codegen::future_in({f}::codegen::future_slot(), async move {{"));
        // Slice reserves the `ice` prefix, so no operation of the interface is a built-in
        // one: those are looked for only when no operation matches.
        self.line("            match request.current.operation.as_str() {");
        self.depth += 4;
        for (owner, o) in &ops {
            let odef = self.unit.lookup(owner).map(|(_, d)| d).unwrap_or(d);
            self.gen_dispatch_arm(odef, o);
        }
        self.depth -= 4;
        self.line(&format!(
            "                _ => match {f}::codegen::dispatch_builtin(&request, Self::IDS, {abs:?}) {{"
        ));
        self.line("                    Some(r) => r,");
        self.line("                    None => request.current.operation_not_exist(),");
        self.line("                },");
        self.line("            }");
        self.line("        })");
        self.line("    }");
        self.line("}");
        self.line("");
    }

    /// The statements that encode an operation's in-parameters into `enc`: required ones in
    /// order, then optionals by tag, then the pending class instances when needed.
    fn param_writes(&self, iface: &Definition, o: &Operation) -> Vec<String> {
        let f = &self.f;
        let mut writes = Vec::new();
        for p in o.params.iter().filter(|p| !p.out && p.tag.is_none()) {
            writes.push(format!("{};", self.encode_param(&p.ty, &ident(&snake(&p.name)))));
        }
        let mut opts: Vec<&Param> = o.params.iter().filter(|p| !p.out && p.tag.is_some()).collect();
        opts.sort_by_key(|p| p.tag);
        for p in opts {
            writes.push(self.write_optional(p.tag.unwrap_or(0), &p.ty, &ident(&snake(&p.name)), !self.is_copy(&p.ty)));
        }
        let (any, required) = self.op_sends_classes(o);
        if any && self.op_format(o, iface) == "Sliced" {
            writes.insert(0, format!("enc.set_format({f}::encoding::FormatType::Sliced);"));
        }
        if required {
            writes.push("enc.write_pending_values();".into());
        }
        writes
    }

    /// How a sequence of type `t` that ends the parameters or results is sent from its own
    /// memory, if it can be.
    fn separate_tail(&self, t: &TypeRef) -> Option<SeparateTail> {
        match self.resolved(t).map(|(d, _)| &d.kind) {
            _ if self.is_byte_seq_bytes(t) => Some(SeparateTail::Bytes),
            Some(DefKind::Sequence { elem }) if self.layout(elem, 0).is_some() => Some(SeparateTail::WireLayout),
            _ => None,
        }
    }

    /// The last in-parameter when it ends the encoded parameters (no optional in-parameters
    /// and no class instances follow it) and can be sent from its own memory.
    fn tail_param<'o>(&self, o: &'o Operation) -> Option<(&'o Param, SeparateTail)> {
        let ins: Vec<&Param> = o.params.iter().filter(|p| !p.out).collect();
        let last = *ins.last()?;
        let plain = ins.iter().all(|p| p.tag.is_none()) && !self.op_sends_classes(o).0;
        if !plain {
            return None;
        }
        self.separate_tail(&last.ty).map(|kind| (last, kind))
    }

    /// The in-parameters of an operation as a proxy method declares them (after `&self`).
    fn proxy_params(&self, o: &Operation) -> Vec<String> {
        let mut params = Vec::new();
        for p in o.params.iter().filter(|p| !p.out) {
            let t = self.param_type(&p.ty);
            let t = if p.tag.is_some() && !t.starts_with("Option<") { format!("Option<{t}>") } else { t };
            params.push(format!("{}: {t}", ident(&snake(&p.name))));
        }
        params
    }

    /// `<Name>Batch`: typed, synchronous queuing of batched oneway requests over a
    /// `floe::BatchWriter`, one method per operation that returns nothing.
    fn gen_batch_writer(&mut self, iface: &Definition, abs: &str, prx: &str, ops: &[(String, &Operation)]) {
        let f = self.f.clone();
        let name = format!("{}Batch", ident(&iface.name));
        if ops.iter().all(|(_, o)| returns_values(o)) {
            return;
        }
        self.line(&format!("impl {prx} {{"));
        self.line(&format!(
            "    /// A [`{name}`]: queues batched oneway requests to this proxy's target synchronously."
        ));
        self.line(&format!("    pub fn batch_writer(&self) -> {name} {{"));
        self.line(&format!("        {name}(self.0.batch_writer())"));
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("/// Batched oneway requests to a `{abs}`, queued without I/O; send them with"));
        self.line("/// [`flush`](Self::flush) (see `floe::BatchWriter`, which it derefs to).");
        self.line("#[derive(Debug)]");
        self.line(&format!("pub struct {name}(pub {f}::BatchWriter);"));
        self.line("");
        self.line(&format!("impl std::ops::Deref for {name} {{"));
        self.line(&format!("    type Target = {f}::BatchWriter;"));
        self.line("    fn deref(&self) -> &Self::Target {");
        self.line("        &self.0");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl std::ops::DerefMut for {name} {{"));
        self.line("    fn deref_mut(&mut self) -> &mut Self::Target {");
        self.line("        &mut self.0");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {name} {{"));
        self.depth += 1;
        for (_, o) in ops {
            if returns_values(o) {
                continue;
            }
            let fname = ident(&snake(&o.name));
            let mut params = vec!["&mut self".to_string()];
            params.extend(self.proxy_params(o));
            let mode = Self::op_mode(o);
            self.line(&format!("/// Queues a `{}` request.", o.name));
            self.line("#[inline]");
            self.line(&format!("pub fn {fname}({}) {{", params.join(", ")));
            let writes = self.param_writes(iface, o);
            if writes.is_empty() {
                self.line(&format!("    self.0.queue_empty({:?}, {f}::protocol::OperationMode::{mode});", o.name));
            } else {
                self.line(&format!(
                    "    self.0.queue({:?}, {f}::protocol::OperationMode::{mode}, |enc| {{ {} }});",
                    o.name,
                    writes.join(" ")
                ));
            }
            self.line("}");
            self.line("");
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
    }

    fn gen_proxy_op(&mut self, iface: &Definition, owner: &str, o: &Operation) {
        let f = self.f.clone();
        let fname = ident(&snake(&o.name));
        let mut params = vec!["&self".to_string()];
        params.extend(self.proxy_params(o));
        let args: Vec<String> = o.params.iter().filter(|p| !p.out).map(|p| ident(&snake(&p.name))).collect();
        let rt = self.result_type(o);
        let owner_name = owner.rsplit("::").next().unwrap_or(owner);
        let error_ty = if o.throws.is_empty() {
            None
        } else {
            Some(format!(
                "{}{}Error",
                self.path(owner).trim_end_matches(owner_name).to_string() + owner_name,
                camel(&o.name)
            ))
        };
        let ret = match &error_ty {
            Some(e) => format!("Result<{rt}, {f}::CallError<{e}>>"),
            None => format!("{f}::Result<{rt}>"),
        };
        self.doc(&o.doc);
        let returns_values = returns_values(o);
        self.line(&format!("pub async fn {fname}({}) -> {ret} {{", params.join(", ")));
        self.depth += 1;
        if returns_values {
            self.line(&format!("self.0.twoway_only({:?})?;", o.name));
        }
        let mode = Self::op_mode(o);
        // A trailing byte sequence, or sequence of numbers or of structs of numbers, is sent
        // from its own memory when large.
        match self.tail_param(o) {
            Some((tail, kind)) => {
                let invoke = kind.invoke();
                let writes: Vec<String> = o
                    .params
                    .iter()
                    .filter(|p| !p.out && !std::ptr::eq(*p, tail))
                    .map(|p| format!("{};", self.encode_param(&p.ty, &ident(&snake(&p.name)))))
                    .collect();
                self.line(&format!(
                    "let __outcome = {f}::codegen::{invoke}(&self.0, {:?}, {f}::protocol::OperationMode::{mode}, None, |enc| {{ {} }}, {}).await?;",
                    o.name,
                    writes.join(" "),
                    ident(&snake(&tail.name))
                ));
            }
            None => {
                let writes = self.param_writes(iface, o);
                self.line(&format!(
                    "let __outcome = self.0.invoke({:?}, {f}::protocol::OperationMode::{mode}, None, |enc| {{ {} }}).await?;",
                    o.name,
                    writes.join(" ")
                ));
            }
        }
        let read = self.read_results_closure(o);
        match &error_ty {
            None => {
                if returns_values {
                    self.line(&format!(
                        "let __outcome = __outcome.ok_or_else(|| {f}::Error::TwowayOnly({:?}.into()))?;",
                        o.name
                    ));
                    self.line(&format!("__outcome.decode({read})"));
                } else {
                    self.line("match __outcome {");
                    self.line(&format!("    Some(o) => o.decode({read}),"));
                    self.line("    None => Ok(()),");
                    self.line("}");
                }
            }
            Some(e) => {
                let mut arms = Vec::new();
                for (ex, variant) in self.error_variants(o) {
                    let p = self.path(&ex);
                    arms.push(format!(
                        "{ex:?} => Some(<{p} as {f}::encoding::UserExceptionSlices>::decode_body(dec).map({e}::{variant})),"
                    ));
                }
                let handler = format!(
                    "|__id: &str, dec: &mut {f}::encoding::Decoder| match __id {{ {} _ => None }}",
                    arms.join(" ")
                );
                if returns_values {
                    self.line(&format!(
                        "let __outcome = __outcome.ok_or_else(|| {f}::Error::TwowayOnly({:?}.into()))?;",
                        o.name
                    ));
                    self.line(&format!("__outcome.decode_or_user({read}, {handler})"));
                } else {
                    self.line("match __outcome {");
                    self.line(&format!("    Some(o) => o.decode_or_user({read}, {handler}),"));
                    self.line("    None => Ok(()),");
                    self.line("}");
                }
            }
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        // Blocking wrapper.
        self.line(&format!("/// Blocking form of [`Self::{fname}`]: fails with `Error::BlockingInAsync` on the thread of a current-thread runtime."));
        self.line(&format!("pub fn {}_blocking({}) -> {ret} {{", snake(&o.name), params.join(", ")));
        self.line(&format!("    {f}::codegen::block_on(&self.0, self.{fname}({}))", args.join(", ")));
        self.line("}");
        self.line("");
    }

    /// A closure reading the results: outs (required) in order, the required return, then the
    /// optional ones by tag; returns them as `(ret, outs…)`.
    fn read_results_closure(&self, o: &Operation) -> String {
        let f = &self.f;
        let mut lines = Vec::new();
        let out_name = |p: &Param| format!("__out_{}", snake(&p.name));
        for p in o.params.iter().filter(|p| p.out && p.tag.is_none()) {
            let t = self.rust_type(&p.ty);
            lines.push(format!("let {}: {t} = {f}::encoding::Decode::decode(dec)?;", out_name(p)));
        }
        if let (Some(r), None) = (&o.ret, o.ret_tag) {
            let t = self.rust_type(r);
            lines.push(format!("let __ret: {t} = {f}::encoding::Decode::decode(dec)?;"));
        }
        let mut opts: Vec<(i32, String, &TypeRef)> = o
            .params
            .iter()
            .filter(|p| p.out && p.tag.is_some())
            .map(|p| (p.tag.unwrap_or(0), out_name(p), &p.ty))
            .collect();
        if let (Some(r), Some(t)) = (&o.ret, o.ret_tag) {
            opts.push((t, "__ret".into(), r));
        }
        opts.sort_by_key(|x| x.0);
        for (tag, n, t) in opts {
            lines.push(format!("let {n} = {};", self.read_optional(tag, t)));
        }
        let uses = self.op_returns_classes(o);
        if let Some(finish) = Self::finish_classes(uses) {
            lines.insert(0, format!("dec.set_class_factory({});", self.unit_factory()));
            lines.push(finish.into());
        }
        let mut names = Vec::new();
        if o.ret.is_some() {
            names.push("__ret".to_string());
        }
        for p in o.params.iter().filter(|p| p.out) {
            names.push(out_name(p));
        }
        let value = match names.len() {
            0 => "()".to_string(),
            1 => names[0].clone(),
            _ => format!("({})", names.join(", ")),
        };
        format!("|dec: &mut {f}::encoding::Decoder| {{ {} Ok({value}) }}", lines.join(" "))
    }

    fn gen_dispatch_arm(&mut self, iface: &Definition, o: &Operation) {
        let f = self.f.clone();
        let mode = Self::op_mode(o);
        let format = self.op_format(o, iface);
        self.line(&format!("{:?} => {{", o.name));
        self.depth += 1;
        self.line(&format!("if let Err(r) = request.current.check_mode({f}::protocol::OperationMode::{mode}) {{"));
        self.line("    return r;");
        self.line("}");
        let ins: Vec<&Param> = o.params.iter().filter(|p| !p.out).collect();
        let mut reads = Vec::new();
        for p in ins.iter().filter(|p| p.tag.is_none()) {
            let t = self.rust_type(&p.ty);
            reads.push(format!("let {}: {t} = {f}::encoding::Decode::decode(dec)?;", ident(&snake(&p.name))));
        }
        let mut opts: Vec<&&Param> = ins.iter().filter(|p| p.tag.is_some()).collect();
        opts.sort_by_key(|p| p.tag);
        for p in opts {
            reads.push(format!("let {} = {};", ident(&snake(&p.name)), self.read_optional(p.tag.unwrap_or(0), &p.ty)));
        }
        if let Some(finish) = Self::finish_classes(self.op_sends_classes(o)) {
            reads.insert(0, format!("dec.set_class_factory({});", self.unit_factory()));
            reads.push(finish.into());
        }
        let names: Vec<String> = ins.iter().map(|p| ident(&snake(&p.name))).collect();
        let tuple = format!("({}{})", names.join(", "), if names.len() == 1 { "," } else { "" });
        // The decoder is gone before the servant runs (it is not part of the future), and an
        // operation without parameters needs none when the encapsulation is empty.
        // Parameters without proxies or classes are read by a decoder that carries nothing of
        // the communicator (cheaper to make).
        let mut seen = HashSet::new();
        let plain = ins.iter().all(|p| self.is_plain_data(&p.ty, &mut seen));
        // The decoder takes the parameters out of the request: they are read once.
        let decoder = if plain {
            format!("{f}::codegen::take_plain_decoder(&mut request)")
        } else {
            format!("{f}::codegen::take_decoder(&mut request)")
        };
        let decode = format!(
            "(|dec: &mut {f}::encoding::Decoder| -> {f}::encoding::Result<_> {{ {} {f}::codegen::finish_params(dec)?; Ok({tuple}) }})(&mut {decoder})",
            reads.join(" ")
        );
        if ins.is_empty() {
            self.line(&format!("let __args = if request.params.is_empty() {{ Ok(()) }} else {{ {decode} }};"));
        } else {
            self.line(&format!("let __args = {decode};"));
        }
        self.line("let current = &request.current;");
        self.line(&format!("let {tuple} = match __args {{"));
        self.line("    Ok(v) => v,");
        self.line(&format!("    Err(e) => return current.error(&{f}::Error::Marshal(e)),"));
        self.line("};");
        let mut call_args = names.clone();
        call_args.push("current".into());
        self.line(&format!("match servant.{}({}).await {{", ident(&snake(&o.name)), call_args.join(", ")));
        // Result destructuring: (ret, outs…).
        let mut rnames = Vec::new();
        if o.ret.is_some() {
            rnames.push("__ret".to_string());
        }
        for p in o.params.iter().filter(|p| p.out) {
            rnames.push(format!("__out_{}", snake(&p.name)));
        }
        let pat = match rnames.len() {
            0 => "()".to_string(),
            1 => rnames[0].clone(),
            _ => format!("({})", rnames.join(", ")),
        };
        let mut writes = Vec::new();
        for p in o.params.iter().filter(|p| p.out && p.tag.is_none()) {
            writes.push(format!("__out_{}.encode(enc);", snake(&p.name)));
        }
        if let (Some(_), None) = (&o.ret, o.ret_tag) {
            writes.push("__ret.encode(enc);".into());
        }
        let mut oopts: Vec<(i32, String, &TypeRef)> = o
            .params
            .iter()
            .filter(|p| p.out && p.tag.is_some())
            .map(|p| (p.tag.unwrap_or(0), format!("__out_{}", snake(&p.name)), &p.ty))
            .collect();
        if let (Some(r), Some(t)) = (&o.ret, o.ret_tag) {
            oopts.push((t, "__ret".into(), r));
        }
        oopts.sort_by_key(|x| x.0);
        for (tag, n, t) in oopts {
            writes.push(self.write_optional(tag, t, &format!("&{n}"), true));
        }
        let (any, required) = self.op_returns_classes(o);
        if any && format == "Sliced" {
            writes.insert(0, format!("enc.set_format({f}::encoding::FormatType::Sliced);"));
        }
        if required {
            writes.push("enc.write_pending_values();".into());
        }
        // Results that end with a sequence of bytes, numbers or structs of numbers send it from
        // its own memory when large.
        let no_optionals = o.ret_tag.is_none() && o.params.iter().all(|p| !p.out || p.tag.is_none());
        let last = match &o.ret {
            Some(r) => Some(("__ret".to_string(), r)),
            None => o.params.iter().rfind(|p| p.out).map(|p| (format!("__out_{}", snake(&p.name)), &p.ty)),
        };
        let tail = match last {
            Some((name, ty)) if no_optionals && !any => self.separate_tail(ty).map(|kind| (name, kind)),
            _ => None,
        };
        match tail {
            Some((name, kind)) => {
                let (ok, arg) = kind.reply(&name);
                let before: Vec<String> =
                    writes.iter().filter(|w| **w != format!("{name}.encode(enc);")).cloned().collect();
                self.line(&format!("    Ok({pat}) => current.{ok}(|enc| {{ {} }}, {arg}),", before.join(" ")));
            }
            None => self.line(&format!("    Ok({pat}) => current.ok(|enc| {{ {} }}),", writes.join(" "))),
        }
        self.line(&format!("    Err(e) => current.servant_error(&e, {f}::encoding::FormatType::{format}),"));
        self.line("}");
        self.depth -= 1;
        self.line("}");
    }
}
