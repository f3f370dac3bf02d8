//! `IcePy.Operation`: one Slice operation as generated code describes it, with the client side
//! (`invoke`: marshal the arguments, call, unmarshal the results or the user exception) and
//! the server side's reading of arguments and writing of results (used by [`crate::servant`]).

use floe::encoding::{Decoder, Encoder, EncodingVersion, FormatType};
use floe::protocol::OperationMode;
use floe::Outcome;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::errors;
use crate::marshal::{self, in_context, ReadContext};
use crate::proxy::{self, Proxy};
use crate::types::{self, Kind, Member, TypeInfo};

/// A parameter or the return value: its type, and its tag when optional.
pub struct Param {
    /// Its position among the parameters (the return value has none).
    pub position: usize,
    /// Its type.
    pub ty: Py<TypeInfo>,
    /// Declared `optional(tag)`.
    pub optional: bool,
    /// The tag.
    pub tag: i32,
}

/// Values read by position, and the return value.
pub type ReadValues = (Vec<Py<PyAny>>, Option<Py<PyAny>>);

/// A Slice operation.
#[pyclass(frozen, subclass, module = "IcePy")]
pub struct Operation {
    /// The operation's name on the wire.
    pub name: String,
    /// Its declared mode.
    pub mode: OperationMode,
    /// The mode requests are sent with.
    pub send_mode: OperationMode,
    /// `["amd"]`: the servant returns a future.
    pub amd: bool,
    /// `["format:sliced"]` or `["format:compact"]`; `None` for the communicator's default.
    pub format: Option<FormatType>,
    /// The in parameters, in order.
    pub in_params: Vec<Param>,
    /// The out parameters, in order.
    pub out_params: Vec<Param>,
    /// The return value.
    pub ret: Option<Param>,
    /// The user exceptions it declares.
    pub exceptions: Vec<Py<TypeInfo>>,
}

fn params(t: &Bound<'_, PyTuple>) -> PyResult<Vec<Param>> {
    let mut out = Vec::with_capacity(t.len());
    for (position, item) in t.iter().enumerate() {
        out.push(param(&item, position)?);
    }
    Ok(out)
}

/// Reads `(metadata, type, optional, tag)`.
fn param(item: &Bound<'_, PyAny>, position: usize) -> PyResult<Param> {
    let t = item.cast::<PyTuple>()?;
    Ok(Param {
        position,
        ty: t.get_item(1)?.extract()?,
        optional: t.get_item(2)?.extract()?,
        tag: t.get_item(3)?.extract()?,
    })
}

/// The order of values on the wire: required ones as declared (the return value after the
/// out parameters), then optional ones by tag.
fn wire_order<'a>(params: &'a [Param], ret: Option<&'a Param>) -> Vec<(&'a Param, bool)> {
    let mut required: Vec<(&Param, bool)> = params.iter().filter(|p| !p.optional).map(|p| (p, false)).collect();
    if let Some(r) = ret.filter(|r| !r.optional) {
        required.push((r, true));
    }
    let mut optional: Vec<(&Param, bool)> = params.iter().filter(|p| p.optional).map(|p| (p, false)).collect();
    if let Some(r) = ret.filter(|r| r.optional) {
        optional.push((r, true));
    }
    optional.sort_by_key(|(p, _)| p.tag);
    required.extend(optional);
    required
}

/// A request ready to send: its proxy, encoded parameters and context.
struct Request {
    target: floe::ObjectPrx,
    params: bytes::Bytes,
    context: Option<floe::Context>,
}

impl Operation {
    /// Checks and encodes the arguments of a call `(args, context)` on `proxy`.
    fn prepare(&self, py: Python<'_>, proxy: &Bound<'_, Proxy>, call: &Bound<'_, PyTuple>) -> PyResult<Request> {
        let args = call.get_item(0)?;
        let args = args.cast::<PyTuple>()?;
        let context = call.get_item(1).ok().filter(|c| !c.is_none());
        if args.len() != self.in_params.len() {
            return Err(PyValueError::new_err(format!(
                "operation `{}' takes {} arguments, {} given",
                self.name,
                self.in_params.len(),
                args.len()
            )));
        }
        let p = proxy.get();
        if self.ret.is_some() || !self.out_params.is_empty() {
            p.inner.twoway_only(&self.name).map_err(|e| errors::to_py(py, &e))?;
        }
        let encoding: EncodingVersion = p.inner.ice_get_encoding_version();
        let mut enc = Encoder::new(encoding);
        if let Some(f) = self.format {
            enc.set_format(f);
        }
        let values: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let written = self.write_values(&self.in_params, None, &values, None, &mut enc, "argument");
        marshal::forget_classes();
        written?;
        Ok(Request { target: p.inner.clone(), params: enc.into_bytes(), context: proxy::to_context(context.as_ref())? })
    }

