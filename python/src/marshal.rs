//! Python values to and from the Ice encoding, driven by the type descriptions of
//! [`crate::types`]: what `IcePy` does for every parameter, result, struct member and exception.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

use floe::encoding::{
    AnyClass, ClassFactory, ClassType, ClassValue, Decoder, Encoder, OptionalFormat, UnknownSlicedValue,
};
use floe::ObjectPrx;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::errors;
use crate::proxy::Proxy;
use crate::types::{self, Kind, Member, Primitive, TypeInfo};

/// Why a value could not be written.
pub enum WriteError {
    /// The value does not fit its type; the container that holds it says which one it was.
    Invalid,
    /// A Python error already made.
    Py(PyErr),
}

impl From<PyErr> for WriteError {
    fn from(e: PyErr) -> Self {
        WriteError::Py(e)
    }
}

/// A result of writing.
pub type WriteResult = Result<(), WriteError>;

/// Turns an invalid value into the `ValueError` that names where it was (`what`).
pub fn in_context(r: WriteResult, what: impl FnOnce() -> String) -> PyResult<()> {
    match r {
        Ok(()) => Ok(()),
        Err(WriteError::Invalid) => Err(PyValueError::new_err(format!("invalid value for {}", what()))),
        Err(WriteError::Py(e)) => Err(e),
    }
}

fn nested(r: WriteResult, what: impl FnOnce() -> String) -> WriteResult {
    in_context(r, what).map_err(WriteError::Py)
}

/// What reading needs besides the bytes: the communicator that proxies belong to.
pub struct ReadContext<'a> {
    /// The communicator of the proxies read.
    pub communicator: &'a floe::Communicator,
    /// Its Python object, which the proxies read hand out.
    pub py_communicator: &'a Py<PyAny>,
}

