//! `IcePy.ObjectPrx`: the native base of `Ice.ObjectPrx` and of every generated proxy class,
//! over a floe proxy. Factories (`ice_oneway`, `ice_timeout`, …) return a proxy of the same
//! class; calls release the GIL while floe waits on the network.

use std::time::Duration;

use floe::encoding::{EncodingVersion, InvocationMode};
use floe::protocol::OperationMode;
use floe::{Context, ObjectPrx, Outcome};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple, PyType};

use crate::errors;
use crate::handles::Connection;

/// A proxy: floe's proxy and the Python communicator it belongs to.
#[pyclass(subclass, frozen, module = "IcePy", name = "ObjectPrx")]
pub struct Proxy {
    /// The floe proxy.
    pub inner: ObjectPrx,
    /// The `Ice.Communicator` that made it.
    pub communicator: Py<PyAny>,
}

impl Proxy {
    /// A proxy of Python class `class` (a subclass of `IcePy.ObjectPrx`) for `inner`.
    pub fn wrap<'py>(
        py: Python<'py>,
        class: &Bound<'py, PyAny>,
        inner: ObjectPrx,
        communicator: &Py<PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let native = Py::new(py, Proxy { inner, communicator: communicator.clone_ref(py) })?;
        class.call1((native,))
    }

    /// A proxy of the same class as `slf` for `inner`.
    fn same_class<'py>(slf: &Bound<'py, Self>, inner: ObjectPrx) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        Self::wrap(py, slf.get_type().as_any(), inner, &slf.get().communicator)
    }

    /// An untyped `Ice.ObjectPrx` for `inner` (what `ice_facet` and `ice_identity` return).
    fn untyped<'py>(slf: &Bound<'py, Self>, inner: ObjectPrx) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let class = errors::ice(py)?.getattr("ObjectPrx")?;
        Self::wrap(py, &class, inner, &slf.get().communicator)
    }

    /// The floe communicator of the proxy.
    pub fn floe_communicator(&self) -> floe::Communicator {
        self.inner.communicator()
    }
}

/// Reads a Python context (a dict of strings, or `None`).
pub fn to_context(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Context>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => {
            let d = v
                .cast::<PyDict>()
                .map_err(|_| PyValueError::new_err("context argument must be None or a dictionary"))?;
            let mut ctx = Context::new();
            for (k, val) in d.iter() {
                ctx.insert(k.extract()?, val.extract()?);
            }
            Ok(Some(ctx))
        }
    }
}

/// Waits for `fut` on the communicator's runtime with the GIL released.
pub fn wait<T: Send>(
    py: Python<'_>,
    communicator: &floe::Communicator,
    fut: impl std::future::Future<Output = floe::Result<T>> + Send,
) -> PyResult<T> {
    let r = py.detach(|| communicator.try_block_on(fut));
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) | Err(e) => Err(errors::to_py(py, &e)),
    }
}

fn operation_mode(v: &Bound<'_, PyAny>) -> PyResult<OperationMode> {
    let value: i32 = match v.getattr("_value") {
        Ok(x) => x.extract()?,
        Err(_) => v.extract()?,
    };
    Ok(match value {
        0 => OperationMode::Normal,
        1 => OperationMode::Nonmutating,
        2 => OperationMode::Idempotent,
        _ => return Err(PyValueError::new_err(format!("invalid operation mode {value}"))),
    })
}

/// The operation mode of a generated `IcePy.Operation` argument.
pub fn mode_of(v: &Bound<'_, PyAny>) -> PyResult<OperationMode> {
    operation_mode(v)
}

