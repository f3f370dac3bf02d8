//! Type descriptions made by generated code (`IcePy.defineStruct`, `IcePy.defineSequence`, …):
//! what the marshaler needs to know of each Slice type.
//!
//! Proxies, classes and exceptions may be declared before they are defined (a Slice forward
//! declaration, or two modules that refer to each other), so a description is made once per type
//! id and filled in when its definition comes.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

/// The description of one Slice type, as generated code holds it (`_t_Point`).
#[pyclass(frozen, module = "IcePy")]
pub struct TypeInfo {
    /// The Slice type id (`::Demo::Point`), or the builtin's name (`int`).
    pub id: String,
    kind: OnceLock<Kind>,
}

/// A builtin type of fixed size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
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
}

impl Primitive {
    /// The encoded size in bytes.
    pub fn size(self) -> usize {
        match self {
            Primitive::Bool | Primitive::Byte => 1,
            Primitive::Short => 2,
            Primitive::Int | Primitive::Float => 4,
            Primitive::Long | Primitive::Double => 8,
        }
    }
}

/// A data member of a struct, an exception or a class, or a parameter of an operation.
pub struct Member {
    /// The member's name as an attribute of the Python object.
    pub name: Py<PyString>,
    /// Its type.
    pub ty: Py<TypeInfo>,
    /// Declared `optional(tag)`.
    pub optional: bool,
    /// The tag of an optional member.
    pub tag: i32,
}

/// What a description says of its type.
pub enum Kind {
    /// `bool` … `double`.
    Primitive(Primitive),
    /// `string`.
    String,
    /// `sequence<T>`.
    Sequence(Py<TypeInfo>),
    /// `dictionary<K, V>`.
    Dictionary(Py<TypeInfo>, Py<TypeInfo>),
    /// A struct: its Python class and members; `fixed` is its encoded size when every member
    /// has a fixed size.
    Struct { class: Py<PyAny>, members: Vec<Member>, fixed: Option<usize> },
    /// An enumeration: its Python class and enumerators by value.
    Enum { class: Py<PyAny>, enumerators: HashMap<i32, Py<PyAny>>, max: i32 },
    /// A proxy type: the Python class of its proxies.
    Proxy(Py<PyAny>),
    /// A user exception: its Python class, base type, required members (in order) and
    /// optional members (by tag).
    Exception { class: Py<PyAny>, base: Option<Py<TypeInfo>>, members: Vec<Member>, optional: Vec<Member> },
    /// An interface's servant type, or the value type of an interface: described, not marshaled.
    Class { class: Py<PyAny> },
    /// A class: its Python class, compact id, base class, required members (in order) and
    /// optional members (by tag).
    Value {
        class: Py<PyAny>,
        compact_id: Option<i32>,
        base: Option<Py<TypeInfo>>,
        members: Vec<Member>,
        optional: Vec<Member>,
    },
}

impl TypeInfo {
    fn new(id: &str, kind: Option<Kind>) -> TypeInfo {
        let cell = OnceLock::new();
        if let Some(k) = kind {
            let _ = cell.set(k);
        }
        TypeInfo { id: id.to_owned(), kind: cell }
    }

    /// What the type is; a declared type that was never defined is a `ValueError`.
    pub fn kind(&self) -> PyResult<&Kind> {
        self.kind.get().ok_or_else(|| PyValueError::new_err(format!("type `{}' is declared but not defined", self.id)))
    }

    /// The encoded size of the type when it is fixed (primitives and structs of them).
    pub fn fixed_size(&self) -> Option<usize> {
        match self.kind.get()? {
            Kind::Primitive(p) => Some(p.size()),
            Kind::Struct { fixed, .. } => *fixed,
            _ => None,
        }
    }
}

#[pymethods]
impl TypeInfo {
    fn __repr__(&self) -> String {
        format!("<IcePy.TypeInfo {}>", self.id)
    }
}

