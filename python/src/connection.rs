//! `IcePy.Connection`, `IcePy.ImplicitContext` and `IcePy.Logger`: a connection (for fixed
//! proxies and callbacks over it), the communicator's implicit context, and its logger.

use floe::reference::identity_to_string;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::handles::{Connection, ObjectAdapter};
use crate::proxy::{self, Proxy};

#[pymethods]
#[allow(non_snake_case)]
impl Connection {
    /// `close(mode)`: `Ice.ConnectionClose.Forcefully` closes at once; `Gracefully` and
    /// `GracefullyWithWait` wait for the outstanding requests.
    fn close(&self, py: Python<'_>, mode: &Bound<'_, PyAny>) -> PyResult<()> {
        let value: i32 = mode.getattr("_value").and_then(|v| v.extract()).unwrap_or(1);
        if value == 0 {
            self.inner.close_forcefully(floe::Error::ConnectionLost("closed forcefully".into()));
            return Ok(());
        }
        let c = self.inner.clone();
        proxy::wait(py, &self.floe_communicator, async move {
            c.close().await;
            Ok(())
        })
    }

    /// A proxy for `id` that always uses this connection.
    fn createProxy<'py>(&self, py: Python<'py>, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let id = errors::to_identity(id)?;
        let p = self.floe_communicator.string_to_proxy(&identity_to_string(&id)).map_err(|e| errors::to_py(py, &e))?;
        Proxy::wrap(py, &errors::ice(py)?.getattr("ObjectPrx")?, p.ice_fixed(self.inner.clone()), &self.communicator)
    }

    /// Requests that arrive on this connection go to `adapter` (`None` stops that).
    fn setAdapter(&self, adapter: Option<&Bound<'_, ObjectAdapter>>) {
        self.inner.set_adapter(adapter.map(|a| a.get().inner.clone()));
    }

    fn toString(&self) -> String {
        self.inner.description().to_owned()
    }

    fn __str__(&self) -> String {
        self.inner.description().to_owned()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Connection>().is_ok_and(|o| o.get().inner.description() == self.inner.description())
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.inner.description().hash(&mut h);
        h.finish()
    }

    fn r#type(&self) -> &'static str {
        "tcp"
    }

    /// `Ice.IPConnectionInfo`-like attributes: addresses, ports, `incoming`.
    fn getInfo<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let kw = PyDict::new(py);
        let (local, remote) = (self.inner.local_address(), self.inner.remote_address());
        kw.set_item("localAddress", local.map(|a| a.ip().to_string()).unwrap_or_default())?;
        kw.set_item("localPort", local.map_or(-1, |a| i32::from(a.port())))?;
        kw.set_item("remoteAddress", remote.map(|a| a.ip().to_string()).unwrap_or_default())?;
        kw.set_item("remotePort", remote.map_or(-1, |a| i32::from(a.port())))?;
        kw.set_item("incoming", self.inner.is_incoming())?;
        errors::ice(py)?.getattr("IPConnectionInfo")?.call((), Some(&kw))
    }
}

/// `IcePy.ImplicitContext`: entries sent with every request of the communicator.
#[pyclass(frozen, module = "IcePy")]
pub struct ImplicitContext {
    /// The floe communicator.
    pub inner: floe::Communicator,
}

#[pymethods]
#[allow(non_snake_case)]
impl ImplicitContext {
    fn getContext(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.implicit_context()
    }

    fn setContext(&self, context: std::collections::BTreeMap<String, String>) {
        for key in self.inner.implicit_context().keys() {
            self.inner.remove_implicit_context(key);
        }
        for (k, v) in &context {
            self.inner.set_implicit_context(k, v);
        }
    }

    fn containsKey(&self, key: &str) -> bool {
        self.inner.implicit_context().contains_key(key)
    }

    fn get(&self, key: &str) -> String {
        self.inner.implicit_context().get(key).cloned().unwrap_or_default()
    }

    /// Sets `key`; returns its previous value (`""` when it had none).
    fn put(&self, key: &str, value: &str) -> String {
        let old = self.get(key);
        self.inner.set_implicit_context(key, value);
        old
    }

    /// Removes `key`; returns its value (`""` when it had none).
    fn remove(&self, key: &str) -> String {
        let old = self.get(key);
        self.inner.remove_implicit_context(key);
        old
    }
}

/// `IcePy.Logger`: the communicator's logger.
#[pyclass(frozen, module = "IcePy")]
pub struct Logger {
    /// The floe logger.
    pub inner: floe::admin::Logger,
}

#[pymethods]
#[allow(non_snake_case)]
impl Logger {
    fn print(&self, message: &str) {
        self.inner.print(message);
    }

    fn trace(&self, category: &str, message: &str) {
        self.inner.trace(category, message);
    }

    fn warning(&self, message: &str) {
        self.inner.warning(message);
    }

    fn error(&self, message: &str) {
        self.inner.error(message);
    }

    fn getPrefix(&self) -> String {
        self.inner.prefix().to_owned()
    }
}
