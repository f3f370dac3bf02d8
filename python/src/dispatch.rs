//! The dispatch of a request to a Python servant: read the arguments, call the servant's method
//! with an `Ice.Current`, and write its results, its user exception, or the local exception Ice
//! reports for what else it raised. A method may return a future (anything with
//! `add_done_callback`, such as `Ice.Future` or an asyncio future, as `["amd"]` methods do): the
//! reply is sent when it completes.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use floe::dispatch::{Current, DispatchFuture, Dispatcher, IncomingRequest};
use floe::encoding::{Decoder, Encoder, FormatType, UserExceptionSlices};
use floe::{Error, Response};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};

use crate::errors;
use crate::handles::Connection;
use crate::marshal::{self, ReadContext};
use crate::operation::{write_exception, Operation};
use crate::pool::DispatchPool;
use crate::types::TypeInfo;

/// A Python servant as floe's adapters see it.
pub struct PyServant {
    state: Arc<ServantState>,
}

impl PyServant {
    /// The dispatcher of `servant`, added to `adapter` (an `IcePy.ObjectAdapter`) of
    /// `communicator`.
    pub fn new(
        servant: Py<PyAny>,
        adapter: Py<PyAny>,
        communicator: floe::Communicator,
        py_communicator: Py<PyAny>,
        pool: Arc<DispatchPool>,
    ) -> Self {
        PyServant { state: Arc::new(ServantState { servant, adapter, communicator, py_communicator, pool }) }
    }
}

/// What the dispatch of a servant's requests needs.
struct ServantState {
    /// The servant.
    servant: Py<PyAny>,
    /// The `IcePy.ObjectAdapter` it was added to (for `Ice.Current.adapter`).
    adapter: Py<PyAny>,
    /// The communicator of that adapter.
    communicator: floe::Communicator,
    /// Its Python object.
    py_communicator: Py<PyAny>,
    /// The threads that run the servant.
    pool: Arc<DispatchPool>,
}

/// The reply now, or when a servant's future completes.
enum Done {
    Now(Response),
    Later(tokio::sync::oneshot::Receiver<Response>),
}

impl Dispatcher for PyServant {
    /// Python servants run on the communicator's dispatch threads ([`DispatchPool`]), as Ice
    /// for Python's run on its server thread pool: a servant that calls out and waits (a
    /// callback over the same connection included) does not hold up the connection that must
    /// read the reply.
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let state = self.state.clone();
        // The work is queued when the future is first polled, that is once the connection
        // counts the dispatch: a servant that shuts the communicator down then has its reply
        // sent before the connection closes.
        Box::pin(async move {
            let current = request.current.clone();
            let dropped = |c: &Current| {
                c.error(&Error::UnknownException("the servant's dispatch ended before it replied".into()))
            };
            let (tx, rx) = tokio::sync::oneshot::channel::<Done>();
            let pool = state.pool.clone();
            let queued = pool.submit(Box::new(move |py| {
                let done = match state.dispatch_now(py, &request) {
                    Ok(done) => done,
                    Err(e) => {
                        let c = &request.current;
                        Done::Now(c.error(&errors::from_py(py, &e, &c.operation, &c.id, &c.facet)))
                    }
                };
                let _ = tx.send(done);
            }));
            if !queued {
                return dropped(&current);
            }
            match rx.await {
                Ok(Done::Now(r)) => r,
                Ok(Done::Later(rx)) => rx.await.unwrap_or_else(|_| dropped(&current)),
                Err(_) => dropped(&current),
            }
        })
    }
}

/// The Python method name of an operation: slice2py prefixes Python's keywords with `_`.
fn method_name(operation: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "exec", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
        "nonlocal", "not", "or", "pass", "print", "raise", "return", "try", "while", "with", "yield",
    ];
    if KEYWORDS.contains(&operation) {
        format!("_{operation}")
    } else {
        operation.to_owned()
    }
}