/// The `Ice.Unset` marker of absent optional values.
pub fn unset(py: Python<'_>) -> Bound<'_, PyAny> {
    crate::UNSET.get().expect("IcePy is initialized").bind(py).clone()
}

/// Writes `v` as a value of `ty`.
pub fn write(ty: &TypeInfo, v: &Bound<'_, PyAny>, enc: &mut Encoder) -> WriteResult {
    match ty.kind()? {
        Kind::Primitive(p) => write_primitive(*p, v, enc),
        Kind::String => {
            if v.is_none() {
                enc.write_size(0);
                return Ok(());
            }
            let s = v.cast::<PyString>().map_err(|_| WriteError::Invalid)?;
            enc.write_str(&s.to_cow().map_err(|_| WriteError::Invalid)?);
            Ok(())
        }
        Kind::Sequence(elem) => write_sequence(ty, elem.get(), v, enc),
        Kind::Dictionary(k, val) => {
            if v.is_none() {
                enc.write_size(0);
                return Ok(());
            }
            let d = v.cast::<PyDict>().map_err(|_| WriteError::Invalid)?;
            enc.write_size(d.len());
            for (key, value) in d.iter() {
                nested(write(k.get(), &key, enc), || format!("key `{key}' of `{}'", ty.id))?;
                nested(write(val.get(), &value, enc), || format!("value of key `{key}' of `{}'", ty.id))?;
            }
            Ok(())
        }
        Kind::Struct { class, members, .. } => {
            let owned;
            let v = if v.is_none() {
                owned = class.bind(v.py()).call0()?;
                &owned
            } else {
                v
            };
            if !v.is_instance(class.bind(v.py()))? {
                return Err(WriteError::Invalid);
            }
            for m in members {
                let value = v.getattr(m.name.bind(v.py()))?;
                nested(write(m.ty.get(), &value, enc), || format!("{} member `{}'", ty.id, m.name))?;
            }
            Ok(())
        }
        Kind::Enum { class, max, .. } => {
            if !v.is_instance(class.bind(v.py()))? {
                return Err(WriteError::Invalid);
            }
            let value: i32 = v.getattr("_value")?.extract()?;
            enc.write_enum(value, *max);
            Ok(())
        }
        Kind::Proxy(_) => {
            if v.is_none() {
                ObjectPrx::encode_nullable(None, enc);
                return Ok(());
            }
            let p = v.cast::<Proxy>().map_err(|_| WriteError::Invalid)?;
            ObjectPrx::encode_nullable(Some(&p.get().inner), enc);
            Ok(())
        }
        Kind::Exception { .. } => Err(WriteError::Invalid),
        Kind::Class { .. } => Err(WriteError::Py(errors::marshal(format!(
            "`{}' is an interface: its instances travel as proxies",
            ty.id
        )))),
        Kind::Value { .. } => write_value(v, enc),
    }
}

fn write_primitive(p: Primitive, v: &Bound<'_, PyAny>, enc: &mut Encoder) -> WriteResult {
    let bad = |_| WriteError::Invalid;
    match p {
        Primitive::Bool => enc.write_bool(v.is_truthy()?),
        Primitive::Byte => {
            let b: i64 = v.extract().map_err(bad)?;
            if !(0..=255).contains(&b) {
                return Err(WriteError::Invalid);
            }
            enc.write_u8(b as u8)
        }
        Primitive::Short => enc.write_i16(v.extract().map_err(bad)?),
        Primitive::Int => enc.write_i32(v.extract().map_err(bad)?),
        Primitive::Long => enc.write_i64(v.extract().map_err(bad)?),
        Primitive::Float => {
            let f: f64 = v.extract().map_err(bad)?;
            if f.is_finite() && f.abs() > f32::MAX as f64 {
                return Err(WriteError::Invalid);
            }
            enc.write_f32(f as f32)
        }
        Primitive::Double => enc.write_f64(v.extract().map_err(bad)?),
    }
    Ok(())
}

fn write_sequence(ty: &TypeInfo, elem: &TypeInfo, v: &Bound<'_, PyAny>, enc: &mut Encoder) -> WriteResult {
    if v.is_none() {
        enc.write_size(0);
        return Ok(());
    }
    if matches!(elem.kind()?, Kind::Primitive(Primitive::Byte)) {
        if let Ok(b) = v.cast::<PyBytes>() {
            enc.write_byte_seq(b.as_bytes());
            return Ok(());
        }
        if let Ok(b) = v.cast::<PyByteArray>() {
            enc.write_byte_seq(&b.to_vec());
            return Ok(());
        }
    }
    if v.is_instance_of::<PyString>() || v.is_instance_of::<PyDict>() {
        return Err(WriteError::Invalid);
    }
    if let Ok(list) = v.cast::<PyList>() {
        enc.write_size(list.len());
        for (i, item) in list.iter().enumerate() {
            nested(write(elem, &item, enc), || format!("element {i} of `{}'", ty.id))?;
        }
        return Ok(());
    }
    if let Ok(tuple) = v.cast::<PyTuple>() {
        enc.write_size(tuple.len());
        for (i, item) in tuple.iter().enumerate() {
            nested(write(elem, &item, enc), || format!("element {i} of `{}'", ty.id))?;
        }
        return Ok(());
    }
    let items: Vec<Bound<'_, PyAny>> = v.try_iter().map_err(|_| WriteError::Invalid)?.collect::<PyResult<_>>()?;
    enc.write_size(items.len());
    for (i, item) in items.iter().enumerate() {
        nested(write(elem, item, enc), || format!("element {i} of `{}'", ty.id))?;
    }
    Ok(())
}

/// Reads a value of `ty`.
pub fn read(py: Python<'_>, ty: &TypeInfo, dec: &mut Decoder, ctx: &ReadContext<'_>) -> PyResult<Py<PyAny>> {
    let m = errors::marshal_from;
    Ok(match ty.kind()? {
        Kind::Primitive(p) => match p {
            Primitive::Bool => PyBool::new(py, dec.read_bool().map_err(m)?).to_owned().into_any().unbind(),
            Primitive::Byte => dec.read_u8().map_err(m)?.into_pyobject(py)?.into_any().unbind(),
            Primitive::Short => dec.read_i16().map_err(m)?.into_pyobject(py)?.into_any().unbind(),
            Primitive::Int => dec.read_i32().map_err(m)?.into_pyobject(py)?.into_any().unbind(),
            Primitive::Long => dec.read_i64().map_err(m)?.into_pyobject(py)?.into_any().unbind(),
            Primitive::Float => PyFloat::new(py, dec.read_f32().map_err(m)? as f64).into_any().unbind(),
            Primitive::Double => PyFloat::new(py, dec.read_f64().map_err(m)?).into_any().unbind(),
        },
        Kind::String => PyString::new(py, dec.read_str().map_err(m)?).into_any().unbind(),
        Kind::Sequence(elem) => {
            let elem = elem.get();
            if matches!(elem.kind()?, Kind::Primitive(Primitive::Byte)) {
                let bytes = dec.read_byte_seq().map_err(m)?;
                return Ok(PyBytes::new(py, &bytes).into_any().unbind());
            }
            let n = dec.read_seq_len(elem.fixed_size().unwrap_or(1)).map_err(m)?;
            // The list is made once its elements are read: appending one by one grows it, and
            // the collector walks it again at each collection of young objects.
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(read(py, elem, dec, ctx)?);
            }
            PyList::new(py, items)?.into_any().unbind()
        }
        Kind::Dictionary(k, v) => {
            let n = dec.read_seq_len(2).map_err(m)?;
            let d = PyDict::new(py);
            for _ in 0..n {
                let key = read(py, k.get(), dec, ctx)?;
                let value = read(py, v.get(), dec, ctx)?;
                d.set_item(key, value)?;
            }
            d.into_any().unbind()
        }
        Kind::Struct { class, members, .. } => {
            let obj = new_instance(class.bind(py))?;
            read_members(py, members, &obj, dec, ctx)?;
            obj.unbind()
        }
        Kind::Enum { enumerators, max, .. } => {
            let v = dec.read_enum(*max).map_err(m)?;
            match enumerators.get(&v) {
                Some(e) => e.clone_ref(py),
                None => return Err(errors::marshal(format!("invalid enumerator {v} for `{}'", ty.id))),
            }
        }
        Kind::Proxy(class) => match ObjectPrx::decode(ctx.communicator, dec).map_err(m)? {
            None => py.None(),
            Some(p) => Proxy::wrap(py, class.bind(py), p, ctx.py_communicator)?.unbind(),
        },
        Kind::Value { .. } => read_value(py, dec)?,
        Kind::Exception { .. } | Kind::Class { .. } => {
            return Err(errors::marshal(format!("`{}' cannot be read as a value", ty.id)))
        }
    })
}

