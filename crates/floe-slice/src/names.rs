//! The rules for names that depend on where and in which order things are defined, as Ice's
//! Slice compilers apply them while they parse:
//!
//! * a definition other than a module belongs in a module ([`Code::GlobalDefinition`]);
//! * a definition is not named like an enclosing module, and an operation is not named like
//!   its interface or class, in any capitalization ([`Code::EnclosingName`]);
//! * names in one scope that differ only in capitalization clash, also across the reopenings
//!   of a module ([`Code::CaseClash`]);
//! * a name is looked up case-insensitively, scope by scope from the innermost outwards, and
//!   the first scope with a match decides; the match must then be spelt the same way
//!   ([`Code::Capitalization`]);
//! * an unqualified name used in a scope keeps its meaning there: a later definition in that
//!   scope may not give it another one ([`Code::ChangedMeaning`]);
//! * a class or interface is defined (not only declared) before another extends it.
//!
//! Lookups only see what was defined earlier in the file, so the definitions are walked in
//! source order and the table of names grows as they are met.

use std::collections::{HashMap, HashSet};

use crate::ast::*;
use crate::diag::{Code, Diagnostic, Span};

/// What an entry of the name table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Module,
    /// A class or interface (declared or defined).
    ClassLike,
    Exception,
    /// A struct, enum, sequence or dictionary.
    Type,
    Const,
    Enumerator,
    Member,
    Op,
    Param,
}

impl Kind {
    fn is_type(self) -> bool {
        matches!(self, Kind::ClassLike | Kind::Type)
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Module => "module",
            Kind::ClassLike => "class or interface",
            Kind::Exception => "exception",
            Kind::Type => "type",
            Kind::Const => "constant",
            Kind::Enumerator => "enumerator",
            Kind::Member => "data member",
            Kind::Op => "operation",
            Kind::Param => "parameter",
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    /// Absolute name as defined (`::M::S`).
    abs: String,
    kind: Kind,
}

struct Names {
    /// Lower-cased absolute name → what was defined under it so far, in order.
    contents: HashMap<String, Vec<Entry>>,
    /// Classes and interfaces defined (not only declared) so far.
    defined: HashSet<String>,
    /// (scope instance, lower-cased first component) → what it was first used for there.
    introduced: HashMap<(usize, String), Entry>,
    next_scope: usize,
    diags: Vec<Diagnostic>,
}

fn join(scope: &str, name: &str) -> String {
    format!("{scope}::{name}")
}

fn parent(scope: &str) -> &str {
    &scope[..scope.rfind("::").unwrap_or(0)]
}

/// Checks the names of `defs` (already resolved by the checker) and returns what breaks the
/// rules of this module.
pub(crate) fn check_names(defs: &[Definition]) -> Vec<Diagnostic> {
    let mut n = Names {
        contents: HashMap::new(),
        defined: HashSet::new(),
        introduced: HashMap::new(),
        next_scope: 1,
        diags: Vec::new(),
    };
    n.walk(defs, "", 0, &mut Vec::new());
    n.diags
}

impl Names {
    fn new_scope(&mut self) -> usize {
        self.next_scope += 1;
        self.next_scope
    }

    fn err(&mut self, code: Code, span: Span, message: String) {
        self.diags.push(Diagnostic::error(code, span, message));
    }