    /// The Python result of a reply (or the exception it carries).
    fn finish(
        &self,
        py: Python<'_>,
        outcome: Option<Outcome>,
        communicator: &floe::Communicator,
        py_communicator: &Py<PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let read = ReadContext { communicator, py_communicator };
        marshal::with_read_context(py, &read, || self.finish_reading(py, outcome, &read))
    }

    fn finish_reading(&self, py: Python<'_>, outcome: Option<Outcome>, read: &ReadContext<'_>) -> PyResult<Py<PyAny>> {
        match outcome {
            None => Ok(py.None()),
            Some(Outcome::Ok(mut dec)) => {
                let (outs, ret) = self.read_values(py, &self.out_params, self.ret.as_ref(), &mut dec, read)?;
                self.results(py, outs, ret)
            }
            Some(Outcome::UserException(mut dec)) => Err(self.read_exception(py, &mut dec, read)?),
        }
    }

    /// Writes `values` (one per parameter in `params`, plus the return value) in wire order.
    pub fn write_values(
        &self,
        params: &[Param],
        ret: Option<&Param>,
        values: &[Bound<'_, PyAny>],
        ret_value: Option<&Bound<'_, PyAny>>,
        enc: &mut Encoder,
        what: &str,
    ) -> PyResult<()> {
        for (p, is_ret) in wire_order(params, ret) {
            let v = if is_ret { ret_value.expect("a return value") } else { &values[p.position] };
            let r = if p.optional {
                marshal::write_optional(p.ty.get(), p.tag, v, enc)
            } else {
                marshal::write(p.ty.get(), v, enc)
            };
            in_context(r, || {
                if is_ret {
                    format!("return value of operation `{}'", self.name)
                } else {
                    format!("{what} {} in operation `{}'", p.position + 1, self.name)
                }
            })?;
        }
        Ok(())
    }

    /// Reads values of `params` (and the return value): `(values by position, return value)`.
    pub fn read_values(
        &self,
        py: Python<'_>,
        params: &[Param],
        ret: Option<&Param>,
        dec: &mut Decoder,
        ctx: &ReadContext<'_>,
    ) -> PyResult<ReadValues> {
        let mut values: Vec<Option<Py<PyAny>>> = (0..params.len()).map(|_| None).collect();
        let mut ret_value = None;
        for (p, is_ret) in wire_order(params, ret) {
            let v = if p.optional {
                marshal::read_optional(py, p.ty.get(), p.tag, dec, ctx)?
            } else {
                marshal::read(py, p.ty.get(), dec, ctx)?
            };
            if is_ret {
                ret_value = Some(v);
            } else {
                values[p.position] = Some(v);
            }
        }
        if !dec.encoding().is_1_0() {
            dec.skip_remaining_optionals().map_err(errors::marshal_from)?;
        }
        Ok((values.into_iter().map(|v| v.unwrap_or_else(|| py.None())).collect(), ret_value))
    }

    /// The Python result of a call: `None`, the one value, or a tuple (return value first).
    pub fn results(&self, py: Python<'_>, outs: Vec<Py<PyAny>>, ret: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let mut all: Vec<Py<PyAny>> = ret.into_iter().collect();
        all.extend(outs);
        Ok(match all.len() {
            0 => py.None(),
            1 => all.pop().expect("one value"),
            _ => PyTuple::new(py, all)?.into_any().unbind(),
        })
    }

    /// Reads the user exception of a reply and returns it as the Python error to raise: one the
    /// operation declares, or `Ice.UnknownUserException`.
    pub fn read_exception(&self, py: Python<'_>, dec: &mut Decoder, ctx: &ReadContext<'_>) -> PyResult<PyErr> {
        let m = errors::marshal_from;
        dec.start_exception().map_err(m)?;
        let mut most_derived: Option<String> = None;
        loop {
            let header = dec.start_exception_slice().map_err(m)?;
            most_derived.get_or_insert_with(|| header.type_id.clone());
            if let Some(t) = types::find_exception(py, &header.type_id) {
                let obj = read_exception_slices(py, t.bind(py), header.has_optionals, dec, ctx)?;
                let declared = self.exceptions.iter().any(|d| match d.get().kind() {
                    Ok(Kind::Exception { class, .. }) => obj.is_instance(class.bind(py)).unwrap_or(false),
                    _ => false,
                });
                if declared {
                    return Ok(PyErr::from_value(obj));
                }
                let unknown = PyString::new(py, &header.type_id).into_any().unbind();
                return Ok(errors::local(py, "UnknownUserException", &header.type_id, &[("unknown", unknown)]));
            }
            if header.is_last || !header.has_size {
                let id = most_derived.unwrap_or_default();
                let unknown = PyString::new(py, &id).into_any().unbind();
                return Ok(errors::local(py, "UnknownUserException", &id, &[("unknown", unknown)]));
            }
            dec.skip_exception_slice(&header).map_err(m)?;
        }
    }
}

/// Reads an exception of type `t` whose first slice header has been read, and its base
/// types' slices.
fn read_exception_slices<'py>(
    py: Python<'py>,
    t: &Bound<'py, TypeInfo>,
    mut has_optionals: bool,
    dec: &mut Decoder,
    ctx: &ReadContext<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let Kind::Exception { class, .. } = t.get().kind()? else {
        return Err(errors::marshal(format!("`{}' is not an exception", t.get().id)));
    };
    let obj = marshal::new_instance(class.bind(py))?;
    let mut current = t.clone();
    loop {
        let Kind::Exception { members, optional, base, .. } = current.get().kind()? else { break };
        marshal::read_members(py, members, &obj, dec, ctx)?;
        read_optional_members(py, optional, has_optionals, &obj, dec, ctx)?;
        dec.end_exception_slice().map_err(errors::marshal_from)?;
        let Some(base) = base else { break };
        let header = dec.start_exception_slice().map_err(errors::marshal_from)?;
        has_optionals = header.has_optionals;
        current = base.bind(py).clone();
    }
    Ok(obj)
}

