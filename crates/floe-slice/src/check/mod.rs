//! Name resolution and the semantic rules Ice's compiler enforces.
//!
//! This file holds the symbols and the [`Unit`], the identifier checks, and the resolution of
//! every name; `rules` holds the rules checked on the resolved unit (keys, tags, constants,
//! members, operations, inheritance).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ast::*;
use crate::diag::{Code, Diagnostic, Span};

mod rules;
use rules::rules;

/// What a name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymKind {
    /// A module.
    Module,
    /// An interface.
    Interface,
    /// A class.
    Class,
    /// An exception.
    Exception,
    /// A struct.
    Struct,
    /// An enum.
    Enum,
    /// A sequence.
    Sequence,
    /// A dictionary.
    Dictionary,
    /// A constant.
    Const,
    /// An enumerator (value of an enum).
    Enumerator,
}

/// One entry of the symbol table.
#[derive(Debug, Clone)]
pub struct Symbol {
    /// Kind.
    pub kind: SymKind,
    /// Path of indexes from the top-level definitions down to this one (for enumerators:
    /// the enum's path).
    pub path: Vec<usize>,
    /// Declared `local`.
    pub local: bool,
    /// Only forward-declared so far.
    pub forward: bool,
    /// Where it was (last) defined.
    pub span: Span,
}

/// The checked compilation unit.
#[derive(Debug, Default)]
pub struct Unit {
    /// Top-level definitions.
    pub defs: Vec<Definition>,
    /// Absolute name (`::M::N`) → symbol.
    pub symbols: BTreeMap<String, Symbol>,
    /// Global metadata.
    pub global_metadata: Vec<String>,
}

impl Unit {
    /// The definition at `path`.
    pub fn def(&self, path: &[usize]) -> &Definition {
        let mut d = &self.defs[path[0]];
        for &i in &path[1..] {
            match &d.kind {
                DefKind::Module(defs) => d = &defs[i],
                _ => unreachable!("symbol paths go through modules only"),
            }
        }
        d
    }

    /// The definition an absolute name refers to.
    pub fn lookup(&self, absolute: &str) -> Option<(&Symbol, &Definition)> {
        let s = self.symbols.get(absolute)?;
        Some((s, self.def(&s.path)))
    }
}

struct Checker {
    symbols: BTreeMap<String, Symbol>,
    diags: Vec<Diagnostic>,
    /// Integer constants by absolute name (enumerator values may name them).
    int_consts: HashMap<String, i128>,
    /// Enumerators' values by absolute name, with their aliases in the enclosing scope (a
    /// compact id may be given as an enumerator, as Ice 3.8's Slice does).
    enumerator_values: HashMap<String, i128>,
    /// Enumerators entered in their enum's enclosing scope too, which a definition there may
    /// take over.
    enumerator_aliases: HashSet<String>,
}

fn join(scope: &str, name: &str) -> String {
    format!("{scope}::{name}")
}

/// Checks the names definitions give as Ice's Slice compilers do: the suffixes `Helper`,
/// `Holder`, `Prx` and `Ptr` are reserved; the `ice` prefix (any case) is reserved unless the file has `[["ice-prefix"]]`; an underscore never leads a name, and
/// appears elsewhere only with the file's `[["underscore"]]`, and then neither at the end nor
/// twice in a row. `file_metadata` is the global metadata of each file.
pub fn check_identifiers(defined: &[(String, Span)], file_metadata: &[(u32, String)]) -> Vec<Diagnostic> {
    let allows = |file: u32, what: &str| file_metadata.iter().any(|(f, m)| *f == file && m == what);
    let mut diags = Vec::new();
    for (name, span) in defined {
        let underscore = if name.starts_with('_') {
            Some("a leading underscore")
        } else if !name.contains('_') {
            None
        } else if !allows(span.file, "underscore") {
            Some("an underscore (allowed with [[\"underscore\"]])")
        } else if name.ends_with('_') {
            Some("a trailing underscore")
        } else if name.contains("__") {
            Some("a double underscore")
        } else {
            None
        };
        if let Some(what) = underscore {
            diags.push(Diagnostic::error(
                Code::IllegalUnderscore,
                *span,
                format!("illegal identifier `{name}`: {what}"),
            ));
        }
        if let Some(suffix) = ["Helper", "Holder", "Prx", "Ptr"].into_iter().find(|s| name.ends_with(s)) {
            diags.push(Diagnostic::error(
                Code::ReservedSuffix,
                *span,
                format!("illegal identifier `{name}`: the `{suffix}` suffix is reserved"),
            ));
        }
        if name.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("ice")) && !allows(span.file, "ice-prefix") {
            diags.push(Diagnostic::error(
                Code::ReservedPrefix,
                *span,
                format!("illegal identifier `{name}`: the `ice` prefix is reserved (allowed with [[\"ice-prefix\"]])"),
            ));
        }
    }
    diags
}

