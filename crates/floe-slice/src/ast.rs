//! The Slice syntax tree.

use crate::diag::Span;

/// A built-in type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `bool`
    Bool,
    /// `byte`
    Byte,
    /// `short`
    Short,
    /// `int`
    Int,
    /// `long`
    Long,
    /// `float`
    Float,
    /// `double`
    Double,
    /// `string`
    String,
    /// `Object` (a class instance of any type, in 3.7 syntax)
    Object,
    /// `Object*` (a proxy to any object)
    ObjectProxy,
    /// `Value`
    Value,
    /// `LocalObject`
    LocalObject,
}

impl Builtin {
    /// The Slice spelling.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Bool => "bool",
            Builtin::Byte => "byte",
            Builtin::Short => "short",
            Builtin::Int => "int",
            Builtin::Long => "long",
            Builtin::Float => "float",
            Builtin::Double => "double",
            Builtin::String => "string",
            Builtin::Object => "Object",
            Builtin::ObjectProxy => "Object*",
            Builtin::Value => "Value",
            Builtin::LocalObject => "LocalObject",
        }
    }
}

/// A reference to a type.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeRef {
    /// A built-in type.
    Builtin(Builtin, Span),
    /// A user-defined type, by name; `proxy` for `Name*`. `resolved` is filled in by the
    /// checker with the absolute scoped name (`::M::Name`).
    Named {
        /// The name as written.
        name: String,
        /// `Name*`.
        proxy: bool,
        /// Where.
        span: Span,
        /// Absolute name after resolution.
        resolved: Option<String>,
    },
}

impl TypeRef {
    /// Where it was written.
    pub fn span(&self) -> Span {
        match self {
            TypeRef::Builtin(_, s) => *s,
            TypeRef::Named { span, .. } => *span,
        }
    }
}

/// A constant value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// `true` / `false`.
    Bool(bool),
    /// A name: an enumerator or another constant.
    Name(String, Span),
}

/// A data member of a struct, class or exception.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: TypeRef,
    /// `optional(tag)`.
    pub tag: Option<i32>,
    /// Default value.
    pub default: Option<ConstValue>,
    /// Metadata.
    pub metadata: Vec<String>,
    /// Doc comment.
    pub doc: Option<String>,
    /// Where.
    pub span: Span,
}

/// A parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: TypeRef,
    /// `out` parameter.
    pub out: bool,
    /// `optional(tag)`.
    pub tag: Option<i32>,
    /// Metadata.
    pub metadata: Vec<String>,
    /// Where.
    pub span: Span,
}

/// An operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Name.
    pub name: String,
    /// Return type (`None` for void).
    pub ret: Option<TypeRef>,
    /// `optional(tag)` on the return type.
    pub ret_tag: Option<i32>,
    /// Parameters in declaration order.
    pub params: Vec<Param>,
    /// `idempotent`.
    pub idempotent: bool,
    /// `throws` list, as written (resolved names filled in by the checker).
    pub throws: Vec<(String, Span, Option<String>)>,
    /// Metadata.
    pub metadata: Vec<String>,
    /// Doc comment.
    pub doc: Option<String>,
    /// Where.
    pub span: Span,
}

/// An enumerator.
#[derive(Debug, Clone, PartialEq)]
pub struct Enumerator {
    /// Name.
    pub name: String,
    /// Explicit value, if written.
    pub explicit: Option<ConstValue>,
    /// Final value (filled in by the checker).
    pub value: i64,
    /// Doc comment.
    pub doc: Option<String>,
    /// Where.
    pub span: Span,
}

/// The kinds of definition.
#[derive(Debug, Clone, PartialEq)]
pub enum DefKind {
    /// `module M { … }`
    Module(Vec<Definition>),
    /// `interface I extends A, B { … }` (or a forward declaration).
    Interface {
        /// Bases as written, with resolved names.
        bases: Vec<(String, Span, Option<String>)>,
        /// Operations.
        ops: Vec<Operation>,
        /// A forward declaration.
        forward: bool,
    },
    /// `class C extends B { … }` (or a forward declaration).
    Class {
        /// Base class.
        base: Option<(String, Span, Option<String>)>,
        /// Interfaces it implements (`implements I1, I2`; 3.7 classes with operations).
        implements: Vec<(String, Span, Option<String>)>,
        /// Compact type id.
        compact_id: Option<i32>,
        /// A compact type id given as the name of an integer constant (resolved by the checker
        /// into `compact_id`).
        compact_id_name: Option<(String, Span)>,
        /// Data members.
        members: Vec<Member>,
        /// Operations (3.7 classes with operations: generated as a proxy and servant trait).
        ops: Vec<Operation>,
        /// A forward declaration.
        forward: bool,
    },
    /// `exception E extends B { … }`
    Exception {
        /// Base exception.
        base: Option<(String, Span, Option<String>)>,
        /// Data members.
        members: Vec<Member>,
    },
    /// `struct S { … }`
    Struct {
        /// Data members.
        members: Vec<Member>,
    },
    /// `enum E { … }`
    Enum {
        /// Enumerators.
        enumerators: Vec<Enumerator>,
    },
    /// `sequence<T> S;`
    Sequence {
        /// Element type.
        elem: TypeRef,
    },
    /// `dictionary<K, V> D;`
    Dictionary {
        /// Key type.
        key: TypeRef,
        /// Value type.
        value: TypeRef,
    },
    /// `const T NAME = value;`
    Const {
        /// Type.
        ty: TypeRef,
        /// Value.
        value: ConstValue,
        /// For a string constant, the literal's text as written between the quotes, escapes
        /// not processed (Slice checksums hash Ice's own rendering of it).
        literal: Option<String>,
    },
}

/// A named definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Name.
    pub name: String,
    /// What it is.
    pub kind: DefKind,
    /// `local`.
    pub local: bool,
    /// Metadata.
    pub metadata: Vec<String>,
    /// Doc comment.
    pub doc: Option<String>,
    /// Comes from an included file (not generated).
    pub included: bool,
    /// Where.
    pub span: Span,
}