/// An instance of `class` made without calling its constructor: its members are set next.
pub fn new_instance<'py>(class: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    class.call_method1(pyo3::intern!(class.py(), "__new__"), (class,))
}

/// Reads required members into `obj`'s attributes.
pub fn read_members(
    py: Python<'_>,
    members: &[Member],
    obj: &Bound<'_, PyAny>,
    dec: &mut Decoder,
    ctx: &ReadContext<'_>,
) -> PyResult<()> {
    for member in members {
        let value = read(py, member.ty.get(), dec, ctx)?;
        obj.setattr(member.name.bind(py), value)?;
    }
    Ok(())
}

/// The format an optional value of `ty` is written in.
pub fn optional_format(ty: &TypeInfo) -> PyResult<OptionalFormat> {
    Ok(match ty.kind()? {
        Kind::Primitive(Primitive::Bool | Primitive::Byte) => OptionalFormat::F1,
        Kind::Primitive(Primitive::Short) => OptionalFormat::F2,
        Kind::Primitive(Primitive::Int | Primitive::Float) => OptionalFormat::F4,
        Kind::Primitive(Primitive::Long | Primitive::Double) => OptionalFormat::F8,
        Kind::String => OptionalFormat::VSize,
        Kind::Enum { .. } => OptionalFormat::Size,
        Kind::Struct { fixed, .. } => {
            if fixed.is_some() {
                OptionalFormat::VSize
            } else {
                OptionalFormat::FSize
            }
        }
        Kind::Sequence(e) => {
            if e.get().fixed_size().is_some() {
                OptionalFormat::VSize
            } else {
                OptionalFormat::FSize
            }
        }
        Kind::Dictionary(k, v) => {
            if k.get().fixed_size().is_some() && v.get().fixed_size().is_some() {
                OptionalFormat::VSize
            } else {
                OptionalFormat::FSize
            }
        }
        Kind::Proxy(_) | Kind::Exception { .. } => OptionalFormat::FSize,
        Kind::Class { .. } | Kind::Value { .. } => OptionalFormat::Class,
    })
}