    /// Adds `abs` to the table, reporting a name in the same scope that differs only in
    /// capitalization (exact redefinitions are the checker's). False when `abs` clashes with
    /// an earlier name: the definition then introduces nothing.
    fn create(&mut self, abs: &str, kind: Kind, span: Span) -> bool {
        let entries = self.contents.entry(abs.to_lowercase()).or_default();
        let clash = entries.first().cloned();
        entries.push(Entry { abs: abs.to_string(), kind });
        let Some(prev) = clash else { return true };
        let name = &abs[abs.rfind("::").map_or(0, |i| i + 2)..];
        let prev_name = &prev.abs[prev.abs.rfind("::").map_or(0, |i| i + 2)..];
        let same_kind_member =
            prev.kind == kind && matches!(kind, Kind::Member | Kind::Op | Kind::Param | Kind::Enumerator);
        if same_kind_member {
            // Members, operations, parameters and enumerators among themselves are the checker's.
        } else if prev.abs != abs {
            self.err(
                Code::CaseClash,
                span,
                format!("`{name}` differs only in capitalization from {} `{prev_name}`", prev.kind.describe()),
            );
        } else if matches!(kind, Kind::Member | Kind::Op) {
            self.err(Code::Redefinition, span, format!("`{name}` is already defined as a {}", prev.kind.describe()));
        } else {
            return prev.abs == abs && (kind == Kind::Module || kind == Kind::ClassLike);
        }
        same_kind_member
    }

    /// The scopes a relative name is looked up in from `scope`, innermost first.
    fn levels(scope: &str, name: &str) -> Vec<(String, String)> {
        if let Some(abs) = name.strip_prefix("::") {
            return vec![(String::new(), abs.to_string())];
        }
        let mut out = Vec::new();
        let mut s = scope;
        loop {
            out.push((s.to_string(), name.to_string()));
            if s.is_empty() {
                return out;
            }
            s = parent(s);
        }
    }

    /// Looks up a type as Ice does: the first scope with a case-insensitive match of a type
    /// decides; matches that are not types are passed over for outer scopes.
    fn lookup_type(&mut self, name: &str, span: Span, scope: &str) {
        for (s, n) in Self::levels(scope, name) {
            let want = join(&s, &n);
            let Some(first) = self.contents.get(&want.to_lowercase()).and_then(|e| e.first()).cloned() else {
                continue;
            };
            if first.kind == Kind::Exception {
                return; // Not a type: the checker says so.
            }
            if first.kind.is_type() {
                if first.abs != want {
                    self.capitalization(name, span, &first);
                }
                return;
            }
        }
    }

    /// Looks up any definition as Ice does: the first scope with a case-insensitive match
    /// decides. With `strict`, the match must be spelt as `name` is.
    fn lookup_contained(&mut self, name: &str, span: Span, scope: &str, strict: bool) -> Option<Entry> {
        for (s, n) in Self::levels(scope, name) {
            let want = join(&s, &n);
            if let Some(first) = self.contents.get(&want.to_lowercase()).and_then(|e| e.first()).cloned() {
                if strict && first.abs != want {
                    self.capitalization(name, span, &first);
                }
                return Some(first);
            }
        }
        None
    }

    fn capitalization(&mut self, name: &str, span: Span, found: &Entry) {
        self.err(
            Code::Capitalization,
            span,
            format!("`{name}` is capitalized differently from the {} `{}` it names", found.kind.describe(), found.abs),
        );
    }

    /// Records that `name` (its first component, for a qualified name) is used in the scope
    /// instance `id` for `thing` (or for whatever the first component names from `scope`), and
    /// reports a name that had been used there for something else.
    fn introduce(&mut self, id: usize, scope: &str, name: &str, thing: Option<Entry>, span: Span) {
        if name.starts_with("::") {
            return;
        }
        let first = name.split("::").next().unwrap_or(name);
        let thing = match thing {
            Some(mut t) => {
                for _ in 1..name.split("::").count() {
                    t.abs = parent(&t.abs).to_string();
                    t.kind = Kind::Module;
                }
                t
            }
            None => match self.lookup_contained(first, span, scope, false) {
                Some(t) => t,
                None => return,
            },
        };
        let key = (id, first.to_lowercase());
        match self.introduced.get(&key) {
            None => {
                self.introduced.insert(key, thing);
            }
            Some(prev) if prev.abs != thing.abs => {
                // Parameters and data members have scopes of their own.
                let own = |k: Kind| (prev.kind == k) != (thing.kind == k);
                if !own(Kind::Param) && !own(Kind::Member) {
                    let prev = prev.abs.clone();
                    self.err(
                        Code::ChangedMeaning,
                        span,
                        format!("`{first}` has changed meaning: it was used for `{prev}` earlier in this scope"),
                    );
                }
            }
            Some(_) => {}
        }
    }