impl ServantState {
    fn dispatch_now(&self, py: Python<'_>, request: &IncomingRequest) -> PyResult<Done> {
        let c = &request.current;
        let servant = self.servant.bind(py);
        let current = || make_current(py, c, &self.adapter, &self.communicator, &self.py_communicator);
        match c.operation.as_str() {
            "ice_ping" => {
                if servant.hasattr("ice_ping")? {
                    servant.call_method1("ice_ping", (current()?,))?;
                }
                return Ok(Done::Now(c.ok_empty()));
            }
            "ice_isA" => {
                let mut dec = request.decoder();
                let id = dec.read_string().map_err(errors::marshal_from)?;
                let yes = servant.call_method1("ice_isA", (id, current()?))?.is_truthy()?;
                return Ok(Done::Now(c.ok(|e| e.write_bool(yes))));
            }
            "ice_id" => {
                let id: String = servant.call_method1("ice_id", (current()?,))?.extract()?;
                return Ok(Done::Now(c.ok(|e| e.write_str(&id))));
            }
            "ice_ids" => {
                let ids: Vec<String> = servant.call_method1("ice_ids", (current()?,))?.extract()?;
                return Ok(Done::Now(c.ok(|e| {
                    e.write_size(ids.len());
                    for id in &ids {
                        e.write_str(id);
                    }
                })));
            }
            _ => {}
        }
        let Some(op) =
            servant.getattr(format!("_op_{}", c.operation).as_str()).ok().and_then(|o| o.cast_into::<Operation>().ok())
        else {
            return Ok(Done::Now(c.operation_not_exist()));
        };
        let o = op.get();
        if let Err(r) = c.check_mode(o.mode) {
            return Ok(Done::Now(r));
        }
        let mut dec: Decoder = request.decoder();
        let read = ReadContext { communicator: &self.communicator, py_communicator: &self.py_communicator };
        let (mut args, _) =
            marshal::with_read_context(py, &read, || o.read_values(py, &o.in_params, None, &mut dec, &read))?;
        args.push(current()?.unbind());
        let method = servant.getattr(method_name(&c.operation).as_str())?;
        match method.call1(PyTuple::new(py, args)?) {
            Err(e) => Ok(Done::Now(exception_reply(py, o, c, e)?)),
            Ok(v) if v.hasattr("add_done_callback")? => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let tx = Mutex::new(Some(tx));
                let op = op.unbind();
                let current = c.clone();
                let done = PyCFunction::new_closure(
                    py,
                    None,
                    None,
                    move |args: &Bound<'_, PyTuple>, _kw: Option<&Bound<'_, PyDict>>| -> PyResult<()> {
                        let py = args.py();
                        let future = args.get_item(0)?;
                        let o = op.get();
                        let reply = match future.call_method0("result") {
                            Ok(v) => results_reply(py, o, &current, &v),
                            Err(e) => exception_reply(py, o, &current, e),
                        };
                        let reply = reply.unwrap_or_else(|e| {
                            current.error(&errors::from_py(py, &e, &current.operation, &current.id, &current.facet))
                        });
                        if let Some(tx) = tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
                            let _ = tx.send(reply);
                        }
                        Ok(())
                    },
                )?;
                v.call_method1("add_done_callback", (done,))?;
                Ok(Done::Later(rx))
            }
            Ok(v) => Ok(Done::Now(results_reply(py, o, c, &v)?)),
        }
    }
}

/// The `Ice.Current` of a request.
fn make_current<'py>(
    py: Python<'py>,
    c: &Current,
    adapter: &Py<PyAny>,
    communicator: &floe::Communicator,
    py_communicator: &Py<PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let ice = errors::ice(py)?;
    let kw = PyDict::new(py);
    kw.set_item("adapter", adapter.bind(py))?;
    if let Some(con) = c.connection() {
        kw.set_item("con", Connection::wrap(py, con.clone(), communicator, py_communicator)?)?;
    }
    kw.set_item("id", errors::identity(py, &c.id)?)?;
    kw.set_item("facet", c.facet.as_str())?;
    kw.set_item("operation", c.operation.as_str())?;
    kw.set_item("mode", ice.getattr("OperationMode")?.getattr("_enumerators")?.get_item(c.mode as i32)?)?;
    let ctx = PyDict::new(py);
    for (k, v) in c.ctx.iter() {
        ctx.set_item(k, v)?;
    }
    kw.set_item("ctx", ctx)?;
    kw.set_item("requestId", c.request_id)?;
    kw.set_item("encoding", ice.getattr("EncodingVersion")?.call1((c.encoding.major, c.encoding.minor))?)?;
    ice.getattr("Current")?.call((), Some(&kw))
}

