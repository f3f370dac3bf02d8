//! Data types: constants, enums, structs, sequences and dictionaries.

use super::{camel, ident, snake, Gen};
use crate::ast::*;
use crate::check::SymKind;

impl Gen<'_> {
    /// A constant: `pub const NAME: T = value;`.
    pub(super) fn gen_const(&mut self, d: &Definition, ty: &TypeRef, value: &ConstValue) {
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

    /// The Rust expression for a constant value or default of type `ty`.
    pub(super) fn const_expr(&self, ty: &TypeRef, v: &ConstValue) -> String {
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
            ConstValue::Str(s) => format!("{s:?}"),
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

    /// An enum: `#[repr(i32)]`, `from_i32`, and its encoding (1.0 width by `MAX_VALUE`).
    pub(super) fn gen_enum(&mut self, d: &Definition, abs: &str, enumerators: &[Enumerator]) {
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

    /// A struct: derives chosen by its members, defaults, its encoding, and the bulk
    /// `WireLayout` when its memory layout equals its wire layout.
    pub(super) fn gen_struct(&mut self, d: &Definition, members: &[Member]) {
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
        self.member_fields(members);
        self.line("}");
        self.line("");
        if has_defaults {
            self.default_impl(&name, &[], members, &[]);
        }
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
            self.line("/// SAFETY: #[repr(C)], fields in wire order, no padding (checked by the generator), and");
            self.line("/// every bit pattern of every field is valid.");
            self.line(&format!("unsafe impl {f}::encoding::WireLayout for {name} {{}}"));
            self.line("");
        }
    }

    /// A sequence: an alias of `Vec<T>`, or of `Bytes` for bytes.
    pub(super) fn gen_sequence(&mut self, d: &Definition, elem: &TypeRef) {
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

    /// A dictionary: an alias of `HashMap`, or of `BTreeMap` with `["rust:btreemap"]`.
    pub(super) fn gen_dictionary(&mut self, d: &Definition, key: &TypeRef, value: &TypeRef) {
        self.doc(&d.doc);
        let name = ident(&d.name);
        let map = if d.metadata.iter().any(|m| m == "rust:btreemap") { "BTreeMap" } else { "HashMap" };
        let k = self.rust_type(key);
        let v = self.rust_type(value);
        self.line(&format!("pub type {name} = std::collections::{map}<{k}, {v}>;"));
        self.line("");
    }
}