    fn type_ref(&mut self, t: &TypeRef, id: usize, scope: &str) {
        if let TypeRef::Named { name, span, .. } = t {
            self.lookup_type(name, *span, scope);
            self.introduce(id, scope, name, None, *span);
        }
    }

    /// A constant or default value naming a constant or an enumerator.
    fn value(&mut self, v: &ConstValue, id: usize, scope: &str) {
        let ConstValue::Name(name, span) = v else { return };
        if let Some(found) = self.lookup_contained(name, *span, scope, false) {
            match found.kind {
                Kind::Const | Kind::Enumerator => self.introduce(id, scope, name, Some(found), *span),
                Kind::Member | Kind::Op | Kind::Param => self.err(
                    Code::WrongKind,
                    *span,
                    format!(
                        "`{name}` names the {} `{}`, not a constant or enumerator",
                        found.kind.describe(),
                        found.abs
                    ),
                ),
                _ => {}
            }
        }
    }

    /// A class or interface named in `extends` or `implements`.
    fn base(&mut self, base: &(String, Span, Option<String>), id: usize, scope: &str) {
        let (name, span, resolved) = base;
        self.lookup_type(name, *span, scope);
        if let Some(abs) = resolved {
            if !self.defined.contains(abs) {
                self.err(
                    Code::Undefined,
                    *span,
                    format!("`{name}` is only declared at this point; it must be defined before it is inherited from"),
                );
                return;
            }
        }
        self.introduce(id, scope, name, None, *span);
    }

    fn members(&mut self, members: &[Member], id: usize, scope: &str) {
        for m in members {
            self.type_ref(&m.ty, id, scope);
            if let Some(v) = &m.default {
                self.value(v, id, scope);
            }
            let abs = join(scope, &m.name);
            self.create(&abs, Kind::Member, m.span);
            self.introduce(id, scope, &m.name, Some(Entry { abs, kind: Kind::Member }), m.span);
        }
    }

    fn ops(&mut self, ops: &[Operation], owner: &Definition, id: usize, scope: &str) {
        for o in ops {
            if let Some(r) = &o.ret {
                self.type_ref(r, id, scope);
            }
            let what = if matches!(owner.kind, DefKind::Class { .. }) { "class" } else { "interface" };
            if o.name == owner.name {
                self.err(Code::EnclosingName, o.span, format!("operation `{}` has the name of its {what}", o.name));
            } else if o.name.eq_ignore_ascii_case(&owner.name) {
                self.err(
                    Code::EnclosingName,
                    o.span,
                    format!("operation `{}` differs only in capitalization from its {what} `{}`", o.name, owner.name),
                );
            }
            let abs = join(scope, &o.name);
            self.create(&abs, Kind::Op, o.span);
            self.introduce(id, scope, &o.name, Some(Entry { abs: abs.clone(), kind: Kind::Op }), o.span);
            let op_id = self.new_scope();
            for p in &o.params {
                self.type_ref(&p.ty, op_id, &abs);
                let pabs = join(&abs, &p.name);
                self.create(&pabs, Kind::Param, p.span);
                self.introduce(op_id, &abs, &p.name, Some(Entry { abs: pabs, kind: Kind::Param }), p.span);
            }
            for (name, span, _) in &o.throws {
                if let Some(found) = self.lookup_contained(name, *span, scope, true) {
                    self.introduce(id, scope, name, Some(found), *span);
                }
            }
        }
    }