#[pymethods]
#[allow(non_snake_case)]
impl Proxy {
    #[new]
    fn new(other: PyRef<'_, Proxy>) -> Self {
        Proxy { inner: other.inner.clone(), communicator: other.communicator.clone_ref(other.py()) }
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        self.inner.to_string()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Proxy>().is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __ne__(&self, other: &Bound<'_, PyAny>) -> bool {
        !self.__eq__(other)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.inner.to_string().hash(&mut h);
        h.finish()
    }

    fn ice_getCommunicator(&self, py: Python<'_>) -> Py<PyAny> {
        self.communicator.clone_ref(py)
    }

    fn ice_toString(&self) -> String {
        self.inner.to_string()
    }

    fn ice_getIdentity(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        errors::identity(py, self.inner.ice_get_identity())
    }

    fn ice_getFacet(&self) -> String {
        self.inner.ice_get_facet().to_owned()
    }

    fn ice_getAdapterId(&self) -> String {
        self.inner.reference().wire.adapter_id.clone()
    }

    fn ice_getContext(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.reference().context.clone()
    }

    fn ice_getLocatorCacheTimeout(&self) -> i32 {
        self.inner.ice_get_locator_cache_timeout()
    }

    fn ice_isTwoway(&self) -> bool {
        self.inner.mode() == InvocationMode::Twoway
    }

    fn ice_isOneway(&self) -> bool {
        self.inner.mode() == InvocationMode::Oneway
    }

    fn ice_isBatchOneway(&self) -> bool {
        self.inner.mode() == InvocationMode::BatchOneway
    }

    fn ice_isDatagram(&self) -> bool {
        self.inner.mode() == InvocationMode::Datagram
    }

    fn ice_isBatchDatagram(&self) -> bool {
        self.inner.mode() == InvocationMode::BatchDatagram
    }

    fn ice_isSecure(&self) -> bool {
        self.inner.reference().wire.secure
    }

    fn ice_isPreferSecure(&self) -> bool {
        self.inner.reference().prefer_secure
    }

    fn ice_getTimeout(&self) -> Option<i32> {
        self.inner.ice_get_timeout()
    }

    fn ice_getInvocationTimeout(&self) -> i32 {
        self.inner.reference().invocation_timeout.map_or(-1, |d| d.as_millis() as i32)
    }

    fn ice_getEncodingVersion(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let e = self.inner.ice_get_encoding_version();
        Ok(errors::ice(py)?.getattr("EncodingVersion")?.call1((e.major, e.minor))?.unbind())
    }

    fn ice_twoway<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_twoway())
    }

    fn ice_oneway<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_oneway())
    }

    fn ice_batchOneway<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_batch_oneway())
    }

    fn ice_datagram<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_datagram())
    }

    fn ice_batchDatagram<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_batch_datagram())
    }

    fn ice_secure<'py>(slf: &Bound<'py, Self>, secure: bool) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_secure(secure))
    }

    fn ice_preferSecure<'py>(slf: &Bound<'py, Self>, prefer: bool) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_prefer_secure(prefer))
    }

    fn ice_compress<'py>(slf: &Bound<'py, Self>, compress: bool) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_compress(compress))
    }

    fn ice_timeout<'py>(slf: &Bound<'py, Self>, timeout: i32) -> PyResult<Bound<'py, PyAny>> {
        if timeout < 1 && timeout != -1 {
            return Err(PyValueError::new_err(format!("invalid timeout value: {timeout}")));
        }
        Self::same_class(slf, slf.get().inner.ice_timeout(timeout))
    }

    fn ice_invocationTimeout<'py>(slf: &Bound<'py, Self>, timeout: i32) -> PyResult<Bound<'py, PyAny>> {
        if timeout < 1 && timeout != -1 && timeout != -2 {
            return Err(PyValueError::new_err(format!("invalid invocation timeout value: {timeout}")));
        }
        let t = (timeout > 0).then(|| Duration::from_millis(timeout as u64));
        Self::same_class(slf, slf.get().inner.ice_invocation_timeout(t))
    }

    fn ice_locatorCacheTimeout<'py>(slf: &Bound<'py, Self>, seconds: i32) -> PyResult<Bound<'py, PyAny>> {
        if seconds < -1 {
            return Err(PyValueError::new_err(format!("invalid value passed to ice_locatorCacheTimeout: {seconds}")));
        }
        Self::same_class(slf, slf.get().inner.ice_locator_cache_timeout(seconds))
    }

    fn ice_adapterId<'py>(slf: &Bound<'py, Self>, id: &str) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_adapter_id(id))
    }

    fn ice_context<'py>(slf: &Bound<'py, Self>, context: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let ctx = to_context(Some(context))?.unwrap_or_default();
        Self::same_class(slf, slf.get().inner.ice_context(ctx))
    }

    fn ice_encodingVersion<'py>(slf: &Bound<'py, Self>, version: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let major: u8 = version.getattr("major")?.extract()?;
        let minor: u8 = version.getattr("minor")?.extract()?;
        Self::same_class(slf, slf.get().inner.ice_encoding_version(EncodingVersion { major, minor }))
    }

    #[pyo3(signature = (locator))]
    fn ice_locator<'py>(slf: &Bound<'py, Self>, locator: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let l = if locator.is_none() { None } else { Some(locator.cast::<Proxy>()?.get().inner.clone()) };
        Self::same_class(slf, slf.get().inner.ice_locator(l.as_ref()))
    }

    #[pyo3(signature = (router))]
    fn ice_router<'py>(slf: &Bound<'py, Self>, router: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let r = if router.is_none() { None } else { Some(router.cast::<Proxy>()?.get().inner.clone()) };
        Self::same_class(slf, slf.get().inner.ice_router(r.as_ref()))
    }

    fn ice_facet<'py>(slf: &Bound<'py, Self>, facet: &str) -> PyResult<Bound<'py, PyAny>> {
        Self::untyped(slf, slf.get().inner.ice_facet(facet))
    }

    fn ice_identity<'py>(slf: &Bound<'py, Self>, identity: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let id = errors::to_identity(identity)?;
        if id.name.is_empty() {
            return Err(errors::local(slf.py(), "IllegalIdentityException", "the identity's name is empty", &[]));
        }
        Self::untyped(slf, slf.get().inner.ice_identity(id))
    }

    #[pyo3(signature = (context = None))]
    fn ice_ping(&self, py: Python<'_>, context: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let p = with_context(&self.inner, context)?;
        wait(py, &self.floe_communicator(), async move { p.ice_ping().await })
    }

    #[pyo3(signature = (id, context = None))]
    fn ice_isA(&self, py: Python<'_>, id: String, context: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let p = with_context(&self.inner, context)?;
        wait(py, &self.floe_communicator(), async move { p.ice_is_a(&id).await })
    }

    #[pyo3(signature = (context = None))]
    fn ice_id(&self, py: Python<'_>, context: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        let p = with_context(&self.inner, context)?;
        wait(py, &self.floe_communicator(), async move { p.ice_id().await })
    }

    #[pyo3(signature = (context = None))]
    fn ice_ids(&self, py: Python<'_>, context: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
        let p = with_context(&self.inner, context)?;
        wait(py, &self.floe_communicator(), async move { p.ice_ids().await })
    }

    /// The connection the proxy uses, made when there is none yet.
    fn ice_getConnection(&self, py: Python<'_>) -> PyResult<Py<Connection>> {
        let p = self.inner.clone();
        let communicator = self.floe_communicator();
        let c = wait(py, &communicator, async move { p.ice_get_connection().await })?;
        Connection::wrap(py, c, &communicator, &self.communicator)
    }

    /// A proxy that always uses `connection`.
    fn ice_fixed<'py>(slf: &Bound<'py, Self>, connection: &Bound<'py, Connection>) -> PyResult<Bound<'py, PyAny>> {
        Self::same_class(slf, slf.get().inner.ice_fixed(connection.get().inner.clone()))
    }

    fn ice_flushBatchRequests(&self, py: Python<'_>) -> PyResult<()> {
        let p = self.inner.clone();
        wait(py, &self.floe_communicator(), async move { p.ice_flush_batch_requests().await })
    }

    /// `ice_invoke(operation, mode, inParams, context=None)`: `(ok, outParams)`, the reply's
    /// encapsulation body as bytes; `(True, b"")` for a oneway proxy.
    #[pyo3(signature = (operation, mode, in_params, context = None))]
    fn ice_invoke<'py>(
        &self,
        py: Python<'py>,
        operation: String,
        mode: &Bound<'py, PyAny>,
        in_params: &[u8],
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mode = operation_mode(mode)?;
        let ctx = to_context(context)?;
        let params = bytes::Bytes::copy_from_slice(encapsulation_body(in_params)?);
        let p = self.inner.clone();
        let outcome = wait(py, &self.floe_communicator(), async move {
            p.invoke_encoded(&operation, mode, ctx.as_ref(), &params).await
        })?;
        let encoding = self.inner.ice_get_encoding_version();
        let (ok, body) = match outcome {
            None => (true, Vec::new()),
            Some(Outcome::Ok(mut d)) => (true, encapsulation(encoding, &mut d)?),
            Some(Outcome::UserException(mut d)) => (false, encapsulation(encoding, &mut d)?),
        };
        PyTuple::new(py, [ok.into_pyobject(py)?.to_owned().into_any(), PyBytes::new(py, &body).into_any()])
    }

    /// `IcePy.ObjectPrx.newProxy(cls, proxy)`: `proxy` as an instance of `cls` (the casts).
    #[staticmethod]
    fn newProxy<'py>(
        cls: &Bound<'py, PyType>,
        proxy: &Bound<'py, Proxy>,
        facet: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = proxy.get();
        let inner = match facet {
            Some(f) => p.inner.ice_facet(f),
            None => p.inner.clone(),
        };
        Self::wrap(cls.py(), cls.as_any(), inner, &p.communicator)
    }
}

