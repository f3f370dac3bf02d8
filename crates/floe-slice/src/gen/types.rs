//! Slice types: the Rust type each maps to (as a field, a parameter, a result), and the
//! properties the generator decides on: fixed encoded sizes, bulk-copyable memory layouts,
//! whether a type can be a map key, is `Copy`, or holds classes or proxies.

use std::collections::HashSet;

use super::Gen;
use crate::ast::*;

impl<'a> Gen<'a> {
    /// The definition a named type refers to, with its absolute name.
    pub(super) fn resolved(&self, t: &TypeRef) -> Option<(&'a Definition, String)> {
        match t {
            TypeRef::Named { resolved: Some(abs), .. } => self.unit.lookup(abs).map(|(_, d)| (d, abs.clone())),
            _ => None,
        }
    }

    /// True when `abs` names a class.
    pub(super) fn is_class(&self, abs: &str) -> bool {
        matches!(self.unit.lookup(abs).map(|(_, d)| &d.kind), Some(DefKind::Class { .. }))
    }

    /// True when `abs` names an interface.
    pub(super) fn is_interface(&self, abs: &str) -> bool {
        matches!(self.unit.lookup(abs).map(|(_, d)| &d.kind), Some(DefKind::Interface { .. }))
    }

    /// A class (or `Value`/`Object`, or an interface) passed by value.
    pub(super) fn is_class_type(&self, t: &TypeRef) -> bool {
        match t {
            TypeRef::Builtin(Builtin::Object | Builtin::Value, _) => true,
            TypeRef::Named { proxy: false, resolved: Some(abs), .. } => self.is_class(abs) || self.is_interface(abs),
            _ => false,
        }
    }

    /// True for a byte sequence mapped to `Bytes` (not `["rust:vec"]`).
    pub(super) fn is_byte_seq_bytes(&self, t: &TypeRef) -> bool {
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

    /// True when the Rust type is `Copy` (numbers, bools, enums): passed by value.
    pub(super) fn is_copy(&self, t: &TypeRef) -> bool {
        match t {
            TypeRef::Builtin(b, _) => !matches!(
                b,
                Builtin::String | Builtin::ObjectProxy | Builtin::Object | Builtin::Value | Builtin::LocalObject
            ),
            TypeRef::Named { proxy: true, .. } => false,
            TypeRef::Named { .. } => matches!(self.resolved(t).map(|(d, _)| &d.kind), Some(DefKind::Enum { .. })),
        }
    }

    /// True when the Rust type is `Eq + Hash + Ord`: it can be a dictionary key, and a struct
    /// of such members derives those traits.
    pub(super) fn keyable(&self, t: &TypeRef, depth: usize) -> bool {
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

    /// Encoded size when fixed, else `None`.
    pub(super) fn fixed_size(&self, t: &TypeRef, depth: usize) -> Option<usize> {
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

    /// The smallest encoded size of a value of the type (what reserving room for a sequence
    /// assumes).
    pub(super) fn min_size(&self, t: &TypeRef, depth: usize) -> usize {
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
    pub(super) fn layout(&self, t: &TypeRef, depth: usize) -> Option<(usize, usize)> {
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

    /// (size, alignment) of a struct of these members when it can be bulk-copied.
    pub(super) fn struct_layout(&self, members: &[Member], depth: usize) -> Option<(usize, usize)> {
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

    /// True when values of the type can hold class instances (or interfaces by value).
    pub(super) fn uses_class(&self, t: &TypeRef, seen: &mut HashSet<String>) -> bool {
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
    pub(super) fn is_plain_data(&self, t: &TypeRef, seen: &mut HashSet<String>) -> bool {
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

    /// The Rust type of a Slice type, as a field, a servant's parameter or a result.
    pub(super) fn rust_type(&self, t: &TypeRef) -> String {
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
    pub(super) fn param_type(&self, t: &TypeRef) -> String {
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

    /// The Rust type of a data member (`Option<…>` when it is optional).
    pub(super) fn member_type(&self, m: &Member) -> String {
        let t = self.rust_type(&m.ty);
        if m.tag.is_some() && !t.starts_with("Option<") {
            format!("Option<{t}>")
        } else {
            t
        }
    }
}
