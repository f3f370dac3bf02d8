//! Encoding and decoding snippets shared by every construct: members and in-parameters,
//! optional (tagged) values with their wire format, default member values, and the code that
//! ends reading class instances.

use super::{ident, snake, Gen};
use crate::ast::*;

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

impl Gen<'_> {
    /// The `OptionalFormat` of an optional value of type `t`, and how its size is written.
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

    /// Expression that encodes the in-parameter `v` (as typed by `param_type`).
    pub(super) fn encode_param(&self, t: &TypeRef, v: &str) -> String {
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

    /// The statement that writes the optional `v` (an `Option` of a reference) with its tag,
    /// when it is set.
    pub(super) fn write_optional(&self, tag: i32, t: &TypeRef, v: &str) -> String {
        let (fmt, kind) = self.opt_kind(t);
        let f = &self.f;
        // The body refers to the present value as `__v` (a reference for borrowed types).
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

    /// The expression that reads the optional value with this tag (`None` when absent).
    pub(super) fn read_optional(&self, tag: i32, t: &TypeRef) -> String {
        let (fmt, kind) = self.opt_kind(t);
        let f = &self.f;
        let skip = match kind {
            OptKind::Plain => "",
            OptKind::FixedStruct(_) | OptKind::FixedSeq(_) => "dec.read_size()?;",
            OptKind::FSize => "dec.read_fsize()?;",
        };
        let ty = self.rust_type(t);
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

    /// Statements encoding `members` (read through `prefix`): required ones in order, then
    /// optionals by tag.
    pub(super) fn write_members_code(&self, members: &[Member], prefix: &str) -> Vec<String> {
        let mut lines = Vec::new();
        for m in members.iter().filter(|m| m.tag.is_none()) {
            lines.push(format!("{prefix}{}.encode(enc);", ident(&snake(&m.name))));
        }
        let mut opts: Vec<&Member> = members.iter().filter(|m| m.tag.is_some()).collect();
        opts.sort_by_key(|m| m.tag);
        for m in opts {
            let v = format!("&{prefix}{}", ident(&snake(&m.name)));
            lines.push(self.write_optional(m.tag.unwrap_or(0), &m.ty, &v));
        }
        lines
    }

    /// Statements decoding `members` into locals of the same names: required ones in order,
    /// then optionals by tag.
    pub(super) fn read_members_code(&self, members: &[Member]) -> Vec<String> {
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

    /// The fields of a struct, class or exception: one `pub name: Type,` per member, each after
    /// its doc comment, one level deeper than the current line.
    pub(super) fn member_fields<'m>(&mut self, members: impl IntoIterator<Item = &'m Member>) {
        self.depth += 1;
        for m in members {
            self.doc(&m.doc);
            let t = self.member_type(m);
            self.line(&format!("pub {}: {t},", ident(&snake(&m.name))));
        }
        self.depth -= 1;
    }

    /// `impl Default for name`, for types with a member that has a default value: the fields
    /// `lead` first (a class's base), then each member's default, then `tail` (an exception's
    /// preserved slices).
    pub(super) fn default_impl<'m>(
        &mut self,
        name: &str,
        lead: &[&str],
        members: impl IntoIterator<Item = &'m Member>,
        tail: &[&str],
    ) {
        self.line(&format!("impl Default for {name} {{"));
        self.line("    fn default() -> Self {");
        self.line("        Self {");
        for field in lead {
            self.line(&format!("            {field},"));
        }
        for m in members {
            let v = self.member_default(m);
            self.line(&format!("            {}: {v},", ident(&snake(&m.name))));
        }
        for field in tail {
            self.line(&format!("            {field},"));
        }
        self.line("        }");
        self.line("    }");
        self.line("}");
        self.line("");
    }

    /// The initial value of a member: its Slice default (inside `Some` for an optional one),
    /// or the type's default.
    pub(super) fn member_default(&self, m: &Member) -> String {
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
}

/// The code that ends reading classes: pending values (and type checks) when required
/// parameters hold classes, type checks alone when only optional ones do.
pub(super) fn finish_classes(uses: (bool, bool)) -> Option<&'static str> {
    match uses {
        (_, true) => Some("dec.read_pending_values()?;"),
        (true, false) => Some("dec.check_class_types()?;"),
        _ => None,
    }
}