/// Checks `defs` and resolves every name in them.
pub fn check(defs: Vec<Definition>, global_metadata: Vec<String>) -> (Unit, Vec<Diagnostic>) {
    let mut c = Checker {
        symbols: BTreeMap::new(),
        diags: Vec::new(),
        int_consts: HashMap::new(),
        enumerator_values: HashMap::new(),
        enumerator_aliases: HashSet::new(),
    };
    let mut defs = defs;
    c.collect(&defs, "", &mut Vec::new());
    collect_int_consts(&defs, "", &mut c.int_consts);
    collect_enumerator_values(&defs, "", &c.int_consts, &mut c.enumerator_values);
    c.resolve_defs(&mut defs, "");
    let names = crate::names::check_names(&defs);
    // A name with the wrong capitalization is reported as such, not also as undefined.
    let miscased: HashSet<Span> = names.iter().filter(|d| d.code == Code::Capitalization).map(|d| d.span).collect();
    c.diags.retain(|d| !(d.code == Code::Undefined && miscased.contains(&d.span)));
    c.diags.extend(names);
    let unit = Unit { defs, symbols: c.symbols, global_metadata };
    let mut diags = c.diags;
    rules(&unit, &mut diags);
    (unit, diags)
}

impl Checker {
    fn collect(&mut self, defs: &[Definition], scope: &str, path: &mut Vec<usize>) {
        for (i, d) in defs.iter().enumerate() {
            path.push(i);
            let abs = join(scope, &d.name);
            let kind = match &d.kind {
                DefKind::Module(_) => SymKind::Module,
                DefKind::Interface { .. } => SymKind::Interface,
                DefKind::Class { .. } => SymKind::Class,
                DefKind::Exception { .. } => SymKind::Exception,
                DefKind::Struct { .. } => SymKind::Struct,
                DefKind::Enum { .. } => SymKind::Enum,
                DefKind::Sequence { .. } => SymKind::Sequence,
                DefKind::Dictionary { .. } => SymKind::Dictionary,
                DefKind::Const { .. } => SymKind::Const,
            };
            let forward =
                matches!(d.kind, DefKind::Interface { forward: true, .. } | DefKind::Class { forward: true, .. });
            // Case-insensitive clashes are checked with the other name rules (`names`).
            match self.symbols.get(&abs).cloned() {
                // A definition takes the name from an enumerator of an enum in this scope.
                Some(prev) if prev.kind == SymKind::Enumerator && self.enumerator_aliases.remove(&abs) => {
                    self.symbols.insert(
                        abs.clone(),
                        Symbol { kind, path: path.clone(), local: d.local, forward, span: d.span },
                    );
                }
                None => {
                    self.symbols.insert(
                        abs.clone(),
                        Symbol { kind, path: path.clone(), local: d.local, forward, span: d.span },
                    );
                }
                Some(prev) => {
                    let ok = (prev.kind == SymKind::Module && kind == SymKind::Module)
                        || (prev.kind == kind
                            && (prev.forward || forward)
                            && matches!(kind, SymKind::Interface | SymKind::Class));
                    if !ok {
                        self.diags.push(Diagnostic::error(
                            Code::Redefinition,
                            d.span,
                            format!("`{abs}` is already defined (as a {:?}) at line {}", prev.kind, prev.span.line),
                        ));
                    } else if kind != SymKind::Module && prev.local != d.local {
                        let (this, was) = if d.local { ("local", "non-local") } else { ("non-local", "local") };
                        self.diags.push(Diagnostic::error(
                            Code::Redefinition,
                            d.span,
                            format!("{this} `{abs}` was declared {was} at line {}", prev.span.line),
                        ));
                    } else if kind != SymKind::Module && !forward {
                        // The real definition replaces the forward declaration.
                        self.symbols.insert(
                            abs.clone(),
                            Symbol { kind, path: path.clone(), local: d.local, forward: false, span: d.span },
                        );
                    }
                }
            }
            match &d.kind {
                DefKind::Module(inner) => self.collect(inner, &abs, path),
                DefKind::Enum { enumerators } => {
                    for e in enumerators {
                        let s = Symbol {
                            kind: SymKind::Enumerator,
                            path: path.clone(),
                            local: d.local,
                            forward: false,
                            span: e.span,
                        };
                        self.symbols.insert(join(&abs, &e.name), s.clone());
                        // Slice 3.7 also puts enumerators in the enclosing scope.
                        let alias = join(scope, &e.name);
                        if !self.symbols.contains_key(&alias) {
                            self.symbols.insert(alias.clone(), s);
                            self.enumerator_aliases.insert(alias);
                        }
                    }
                }
                _ => {}
            }
            path.pop();
        }
    }