/// The descriptions that are made once per type id: proxies, classes and exceptions.
#[derive(Default)]
struct Registry {
    proxies: HashMap<String, Py<TypeInfo>>,
    classes: HashMap<String, Py<TypeInfo>>,
    exceptions: HashMap<String, Py<TypeInfo>>,
    compact_ids: HashMap<i32, &'static str>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// The description registered for `id` in the map `pick` chooses, made (undefined) if absent.
fn declared(
    py: Python<'_>,
    id: &str,
    pick: fn(&mut Registry) -> &mut HashMap<String, Py<TypeInfo>>,
) -> PyResult<Py<TypeInfo>> {
    let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = pick(&mut reg).get(id) {
        return Ok(t.clone_ref(py));
    }
    let t = Py::new(py, TypeInfo::new(id, None))?;
    pick(&mut reg).insert(id.to_owned(), t.clone_ref(py));
    Ok(t)
}

/// Fills in the description registered for `id`; a second definition is ignored, as a module
/// loaded twice defines its types twice.
fn define_registered(
    py: Python<'_>,
    id: &str,
    pick: fn(&mut Registry) -> &mut HashMap<String, Py<TypeInfo>>,
    kind: Kind,
) -> PyResult<Py<TypeInfo>> {
    let t = declared(py, id, pick)?;
    let _ = t.get().kind.set(kind);
    Ok(t)
}

/// The defined exception with type id `id`, if any.
pub fn find_exception(py: Python<'_>, id: &str) -> Option<Py<TypeInfo>> {
    let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    reg.exceptions.get(id).filter(|t| t.get().kind.get().is_some()).map(|t| t.clone_ref(py))
}

/// The defined class with type id `id`, if any.
pub fn find_class(py: Python<'_>, id: &str) -> Option<Py<TypeInfo>> {
    let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    reg.classes.get(id).filter(|t| matches!(t.get().kind.get(), Some(Kind::Value { .. }))).map(|t| t.clone_ref(py))
}

/// The type id of the class with compact id `id`, if one was defined.
pub fn compact_type_id(id: i32) -> Option<&'static str> {
    registry().lock().unwrap_or_else(|e| e.into_inner()).compact_ids.get(&id).copied()
}

/// A `'static` copy of a type id, made once per id.
pub fn intern_id(id: &str) -> &'static str {
    static IDS: OnceLock<Mutex<std::collections::HashSet<&'static str>>> = OnceLock::new();
    let mut ids = IDS.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = ids.get(id) {
        return s;
    }
    let s: &'static str = Box::leak(id.to_owned().into_boxed_str());
    ids.insert(s);
    s
}

/// Reads generated code's member tuples: `(name, metadata, type)` for structs, and
/// `(name, metadata, type, optional, tag)` for exceptions, classes and parameters.
pub fn members(py: Python<'_>, tuples: &Bound<'_, PyTuple>) -> PyResult<Vec<Member>> {
    let mut out = Vec::with_capacity(tuples.len());
    for item in tuples.iter() {
        let t = item.cast::<PyTuple>()?;
        let name: String = t.get_item(0)?.extract()?;
        let ty: Py<TypeInfo> = t.get_item(2)?.extract()?;
        let (optional, tag) =
            if t.len() >= 5 { (t.get_item(3)?.extract()?, t.get_item(4)?.extract()?) } else { (false, 0) };
        out.push(Member { name: PyString::intern(py, &name).unbind(), ty, optional, tag });
    }
    Ok(out)
}

fn builtin(py: Python<'_>, name: &str, kind: Kind) -> PyResult<Py<TypeInfo>> {
    Py::new(py, TypeInfo::new(name, Some(kind)))
}

