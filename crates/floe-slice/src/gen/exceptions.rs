//! User exceptions: a struct holding the members of the exception and all its bases, with
//! `Display`, `std::error::Error` and `UserExceptionSlices` (slice by slice encoding, and
//! `["preserve-slice"]`).

use std::collections::HashSet;

use super::{finish_classes, ident, snake, Gen};
use crate::ast::*;

impl<'a> Gen<'a> {
    /// A user exception: its struct with every member of its chain, `Display`, `Error`, and
    /// its slice by slice encoding.
    pub(super) fn gen_exception(&mut self, d: &Definition, abs: &str) {
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
        self.member_fields(all.iter().copied());
        if preserves {
            self.line("    /// Slices of more derived exception types this program does not know, kept");
            self.line("    /// (`[\"preserve-slice\"]`) and written back when the exception is raised again.");
            self.line(&format!("    pub preserved_slices: Vec<{f}::encoding::SliceInfo>,"));
        }
        self.line("}");
        self.line("");
        if has_defaults {
            let tail: &[&str] = if preserves { &["preserved_slices: Vec::new()"] } else { &[] };
            self.default_impl(&name, &[], all.iter().copied(), tail);
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
        match finish_classes(uses) {
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

    /// `(type id, members)` from most derived to base.
    pub(super) fn exception_chain(&self, abs: &str) -> Vec<(String, &'a [Member])> {
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
}