/// `proxy` with `context` as its context, when one is given.
pub fn with_context(proxy: &ObjectPrx, context: Option<&Bound<'_, PyAny>>) -> PyResult<ObjectPrx> {
    Ok(match to_context(context)? {
        Some(ctx) => proxy.ice_context(ctx),
        None => proxy.clone(),
    })
}

/// The body of the encapsulation `bytes` (an encapsulation's 6-byte header, then its body).
pub fn encapsulation_body(bytes: &[u8]) -> PyResult<&[u8]> {
    if bytes.len() < 6 {
        return Err(errors::marshal(format!("an encapsulation needs 6 bytes of header, got {}", bytes.len())));
    }
    let size = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if size < 6 || size as usize != bytes.len() {
        return Err(errors::marshal(format!("encapsulation size {size} does not match its {} bytes", bytes.len())));
    }
    Ok(&bytes[6..])
}

/// The rest of `d` as an encapsulation of `encoding`, with its header.
pub fn encapsulation(encoding: EncodingVersion, d: &mut floe::encoding::Decoder) -> PyResult<Vec<u8>> {
    let n = d.remaining();
    let body = d.read_raw(n).map_err(errors::marshal_from)?;
    let mut out = Vec::with_capacity(n + 6);
    out.extend_from_slice(&((n + 6) as i32).to_le_bytes());
    out.push(encoding.major);
    out.push(encoding.minor);
    out.extend_from_slice(body);
    Ok(out)
}