/// The number of elements of a sequence or dictionary value about to be written.
fn element_count(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    if v.is_none() {
        Ok(0)
    } else {
        v.len()
    }
}

/// The bytes a size takes on the wire.
fn size_bytes(n: usize) -> usize {
    if n > 254 {
        5
    } else {
        1
    }
}

/// Writes the optional value `v` (absent when it is `Ice.Unset`) with `tag`.
pub fn write_optional(ty: &TypeInfo, tag: i32, v: &Bound<'_, PyAny>, enc: &mut Encoder) -> WriteResult {
    if v.is(unset(v.py())) {
        return Ok(());
    }
    let format = optional_format(ty)?;
    if !enc.write_optional_tag(tag, format) {
        return Ok(());
    }
    match (format, ty.kind()?) {
        (OptionalFormat::VSize, Kind::Struct { fixed: Some(size), .. }) => enc.write_size(*size),
        (OptionalFormat::VSize, Kind::Sequence(e)) => {
            let size = e.get().fixed_size().unwrap_or(1);
            if size > 1 {
                let n = element_count(v)?;
                enc.write_size(n * size + size_bytes(n));
            }
        }
        (OptionalFormat::VSize, Kind::Dictionary(k, val)) => {
            let n = element_count(v)?;
            let size = k.get().fixed_size().unwrap_or(1) + val.get().fixed_size().unwrap_or(1);
            enc.write_size(n * size + size_bytes(n));
        }
        (OptionalFormat::FSize, _) => {
            let pos = enc.start_fsize();
            write(ty, v, enc)?;
            enc.end_fsize(pos);
            return Ok(());
        }
        _ => {}
    }
    write(ty, v, enc)
}

/// Reads the optional value with `tag`, `Ice.Unset` when it is absent.
pub fn read_optional(
    py: Python<'_>,
    ty: &TypeInfo,
    tag: i32,
    dec: &mut Decoder,
    ctx: &ReadContext<'_>,
) -> PyResult<Py<PyAny>> {
    let format = optional_format(ty)?;
    if !dec.read_optional(tag, format).map_err(errors::marshal_from)? {
        return Ok(unset(py).unbind());
    }
    match (format, ty.kind()?) {
        (OptionalFormat::VSize, Kind::Struct { .. } | Kind::Dictionary(..)) => {
            dec.read_size().map_err(errors::marshal_from)?;
        }
        (OptionalFormat::VSize, Kind::Sequence(e)) if e.get().fixed_size().unwrap_or(1) > 1 => {
            dec.read_size().map_err(errors::marshal_from)?;
        }
        (OptionalFormat::FSize, _) => {
            dec.read_fsize().map_err(errors::marshal_from)?;
        }
        _ => {}
    }
    read(py, ty, dec, ctx)
}

// ---- class instances (encoding 1.1), through floe's class encoding

/// A Python instance of a Slice class as floe's class encoding sees it.
#[derive(Debug)]
pub struct PyValue {
    obj: Py<PyAny>,
    ty: Py<TypeInfo>,
    id: &'static str,
}