fn read_optional_members(
    py: Python<'_>,
    optional: &[Member],
    present: bool,
    obj: &Bound<'_, PyAny>,
    dec: &mut Decoder,
    ctx: &ReadContext<'_>,
) -> PyResult<()> {
    for m in optional {
        let v = if present {
            marshal::read_optional(py, m.ty.get(), m.tag, dec, ctx)?
        } else {
            marshal::unset(py).unbind()
        };
        obj.setattr(m.name.bind(py), v)?;
    }
    Ok(())
}

/// Writes the user exception `obj` of type `t` (every slice, most derived first).
pub fn write_exception(t: &TypeInfo, obj: &Bound<'_, PyAny>, enc: &mut Encoder) -> PyResult<()> {
    let written = write_exception_slices(t, obj, enc);
    marshal::forget_classes();
    written
}

fn write_exception_slices(t: &TypeInfo, obj: &Bound<'_, PyAny>, enc: &mut Encoder) -> PyResult<()> {
    let py = obj.py();
    enc.start_exception();
    let mut current: Option<Py<TypeInfo>> = None;
    let mut ty = t;
    loop {
        let Kind::Exception { members, optional, base, .. } = ty.kind()? else { break };
        enc.start_exception_slice(&ty.id, base.is_none(), !optional.is_empty());
        for m in members {
            let v = obj.getattr(m.name.bind(py))?;
            in_context(marshal::write(m.ty.get(), &v, enc), || format!("{} member `{}'", ty.id, m.name))?;
        }
        for m in optional {
            let v = obj.getattr(m.name.bind(py))?;
            in_context(marshal::write_optional(m.ty.get(), m.tag, &v, enc), || {
                format!("{} member `{}'", ty.id, m.name)
            })?;
        }
        enc.end_exception_slice();
        let Some(b) = base else { break };
        current = Some(b.clone_ref(py));
        ty = current.as_ref().map(|c| c.get()).expect("set above");
    }
    drop(current);
    Ok(())
}