    /// Resolves `name` as seen from `scope`: absolute names directly, relative ones from the
    /// innermost enclosing scope outwards.
    fn find(&self, name: &str, scope: &str) -> Option<String> {
        if name.starts_with("::") {
            return self.symbols.contains_key(name).then(|| name.to_string());
        }
        let mut s = scope.to_string();
        loop {
            let cand = join(&s, name);
            if self.symbols.contains_key(&cand) {
                return Some(cand);
            }
            if s.is_empty() {
                return None;
            }
            s.truncate(s.rfind("::").unwrap_or(0));
        }
    }

    fn resolve_name(&mut self, name: &str, span: Span, scope: &str, want: &[SymKind], what: &str) -> Option<String> {
        match self.find(name, scope) {
            None => {
                self.diags.push(Diagnostic::error(Code::Undefined, span, format!("`{name}` is not defined")));
                None
            }
            Some(abs) => {
                let kind = self.symbols[&abs].kind;
                if !want.contains(&kind) {
                    self.diags.push(Diagnostic::error(
                        Code::WrongKind,
                        span,
                        format!("`{name}` is a {kind:?}, expected {what}"),
                    ));
                    return None;
                }
                Some(abs)
            }
        }
    }

    fn resolve_type(&mut self, t: &mut TypeRef, scope: &str) {
        if let TypeRef::Named { name, proxy, span, resolved } = t {
            let (want, what): (&[SymKind], &str) = if *proxy {
                (&[SymKind::Interface, SymKind::Class], "an interface (for a proxy)")
            } else {
                (
                    &[
                        SymKind::Class,
                        SymKind::Struct,
                        SymKind::Enum,
                        SymKind::Sequence,
                        SymKind::Dictionary,
                        SymKind::Interface,
                    ],
                    "a type",
                )
            };
            let r = self.resolve_name(name, *span, scope, want, what);
            if let Some(abs) = &r {
                let sym = &self.symbols[abs];
                if !*proxy && sym.kind == SymKind::Interface && !sym.local {
                    // Ice 3.7 accepts this (as a class instance) with a deprecation warning.
                    self.diags.push(Diagnostic {
                        severity: crate::diag::Severity::Warning,
                        code: Code::IllegalUse,
                        message: format!("interface `{name}` passed by value is deprecated; use a proxy `{name}*`"),
                        span: *span,
                    });
                }
            }
            *resolved = r;
        }
    }