thread_local! {
    /// The instances written into the encapsulation being encoded, by Python object: an
    /// instance written twice is written once and referred to after that.
    static WRITTEN: RefCell<HashMap<usize, AnyClass>> = RefCell::new(HashMap::new());
    /// A Python error met inside floe's class encoding, which cannot carry it.
    static CLASS_ERROR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Forgets the instances written so far: called when an encapsulation is written (in
/// encoding 1.1, the only one with classes here, nothing more is written at its end).
pub fn forget_classes() {
    WRITTEN.with(|w| w.borrow_mut().clear());
}

fn class_error() -> Option<PyErr> {
    CLASS_ERROR.with(|e| e.borrow_mut().take())
}

fn keep_class_error(e: PyErr) {
    CLASS_ERROR.with(|slot| {
        slot.borrow_mut().get_or_insert(e);
    });
}

fn is_py_value(t: TypeId) -> bool {
    t == TypeId::of::<PyValue>()
}

fn create_value(id: &str) -> Option<Box<dyn ClassValue>> {
    Python::attach(|py| {
        let ty = types::find_class(py, id)?;
        let Ok(Kind::Value { class, .. }) = ty.get().kind() else { return None };
        match new_instance(class.bind(py)) {
            Ok(obj) => {
                Some(Box::new(PyValue { obj: obj.unbind(), ty, id: types::intern_id(id) }) as Box<dyn ClassValue>)
            }
            Err(e) => {
                keep_class_error(e);
                None
            }
        }
    })
}

/// Creates the Python instances of the classes generated code defined.
const PY_FACTORY: ClassFactory = ClassFactory { create: create_value, compact: types::compact_type_id };

impl ClassType for PyValue {
    const TYPE_ID: &'static str = "::Ice::Object";
    const FACTORY: ClassFactory = PY_FACTORY;
}

impl ClassValue for PyValue {
    fn ice_id(&self) -> &'static str {
        self.id
    }

    fn part(&self, t: TypeId) -> Option<&dyn Any> {
        is_py_value(t).then_some(self as &dyn Any)
    }

    fn part_mut(&mut self, t: TypeId) -> Option<&mut dyn Any> {
        is_py_value(t).then_some(self as &mut dyn Any)
    }

    fn part_checker(&self) -> fn(TypeId) -> bool {
        is_py_value
    }

    fn encode_slices(&self, enc: &mut Encoder) {
        Python::attach(|py| {
            if let Err(e) = self.encode(py, enc) {
                keep_class_error(e);
            }
        })
    }

    fn decode_slices(&mut self, dec: &mut Decoder) -> floe::encoding::Result<()> {
        Python::attach(|py| {
            self.decode(py, dec).map_err(|e| {
                keep_class_error(e);
                floe::encoding::DecodeError::Malformed("a class instance could not be read into Python")
            })
        })
    }
}

impl PyValue {
    /// The class and its bases, most derived first.
    fn chain(&self, py: Python<'_>) -> Vec<Py<TypeInfo>> {
        let mut out = vec![self.ty.clone_ref(py)];
        while let Some(Ok(Kind::Value { base: Some(b), .. })) = out.last().map(|t| t.get().kind()) {
            let b = b.clone_ref(py);
            out.push(b);
        }
        out
    }

    fn encode(&self, py: Python<'_>, enc: &mut Encoder) -> PyResult<()> {
        let obj = self.obj.bind(py);
        if obj.hasattr("ice_preMarshal")? {
            obj.call_method0("ice_preMarshal")?;
        }
        for t in self.chain(py) {
            let t = t.get();
            let Kind::Value { compact_id, base, members, optional, .. } = t.kind()? else { continue };
            enc.start_class_slice(&t.id, *compact_id, base.is_none(), !optional.is_empty());
            for m in members {
                let v = obj.getattr(m.name.bind(py))?;
                in_context(write(m.ty.get(), &v, enc), || format!("{} member `{}'", t.id, m.name))?;
            }
            for m in optional {
                let v = obj.getattr(m.name.bind(py))?;
                in_context(write_optional(m.ty.get(), m.tag, &v, enc), || format!("{} member `{}'", t.id, m.name))?;
            }
            enc.end_class_slice();
        }
        Ok(())
    }

    fn decode(&self, py: Python<'_>, dec: &mut Decoder) -> PyResult<()> {
        let obj = self.obj.bind(py);
        let communicator = dec_communicator(py)?;
        let ctx = ReadContext { communicator: &communicator.0, py_communicator: &communicator.1 };
        for t in self.chain(py) {
            let t = t.get();
            let Kind::Value { members, optional, .. } = t.kind()? else { continue };
            dec.start_class_slice().map_err(errors::marshal_from)?;
            read_members(py, members, obj, dec, &ctx)?;
            for m in optional {
                let v = read_optional(py, m.ty.get(), m.tag, dec, &ctx)?;
                obj.setattr(m.name.bind(py), v)?;
            }
            dec.end_class_slice().map_err(errors::marshal_from)?;
        }
        if obj.hasattr("ice_postUnmarshal")? {
            obj.call_method0("ice_postUnmarshal")?;
        }
        Ok(())
    }
}

thread_local! {
    /// The communicator of the encapsulation being read (for proxies inside class instances,
    /// which floe's class decoding reads without a context of ours).
    static READING: RefCell<Option<(floe::Communicator, Py<PyAny>)>> = const { RefCell::new(None) };
}

/// Runs `read` with `ctx` as the context of the class instances it reads.
pub fn with_read_context<R>(py: Python<'_>, ctx: &ReadContext<'_>, read: impl FnOnce() -> R) -> R {
    let previous = READING.with(|r| r.replace(Some((ctx.communicator.clone(), ctx.py_communicator.clone_ref(py)))));
    let out = read();
    READING.with(|r| *r.borrow_mut() = previous);
    out
}

fn dec_communicator(py: Python<'_>) -> PyResult<(floe::Communicator, Py<PyAny>)> {
    READING
        .with(|r| r.borrow().as_ref().map(|(c, p)| (c.clone(), p.clone_ref(py))))
        .ok_or_else(|| errors::marshal("a class instance was read outside an encapsulation".to_owned()))
}

fn write_value(v: &Bound<'_, PyAny>, enc: &mut Encoder) -> WriteResult {
    if v.is_none() {
        enc.write_class::<dyn ClassValue>(None);
        return Ok(());
    }
    if enc.encoding().is_1_0() {
        return Err(WriteError::Py(errors::marshal("class instances in encoding 1.0 are not supported yet".into())));
    }
    let key = v.as_ptr() as usize;
    let known = WRITTEN.with(|w| w.borrow().get(&key).cloned());
    let class = match known {
        Some(c) => c,
        None => {
            let ty: Py<TypeInfo> = v
                .getattr("_ice_type")
                .and_then(|t| t.extract().map_err(PyErr::from))
                .map_err(|_| WriteError::Invalid)?;
            if !matches!(ty.get().kind()?, Kind::Value { .. }) {
                return Err(WriteError::Invalid);
            }
            let id = types::intern_id(&ty.get().id);
            let c = AnyClass::from_value(Box::new(PyValue { obj: v.clone().unbind(), ty, id }));
            WRITTEN.with(|w| w.borrow_mut().insert(key, c.clone()));
            c
        }
    };
    enc.write_class(Some(&class));
    match class_error() {
        Some(e) => Err(WriteError::Py(e)),
        None => Ok(()),
    }
}

fn read_value(py: Python<'_>, dec: &mut Decoder) -> PyResult<Py<PyAny>> {
    if dec.encoding().is_1_0() {
        return Err(errors::marshal("class instances in encoding 1.0 are not supported yet".into()));
    }
    let read = dec.read_any_class(Some(PY_FACTORY));
    if let Some(e) = class_error() {
        return Err(e);
    }
    let Some(class) = read.map_err(errors::marshal_from)? else { return Ok(py.None()) };
    if let Some(v) = class.downcast::<PyValue>() {
        return Ok(v.read().obj.clone_ref(py));
    }
    if class.ice_id() == "::Ice::UnknownSlicedValue" {
        let guard = class.read_any();
        let unknown = guard
            .part(TypeId::of::<UnknownSlicedValue>())
            .and_then(|p| p.downcast_ref::<UnknownSlicedValue>())
            .map(|u| u.unknown_type_id.clone())
            .unwrap_or_default();
        return Ok(errors::ice(py)?.getattr("UnknownSlicedValue")?.call1((unknown,))?.unbind());
    }
    Err(errors::marshal(format!(
        "an instance of `{}' refers back to an instance still being read: cyclic graphs are not supported yet",
        class.ice_id()
    )))
}