/// Adds the builtin descriptions (`_t_bool` … `_t_string`, `_t_ObjectPrx`, `_t_Value`,
/// `_t_Object`) and the `define*` / `declare*` functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for (name, p) in [
        ("bool", Primitive::Bool),
        ("byte", Primitive::Byte),
        ("short", Primitive::Short),
        ("int", Primitive::Int),
        ("long", Primitive::Long),
        ("float", Primitive::Float),
        ("double", Primitive::Double),
    ] {
        m.add(format!("_t_{name}"), builtin(py, name, Kind::Primitive(p))?)?;
    }
    m.add("_t_string", builtin(py, "string", Kind::String)?)?;
    m.add("_t_ObjectPrx", declared(py, "::Ice::Object", |r| &mut r.proxies)?)?;
    m.add("_t_Value", declared(py, "::Ice::Object", |r| &mut r.classes)?)?;
    m.add("_t_Object", declared(py, "::Ice::Object", |r| &mut r.classes)?)?;
    m.add_function(wrap_pyfunction!(define_struct, m)?)?;
    m.add_function(wrap_pyfunction!(define_sequence, m)?)?;
    m.add_function(wrap_pyfunction!(define_dictionary, m)?)?;
    m.add_function(wrap_pyfunction!(define_enum, m)?)?;
    m.add_function(wrap_pyfunction!(declare_proxy, m)?)?;
    m.add_function(wrap_pyfunction!(define_proxy, m)?)?;
    m.add_function(wrap_pyfunction!(declare_value, m)?)?;
    m.add_function(wrap_pyfunction!(declare_class, m)?)?;
    m.add_function(wrap_pyfunction!(define_value, m)?)?;
    m.add_function(wrap_pyfunction!(define_class, m)?)?;
    m.add_function(wrap_pyfunction!(define_exception, m)?)?;
    Ok(())
}

/// `IcePy.defineStruct(id, cls, metadata, members)`.
#[pyfunction]
#[pyo3(name = "defineStruct")]
fn define_struct(
    py: Python<'_>,
    id: &str,
    cls: Py<PyAny>,
    _metadata: &Bound<'_, PyAny>,
    members: &Bound<'_, PyTuple>,
) -> PyResult<Py<TypeInfo>> {
    let members = self::members(py, members)?;
    let fixed = members.iter().map(|m| m.ty.get().fixed_size()).sum::<Option<usize>>();
    builtin(py, id, Kind::Struct { class: cls, members, fixed })
}

/// `IcePy.defineSequence(id, metadata, element)`.
#[pyfunction]
#[pyo3(name = "defineSequence")]
fn define_sequence(
    py: Python<'_>,
    id: &str,
    _metadata: &Bound<'_, PyAny>,
    element: Py<TypeInfo>,
) -> PyResult<Py<TypeInfo>> {
    builtin(py, id, Kind::Sequence(element))
}

/// `IcePy.defineDictionary(id, metadata, key, value)`.
#[pyfunction]
#[pyo3(name = "defineDictionary")]
fn define_dictionary(
    py: Python<'_>,
    id: &str,
    _metadata: &Bound<'_, PyAny>,
    key: Py<TypeInfo>,
    value: Py<TypeInfo>,
) -> PyResult<Py<TypeInfo>> {
    builtin(py, id, Kind::Dictionary(key, value))
}

/// `IcePy.defineEnum(id, cls, metadata, enumerators)`: `enumerators` maps values to the
/// class's instances.
#[pyfunction]
#[pyo3(name = "defineEnum")]
fn define_enum(
    py: Python<'_>,
    id: &str,
    cls: Py<PyAny>,
    _metadata: &Bound<'_, PyAny>,
    enumerators: &Bound<'_, PyDict>,
) -> PyResult<Py<TypeInfo>> {
    let mut map = HashMap::new();
    for (k, v) in enumerators.iter() {
        map.insert(k.extract::<i32>()?, v.unbind());
    }
    let max = map.keys().copied().max().unwrap_or(0);
    builtin(py, id, Kind::Enum { class: cls, enumerators: map, max })
}