    fn resolve_members(&mut self, members: &mut [Member], scope: &str) {
        for m in members {
            self.resolve_type(&mut m.ty, scope);
        }
    }

    fn resolve_ops(&mut self, ops: &mut [Operation], scope: &str) {
        for o in ops {
            if let Some(r) = &mut o.ret {
                self.resolve_type(r, scope);
            }
            for p in &mut o.params {
                self.resolve_type(&mut p.ty, scope);
            }
            for (n, s, r) in &mut o.throws {
                *r = self.resolve_name(n, *s, scope, &[SymKind::Exception], "an exception");
            }
        }
    }

    fn resolve_defs(&mut self, defs: &mut [Definition], scope: &str) {
        for d in defs {
            let abs = join(scope, &d.name);
            match &mut d.kind {
                DefKind::Module(inner) => self.resolve_defs(inner, &abs),
                DefKind::Interface { bases, ops, .. } => {
                    for (n, s, r) in bases.iter_mut() {
                        *r = self.resolve_name(n, *s, scope, &[SymKind::Interface], "an interface");
                    }
                    self.resolve_ops(ops, &abs);
                }
                DefKind::Class { base, implements, members, ops, compact_id, compact_id_name, .. } => {
                    if let Some((n, sp)) = compact_id_name.clone() {
                        let kinds = [SymKind::Const, SymKind::Enumerator];
                        let abs = self.resolve_name(&n, sp, scope, &kinds, "an integer constant or an enumerator");
                        let value = abs
                            .and_then(|a| self.int_consts.get(&a).or_else(|| self.enumerator_values.get(&a)).copied());
                        match value {
                            Some(v) if (0..=i32::MAX as i128).contains(&v) => *compact_id = Some(v as i32),
                            _ => self.diags.push(Diagnostic::error(
                                Code::BadConstant,
                                sp,
                                format!("compact id `{n}` is not a non-negative integer constant or enumerator"),
                            )),
                        }
                    }
                    if let Some((n, s, r)) = base {
                        *r = self.resolve_name(n, *s, scope, &[SymKind::Class], "a class");
                    }
                    for (n, s, r) in implements.iter_mut() {
                        *r = self.resolve_name(n, *s, scope, &[SymKind::Interface], "an interface");
                    }
                    self.resolve_members(members, &abs);
                    self.resolve_ops(ops, &abs);
                }
                DefKind::Exception { base, members } => {
                    if let Some((n, s, r)) = base {
                        *r = self.resolve_name(n, *s, scope, &[SymKind::Exception], "an exception");
                    }
                    self.resolve_members(members, &abs);
                }
                DefKind::Struct { members } => self.resolve_members(members, &abs),
                DefKind::Sequence { elem } => self.resolve_type(elem, scope),
                DefKind::Dictionary { key, value } => {
                    self.resolve_type(key, scope);
                    self.resolve_type(value, scope);
                }
                DefKind::Const { ty, value, .. } => {
                    self.resolve_type(ty, scope);
                    if let ConstValue::Name(n, s) = value {
                        let (n, s) = (n.clone(), *s);
                        self.resolve_name(
                            &n,
                            s,
                            scope,
                            &[SymKind::Enumerator, SymKind::Const],
                            "an enumerator or constant",
                        );
                    }
                }
                DefKind::Enum { enumerators } => {
                    let mut next: i64 = 0;
                    let mut used: HashMap<i64, String> = HashMap::new();
                    let mut names: HashSet<String> = HashSet::new();
                    for e in enumerators.iter_mut() {
                        if !names.insert(e.name.to_lowercase()) {
                            self.diags.push(Diagnostic::error(
                                Code::Redefinition,
                                e.span,
                                format!("enumerator `{}` is repeated", e.name),
                            ));
                        }
                        let v = match &e.explicit {
                            None => next,
                            Some(ConstValue::Int(v)) => *v as i64,
                            Some(ConstValue::Name(n, s)) => {
                                let (n, s) = (n.clone(), *s);
                                let abs = self.resolve_name(&n, s, scope, &[SymKind::Const], "an integer constant");
                                match abs.and_then(|a| self.int_consts.get(&a).copied()) {
                                    Some(v) => i64::try_from(v).unwrap_or(-1),
                                    None => {
                                        self.diags.push(Diagnostic::error(
                                            Code::BadEnumerator,
                                            e.span,
                                            format!("`{n}` is not an integer constant"),
                                        ));
                                        next
                                    }
                                }
                            }
                            Some(_) => {
                                self.diags.push(Diagnostic::error(
                                    Code::BadEnumerator,
                                    e.span,
                                    "an enumerator value must be an integer",
                                ));
                                next
                            }
                        };
                        if !(0..=i32::MAX as i64).contains(&v) {
                            self.diags.push(Diagnostic::error(
                                Code::BadEnumerator,
                                e.span,
                                format!("enumerator `{}` = {v} is outside 0..=2147483647", e.name),
                            ));
                        }
                        if let Some(prev) = used.insert(v, e.name.clone()) {
                            self.diags.push(Diagnostic::error(
                                Code::BadEnumerator,
                                e.span,
                                format!("enumerators `{prev}` and `{}` have the same value {v}", e.name),
                            ));
                        }
                        e.value = v;
                        next = v.saturating_add(1);
                    }
                }
            }
        }
    }
}

