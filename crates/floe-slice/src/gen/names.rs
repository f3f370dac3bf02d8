//! Names: Slice identifiers as Rust identifiers (snake_case, CamelCase, keywords escaped),
//! absolute Slice names, and the Rust path of a Slice definition as seen from the module being
//! generated.

use super::Gen;
use crate::ast::DefKind;
use crate::check::SymKind;

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

pub(super) fn camel(name: &str) -> String {
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

impl Gen<'_> {
    /// The absolute Slice name (`::A::B::name`) of `name` in the module being generated.
    pub(super) fn abs(&self, name: &str) -> String {
        let mut s = String::new();
        for m in &self.module {
            s.push_str("::");
            s.push_str(m);
        }
        s.push_str("::");
        s.push_str(name);
        s
    }

    /// Rust path of a Slice type defined at absolute name `abs`, as seen from the current module.
    pub(super) fn path(&self, abs: &str) -> String {
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

    /// The absolute name of the enum `name` at `path` (indices into the unit's definitions).
    pub(super) fn enum_abs(&self, path: &[usize], name: &str) -> String {
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
}
