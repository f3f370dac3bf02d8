//! Interfaces (and classes with operations): what is generated for one, and the facts about
//! operations the client and server sides share (inherited operations, type ids, declared
//! exceptions, modes, formats, result types).
//!
//! - [`proxy`]: the typed proxy `NamePrx` with an async and a `_blocking` method per operation,
//!   and the error enum `NameOpError` of each operation that declares exceptions;
//! - [`batch`]: `NameBatch`, synchronous queuing of batched oneway requests;
//! - [`servant`]: the servant trait `Name` (`NameDisp` for a class) and the dispatcher
//!   `NameServer<T>`.

mod batch;
mod proxy;
mod servant;

use std::collections::{BTreeSet, HashSet};

use super::{camel, ident, Gen};
use crate::ast::*;
use crate::check::SymKind;

/// True when an operation returns something (a result or out parameters): it can only be
/// called twoway, and has no batched form.
fn returns_values(o: &Operation) -> bool {
    o.ret.is_some() || o.params.iter().any(|p| p.out)
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
    /// The `floe::codegen` function that sends a request with this tail.
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

impl<'a> Gen<'a> {
    /// Everything generated for an interface, or a class with operations: the operations'
    /// error enums, the proxy, the batch writer, the servant trait and the dispatcher.
    pub(super) fn gen_interface(&mut self, d: &Definition, abs: &str) {
        let ops = self.interface_ops(abs);
        let prx = format!("{}Prx", ident(&d.name));
        self.gen_error_enums(d, abs, &ops);
        self.gen_proxy(d, abs, &prx, &ops);
        self.gen_batch_writer(d, abs, &prx, &ops);
        let servant = self.gen_servant_trait(d, abs, &ops);
        self.gen_dispatcher(d, abs, &servant, &ops);
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

    /// The sorted type ids of the interface, its bases and `::Ice::Object`.
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

    /// The format of an operation's classes and exceptions: its own `format:` metadata, else
    /// its interface's, else (`Default`, as with `format:default`) the communicator's
    /// `Ice.Default.SlicedFormat`.
    fn op_format(&self, o: &Operation, iface: &Definition) -> &'static str {
        let format = |md: &[String]| {
            md.iter().find_map(|m| match m.as_str() {
                "format:sliced" => Some("Sliced"),
                "format:compact" => Some("Compact"),
                "format:default" => Some("Default"),
                _ => None,
            })
        };
        format(&o.metadata).or_else(|| format(&iface.metadata)).unwrap_or("Default")
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

    /// How a sequence of type `t` that ends the parameters or results is sent from its own
    /// memory, if it can be.
    fn separate_tail(&self, t: &TypeRef) -> Option<SeparateTail> {
        match self.resolved(t).map(|(d, _)| &d.kind) {
            _ if self.is_byte_seq_bytes(t) => Some(SeparateTail::Bytes),
            Some(DefKind::Sequence { elem }) if self.layout(elem, 0).is_some() => Some(SeparateTail::WireLayout),
            _ => None,
        }
    }
}

/// The invocation mode of an operation. As with Ice's compilers, `["nonmutating"]` changes
/// the mode of idempotent operations only: on any other it is sent (and expected) as `Normal`.
fn op_mode(o: &Operation) -> &'static str {
    if o.idempotent && o.metadata.iter().any(|m| m == "nonmutating") {
        "Nonmutating"
    } else if o.idempotent {
        "Idempotent"
    } else {
        "Normal"
    }
}