/// Records the value of every enumerator under its absolute name and, where that name is
/// free, under its enum's enclosing scope (as Slice 3.7 enters it there too). Values the
/// checker finds wrong are reported when it checks the enum.
fn collect_enumerator_values(
    defs: &[Definition],
    scope: &str,
    int_consts: &HashMap<String, i128>,
    out: &mut HashMap<String, i128>,
) {
    for d in defs {
        let abs = join(scope, &d.name);
        match &d.kind {
            DefKind::Module(inner) => collect_enumerator_values(inner, &abs, int_consts, out),
            DefKind::Enum { enumerators } => {
                let mut next: i128 = 0;
                for e in enumerators {
                    let value = match &e.explicit {
                        Some(ConstValue::Int(v)) => *v,
                        Some(ConstValue::Name(n, _)) => lookup_outwards(scope, n, int_consts).unwrap_or(next),
                        _ => next,
                    };
                    out.insert(join(&abs, &e.name), value);
                    out.entry(join(scope, &e.name)).or_insert(value);
                    next = value.saturating_add(1);
                }
            }
            _ => {}
        }
    }
}

/// `name` looked up in `values` from `scope` outwards (an absolute name only as it is).
fn lookup_outwards(scope: &str, name: &str, values: &HashMap<String, i128>) -> Option<i128> {
    let mut s = scope.to_string();
    loop {
        let candidate = if name.starts_with("::") { name.to_string() } else { join(&s, name) };
        if let Some(v) = values.get(&candidate) {
            return Some(*v);
        }
        if name.starts_with("::") || s.is_empty() {
            return None;
        }
        s = s.rsplit_once("::").map(|(a, _)| a.to_string()).unwrap_or_default();
    }
}

/// Records every constant with an integer value (directly or through other constants, in
/// definition order) under its absolute name.
fn collect_int_consts(defs: &[Definition], scope: &str, out: &mut HashMap<String, i128>) {
    for d in defs {
        let abs = join(scope, &d.name);
        match &d.kind {
            DefKind::Module(inner) => collect_int_consts(inner, &abs, out),
            DefKind::Const { value: ConstValue::Int(v), .. } => {
                out.insert(abs, *v);
            }
            DefKind::Const { value: ConstValue::Name(n, _), .. } => {
                // A constant naming another constant: look it up from this scope outwards.
                if let Some(v) = lookup_outwards(scope, n, out) {
                    out.insert(abs, v);
                }
            }
            _ => {}
        }
    }
}