/// `IcePy.declareProxy(id)`.
#[pyfunction]
#[pyo3(name = "declareProxy")]
fn declare_proxy(py: Python<'_>, id: &str) -> PyResult<Py<TypeInfo>> {
    declared(py, id, |r| &mut r.proxies)
}

/// `IcePy.defineProxy(id, cls)`.
#[pyfunction]
#[pyo3(name = "defineProxy")]
fn define_proxy(py: Python<'_>, id: &str, cls: Py<PyAny>) -> PyResult<Py<TypeInfo>> {
    define_registered(py, id, |r| &mut r.proxies, Kind::Proxy(cls))
}

/// `IcePy.declareValue(id)`.
#[pyfunction]
#[pyo3(name = "declareValue")]
fn declare_value(py: Python<'_>, id: &str) -> PyResult<Py<TypeInfo>> {
    declared(py, id, |r| &mut r.classes)
}

/// `IcePy.declareClass(id)`: an interface's servant type.
#[pyfunction]
#[pyo3(name = "declareClass")]
fn declare_class(py: Python<'_>, id: &str) -> PyResult<Py<TypeInfo>> {
    Py::new(py, TypeInfo::new(id, None))
}

/// `IcePy.defineValue(id, cls, compactId, metadata, preserve, interface, base, members)`.
#[pyfunction]
#[pyo3(name = "defineValue")]
#[allow(clippy::too_many_arguments)]
fn define_value(
    py: Python<'_>,
    id: &str,
    cls: Py<PyAny>,
    compact_id: i32,
    _metadata: &Bound<'_, PyAny>,
    _preserve: bool,
    interface: bool,
    base: &Bound<'_, PyAny>,
    members: &Bound<'_, PyTuple>,
) -> PyResult<Py<TypeInfo>> {
    if interface {
        // `_t_Hello`: the value type of an interface, which only `Object` proxies' values use.
        return builtin(py, id, Kind::Class { class: cls });
    }
    let base = if base.is_none() { None } else { Some(base.extract::<Py<TypeInfo>>()?) };
    let (mut optional, members): (Vec<Member>, Vec<Member>) =
        self::members(py, members)?.into_iter().partition(|m| m.optional);
    optional.sort_by_key(|m| m.tag);
    let compact_id = (compact_id >= 0).then_some(compact_id);
    if let Some(c) = compact_id {
        registry().lock().unwrap_or_else(|e| e.into_inner()).compact_ids.insert(c, intern_id(id));
    }
    define_registered(py, id, |r| &mut r.classes, Kind::Value { class: cls, compact_id, base, members, optional })
}

/// `IcePy.defineClass(id, cls, metadata, base, interfaces)`: an interface's servant type.
#[pyfunction]
#[pyo3(name = "defineClass")]
fn define_class(
    py: Python<'_>,
    id: &str,
    cls: Py<PyAny>,
    _metadata: &Bound<'_, PyAny>,
    _base: &Bound<'_, PyAny>,
    _interfaces: &Bound<'_, PyAny>,
) -> PyResult<Py<TypeInfo>> {
    builtin(py, id, Kind::Class { class: cls })
}

/// `IcePy.defineException(id, cls, metadata, preserve, base, members)`.
#[pyfunction]
#[pyo3(name = "defineException")]
fn define_exception(
    py: Python<'_>,
    id: &str,
    cls: Py<PyAny>,
    _metadata: &Bound<'_, PyAny>,
    _preserve: bool,
    base: Option<Py<TypeInfo>>,
    members: &Bound<'_, PyTuple>,
) -> PyResult<Py<TypeInfo>> {
    let (mut optional, members): (Vec<Member>, Vec<Member>) =
        self::members(py, members)?.into_iter().partition(|m| m.optional);
    optional.sort_by_key(|m| m.tag);
    define_registered(py, id, |r| &mut r.exceptions, Kind::Exception { class: cls, base, members, optional })
}