/// The reply for the value a servant's method returned.
fn results_reply(py: Python<'_>, o: &Operation, c: &Current, v: &Bound<'_, PyAny>) -> PyResult<Response> {
    let count = o.out_params.len() + usize::from(o.ret.is_some());
    if count == 0 {
        return Ok(c.ok_empty());
    }
    let values: Vec<Bound<'_, PyAny>> = if count == 1 {
        vec![v.clone()]
    } else {
        let t = v.cast::<PyTuple>().map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "operation `{}' should return a tuple of length {count}",
                o.name
            ))
        })?;
        if t.len() != count {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "operation `{}' should return a tuple of length {count}",
                o.name
            )));
        }
        t.iter().collect()
    };
    let (ret, outs) = if o.ret.is_some() { (Some(&values[0]), &values[1..]) } else { (None, &values[..]) };
    let mut enc = Encoder::new(c.encoding);
    enc.set_format(format_of(o, c));
    let written = o.write_values(&o.out_params, o.ret.as_ref(), outs, ret, &mut enc, "out parameter");
    marshal::forget_classes();
    written?;
    let _ = py;
    Ok(c.ok(|e| e.write_raw(enc.as_slice())))
}

fn format_of(o: &Operation, c: &Current) -> FormatType {
    o.format.unwrap_or_else(|| c.default_format())
}

/// The reply for what a servant's method raised.
fn exception_reply(py: Python<'_>, o: &Operation, c: &Current, err: PyErr) -> PyResult<Response> {
    let value = err.value(py);
    let user = errors::ice(py)?.getattr("UserException")?;
    if !value.is_instance(&user)? {
        return Ok(c.error(&errors::from_py(py, &err, &c.operation, &c.id, &c.facet)));
    }
    let declared = o.exception_classes(py)?.iter().any(|cls| value.is_instance(&cls).unwrap_or(false));
    let ty = value.getattr("_ice_type").ok().and_then(|t| t.extract::<Py<TypeInfo>>().ok());
    let (Some(ty), true) = (ty, declared) else {
        return Ok(c.error(&errors::from_py(py, &err, &c.operation, &c.id, &c.facet)));
    };
    let format = format_of(o, c);
    let mut enc = Encoder::new(c.encoding);
    enc.set_format(format);
    write_exception(ty.get(), value, &mut enc)?;
    let encoded = EncodedException { type_id: intern(&ty.get().id), bytes: enc.as_slice().to_vec() };
    Ok(c.user_exception(&encoded, format))
}

/// A user exception already encoded (its `start_exception` and every slice).
#[derive(Debug)]
struct EncodedException {
    type_id: &'static str,
    bytes: Vec<u8>,
}

impl UserExceptionSlices for EncodedException {
    fn type_id(&self) -> &'static str {
        self.type_id
    }

    fn encode_slices(&self, enc: &mut Encoder) {
        enc.write_raw(&self.bytes);
    }

    fn decode_body(_dec: &mut Decoder) -> floe::encoding::Result<Self> {
        Err(floe::encoding::DecodeError::Malformed("an encoded exception is only written"))
    }

    fn encode_exception(&self, enc: &mut Encoder) {
        enc.write_raw(&self.bytes);
    }
}

/// A `'static` copy of an exception's type id, made once per type id.
fn intern(id: &str) -> &'static str {
    static IDS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut ids = IDS.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = ids.get(id) {
        return s;
    }
    let s: &'static str = Box::leak(id.to_owned().into_boxed_str());
    ids.insert(s);
    s
}
