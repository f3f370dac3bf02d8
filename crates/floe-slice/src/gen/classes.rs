//! Classes (values): a struct holding the class's own members (and its base as `base`), the
//! `ClassValue` and `ClassType` impls, and the unit's class factory (`__floe_classes`) that
//! decoding creates instances with. A class with operations also gets what an interface gets
//! (see `interfaces`).

use super::{ident, snake, Gen};
use crate::ast::*;
use crate::check::SymKind;

impl Gen<'_> {
    /// A class: its struct, type ids, `Deref` to its base, `ClassValue` (slice by slice
    /// encoding) and `ClassType`.
    pub(super) fn gen_class(&mut self, d: &Definition, abs: &str) {
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
        if let Some(b) = &base {
            self.line("    /// The base class's part (also reachable through `Deref`).");
            let bp = self.path(b);
            self.line(&format!("    pub base: {bp},"));
        }
        self.member_fields(members);
        self.line("}");
        self.line("");
        if has_defaults {
            let lead: &[&str] = if base.is_some() { &["base: Default::default()"] } else { &[] };
            self.default_impl(&name, lead, members, &[]);
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
        if self.preserve_class_slices || self.preserves_slices(abs) {
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

    /// The unit's class factory: every class it defines, by type id and compact id.
    pub(super) fn gen_class_factory(&mut self) {
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

    /// The path of the class factory of the compilation unit, as seen from here.
    pub(super) fn unit_factory(&self) -> String {
        let up = "super::".repeat(self.module.len());
        format!(
            "{}::encoding::ClassFactory {{ create: {up}__floe_classes::create, compact: {up}__floe_classes::compact }}",
            self.f
        )
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
    pub(super) fn preserves_slices(&self, abs: &str) -> bool {
        self.any_in_base_chain(abs, |d| d.metadata.iter().any(|m| m == "preserve-slice"))
    }

    /// A class with operations, or implementing interfaces, or deriving from such a class: it
    /// has a proxy type and a servant trait (`<Name>Disp`), as in Ice 3.7.
    pub(super) fn class_has_proxy(&self, abs: &str) -> bool {
        self.any_in_base_chain(abs, |d| {
            matches!(&d.kind, DefKind::Class { ops, implements, forward: false, .. } if !ops.is_empty() || !implements.is_empty())
        })
    }
}