    fn walk(&mut self, defs: &[Definition], scope: &str, id: usize, modules: &mut Vec<String>) {
        for d in defs {
            let abs = join(scope, &d.name);
            let module = matches!(d.kind, DefKind::Module(_));
            if scope.is_empty() && !module {
                self.err(
                    Code::GlobalDefinition,
                    d.span,
                    format!("`{}` is defined outside any module; only modules may be", d.name),
                );
            }
            if let Some(m) = modules.iter().rev().find(|m| m.eq_ignore_ascii_case(&d.name)) {
                let how = if *m == d.name { "has the name" } else { "differs only in capitalization from the name" };
                self.err(Code::EnclosingName, d.span, format!("`{}` {how} of its enclosing module `{m}`", d.name));
            }
            let this = |kind| Some(Entry { abs: abs.clone(), kind });
            match &d.kind {
                DefKind::Module(inner) => {
                    if self.create(&abs, Kind::Module, d.span) {
                        self.introduce(id, scope, &d.name, this(Kind::Module), d.span);
                    }
                    let inner_id = self.new_scope();
                    modules.push(d.name.clone());
                    self.walk(inner, &abs, inner_id, modules);
                    modules.pop();
                }
                DefKind::Interface { forward: true, .. } | DefKind::Class { forward: true, .. } => {
                    self.create(&abs, Kind::ClassLike, d.span);
                }
                DefKind::Interface { bases, ops, .. } => {
                    for b in bases {
                        self.base(b, id, scope);
                    }
                    self.defined.insert(abs.clone());
                    if self.create(&abs, Kind::ClassLike, d.span) {
                        self.introduce(id, scope, &d.name, this(Kind::ClassLike), d.span);
                    }
                    let inner = self.new_scope();
                    self.ops(ops, d, inner, &abs);
                }
                DefKind::Class { base, implements, members, ops, .. } => {
                    for b in base.iter().chain(implements) {
                        self.base(b, id, scope);
                    }
                    self.defined.insert(abs.clone());
                    if self.create(&abs, Kind::ClassLike, d.span) {
                        self.introduce(id, scope, &d.name, this(Kind::ClassLike), d.span);
                    }
                    let inner = self.new_scope();
                    // Data members and operations in the order they are written.
                    let (mut m, mut o) = (0, 0);
                    while m < members.len() || o < ops.len() {
                        let pos = |s: Span| (s.file, s.line, s.col);
                        if o == ops.len() || (m < members.len() && pos(members[m].span) < pos(ops[o].span)) {
                            self.members(&members[m..=m], inner, &abs);
                            m += 1;
                        } else {
                            self.ops(&ops[o..=o], d, inner, &abs);
                            o += 1;
                        }
                    }
                }
                DefKind::Exception { base, members } => {
                    if let Some((name, span, _)) = base {
                        self.lookup_contained(name, *span, scope, true);
                        self.introduce(id, scope, name, None, *span);
                    }
                    if self.create(&abs, Kind::Exception, d.span) {
                        self.introduce(id, scope, &d.name, this(Kind::Exception), d.span);
                    }
                    let inner = self.new_scope();
                    self.members(members, inner, &abs);
                }
                DefKind::Struct { members } => {
                    if self.create(&abs, Kind::Type, d.span) {
                        self.introduce(id, scope, &d.name, this(Kind::Type), d.span);
                    }
                    let inner = self.new_scope();
                    self.members(members, inner, &abs);
                }
                DefKind::Enum { enumerators } => {
                    if self.create(&abs, Kind::Type, d.span) {
                        self.introduce(id, scope, &d.name, this(Kind::Type), d.span);
                    }
                    for e in enumerators {
                        self.create(&join(&abs, &e.name), Kind::Enumerator, e.span);
                    }
                }
                DefKind::Sequence { elem } => {
                    self.type_ref(elem, id, scope);
                    self.create(&abs, Kind::Type, d.span);
                }
                DefKind::Dictionary { key, value } => {
                    self.type_ref(key, id, scope);
                    self.type_ref(value, id, scope);
                    self.create(&abs, Kind::Type, d.span);
                }
                DefKind::Const { ty, value, .. } => {
                    self.type_ref(ty, id, scope);
                    self.value(value, id, scope);
                    self.create(&abs, Kind::Const, d.span);
                }
            }
        }
    }
}