#[pymethods]
impl Operation {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (name, mode, send_mode, amd, format, _metadata, in_params, out_params, return_type, exceptions))]
    fn new(
        name: String,
        mode: &Bound<'_, PyAny>,
        send_mode: &Bound<'_, PyAny>,
        amd: bool,
        format: &Bound<'_, PyAny>,
        _metadata: &Bound<'_, PyAny>,
        in_params: &Bound<'_, PyTuple>,
        out_params: &Bound<'_, PyTuple>,
        return_type: &Bound<'_, PyAny>,
        exceptions: &Bound<'_, PyTuple>,
    ) -> PyResult<Self> {
        let format = if format.is_none() {
            None
        } else {
            match format.getattr("_value").and_then(|v| v.extract::<i32>()).unwrap_or(0) {
                2 => Some(FormatType::Sliced),
                1 => Some(FormatType::Compact),
                _ => None,
            }
        };
        Ok(Operation {
            name,
            mode: proxy::mode_of(mode)?,
            send_mode: proxy::mode_of(send_mode)?,
            amd,
            format,
            in_params: params(in_params)?,
            out_params: params(out_params)?,
            ret: if return_type.is_none() { None } else { Some(param(return_type, 0)?) },
            exceptions: exceptions
                .iter()
                .map(|e| e.extract::<Py<TypeInfo>>().map_err(PyErr::from))
                .collect::<PyResult<_>>()?,
        })
    }

    /// `invoke(proxy, (args, context))`: a synchronous call.
    fn invoke(&self, py: Python<'_>, proxy: &Bound<'_, Proxy>, call: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let request = self.prepare(py, proxy, call)?;
        let communicator = request.target.communicator();
        let Request { target, params, context } = request;
        let (name, mode) = (self.name.as_str(), self.send_mode);
        let outcome = proxy::wait(py, &communicator, async {
            target.invoke_encoded(name, mode, context.as_ref(), &params).await
        })?;
        self.finish(py, outcome, &communicator, &proxy.get().communicator)
    }

    /// `invokeAsync(proxy, (args, context))`: starts the call and returns an `Ice.Future` that
    /// its reply completes (from floe's runtime, which takes the GIL only to read the reply).
    #[pyo3(name = "invokeAsync")]
    fn invoke_async(slf: &Bound<'_, Self>, proxy: &Bound<'_, Proxy>, call: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let Request { target, params, context } = slf.get().prepare(py, proxy, call)?;
        let future = errors::ice(py)?.getattr("Future")?.call0()?.unbind();
        let completed = future.clone_ref(py);
        let op = slf.clone().unbind();
        let py_communicator = proxy.get().communicator.clone_ref(py);
        let communicator = target.communicator();
        let runtime = communicator.runtime_handle().clone();
        runtime.spawn(async move {
            let (name, mode) = (op.get().name.as_str(), op.get().send_mode);
            let outcome = target.invoke_encoded(name, mode, context.as_ref(), &params).await;
            Python::attach(|py| {
                let f = completed.bind(py);
                let result = match outcome {
                    Ok(o) => op.get().finish(py, o, &communicator, &py_communicator),
                    Err(e) => Err(errors::to_py(py, &e)),
                };
                let done = match result {
                    Ok(v) => f.call_method1("set_result", (v,)),
                    Err(e) => f.call_method1("set_exception", (e.value(py),)),
                };
                if let Err(e) = done {
                    e.write_unraisable(py, Some(f));
                }
            });
        });
        Ok(future)
    }

    /// How many values a call returns (the return value and the out parameters).
    #[getter]
    fn result_count(&self) -> usize {
        self.out_params.len() + usize::from(self.ret.is_some())
    }

    /// The operation's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The declared exceptions' Python classes.
    pub fn exception_classes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for e in &self.exceptions {
            if let Ok(Kind::Exception { class, .. }) = e.get().kind() {
                list.append(class.bind(py))?;
            }
        }
        Ok(list)
    }
}
