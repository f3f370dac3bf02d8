//! `IcePy.Communicator` and `IcePy.Properties`: floe's communicator and properties with Ice for
//! Python's method names. `Ice.initialize` (in the `Ice` package) makes the communicator.

use std::sync::{Arc, OnceLock};

use floe::reference::{identity_to_string, string_to_identity};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::connection::{ImplicitContext, Logger};
use crate::errors;
use crate::pool::DispatchPool;
use crate::proxy::{self, Proxy};
use crate::servant::ObjectAdapter;

/// `IcePy.Properties`: a communicator's properties (shared: a change is seen by its owner).
#[pyclass(frozen, module = "IcePy")]
pub struct Properties {
    /// The floe properties.
    pub inner: floe::Properties,
}

/// Replaces the contents of the Python list `args` with `rest`, as Ice for Python removes the
/// options it used from `sys.argv`.
fn set_args(args: Option<&Bound<'_, PyList>>, rest: Vec<String>) -> PyResult<()> {
    if let Some(list) = args {
        list.call_method1("clear", ())?;
        for a in rest {
            list.append(a)?;
        }
    }
    Ok(())
}

fn arg_strings(args: Option<&Bound<'_, PyList>>) -> PyResult<Vec<String>> {
    match args {
        None => Ok(Vec::new()),
        Some(l) => l.iter().map(|a| a.extract::<String>()).collect(),
    }
}

fn init_error(py: Python<'_>, e: &floe::Error) -> PyErr {
    errors::to_py(py, e)
}

/// `IcePy.createProperties(args=None, defaults=None)`.
#[pyfunction]
#[pyo3(name = "createProperties", signature = (args = None, defaults = None))]
pub fn create_properties(
    py: Python<'_>,
    args: Option<&Bound<'_, PyList>>,
    defaults: Option<&Bound<'_, Properties>>,
) -> PyResult<Properties> {
    let (props, rest) = floe::Properties::from_args(arg_strings(args)?, &[]).map_err(|e| init_error(py, &e))?;
    if let Some(d) = defaults {
        for (k, v) in d.get().inner.with_prefix("") {
            if props.get(&k).is_none() {
                props.set(&k, &v);
            }
        }
    }
    set_args(args, rest)?;
    Ok(Properties { inner: props })
}

#[pymethods]
#[allow(non_snake_case)]
impl Properties {
    fn getProperty(&self, name: &str) -> String {
        self.inner.get(name).unwrap_or_default()
    }

    fn getPropertyWithDefault(&self, name: &str, default: &str) -> String {
        self.inner.get_or(name, default)
    }

    fn getPropertyAsInt(&self, name: &str) -> i64 {
        self.inner.get_int(name, 0).unwrap_or(0)
    }

    fn getPropertyAsIntWithDefault(&self, name: &str, default: i64) -> i64 {
        self.inner.get_int(name, default).unwrap_or(default)
    }

    fn getPropertyAsList(&self, name: &str) -> Vec<String> {
        self.inner
            .get(name)
            .map(|v| v.split([' ', ',', '\t']).filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default()
    }

    fn getPropertiesForPrefix<'py>(&self, py: Python<'py>, prefix: &str) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.inner.with_prefix(prefix) {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    fn setProperty(&self, name: &str, value: &str) {
        self.inner.set(name, value);
    }

    fn load(&self, py: Python<'_>, file: &str) -> PyResult<()> {
        self.inner.load_file(file).map_err(|e| init_error(py, &e))
    }

    fn clone(&self) -> Properties {
        let copy = floe::Properties::new();
        for (k, v) in self.inner.with_prefix("") {
            copy.set(&k, &v);
        }
        Properties { inner: copy }
    }

    fn __str__(&self) -> String {
        self.inner.with_prefix("").into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("\n")
    }
}

/// `IcePy.Communicator`.
#[pyclass(frozen, subclass, module = "IcePy")]
pub struct Communicator {
    /// The floe communicator.
    pub inner: floe::Communicator,
    /// The threads that run its servants, started with its first object adapter.
    pool: OnceLock<Arc<DispatchPool>>,
}

impl Communicator {
    /// The dispatch threads: `Ice.ThreadPool.Server.Size` of them (1 by default).
    fn pool(&self) -> Arc<DispatchPool> {
        self.pool
            .get_or_init(|| {
                let size = self.inner.properties().get_int("Ice.ThreadPool.Server.Size", 1).unwrap_or(1);
                DispatchPool::new(size.clamp(1, 1024) as usize)
            })
            .clone()
    }
}

#[pymethods]
#[allow(non_snake_case)]
impl Communicator {
    /// `Communicator(args, properties)`: `args` (a list, changed in place) are parsed for Ice
    /// properties, over `properties` when given.
    #[new]
    #[pyo3(signature = (args = None, properties = None))]
    fn new(
        py: Python<'_>,
        args: Option<&Bound<'_, PyList>>,
        properties: Option<&Bound<'_, Properties>>,
    ) -> PyResult<Self> {
        let props = create_properties(py, args, properties)?;
        let inner = floe::Communicator::with_properties(props.inner).map_err(|e| init_error(py, &e))?;
        Ok(Communicator { inner, pool: OnceLock::new() })
    }

    fn stringToProxy<'py>(slf: &Bound<'py, Self>, s: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        if s.trim().is_empty() {
            return Ok(None);
        }
        let p = slf.get().inner.string_to_proxy(s).map_err(|e| {
            // Ice raises EndpointParseException when the identity and options parse but an
            // endpoint does not.
            let endpoints_bad = s.find(':').is_some_and(|i| slf.get().inner.string_to_proxy(&s[..i]).is_ok());
            match &e {
                floe::Error::ProxyParse { .. } if endpoints_bad => {
                    errors::local(py, "EndpointParseException", &e.to_string(), &[])
                }
                _ => errors::to_py(py, &e),
            }
        })?;
        Ok(Some(Proxy::wrap(py, &errors::ice(py)?.getattr("ObjectPrx")?, p, &slf.clone().into_any().unbind())?))
    }

    fn proxyToString(&self, proxy: Option<&Bound<'_, Proxy>>) -> String {
        proxy.map(|p| p.get().inner.to_string()).unwrap_or_default()
    }

    fn propertyToProxy<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match slf.get().inner.properties().get(name) {
            Some(s) => Self::stringToProxy(slf, &s),
            None => Ok(None),
        }
    }

    fn identityToString(&self, id: &Bound<'_, PyAny>) -> PyResult<String> {
        Ok(identity_to_string(&errors::to_identity(id)?))
    }

    fn stringToIdentity(&self, py: Python<'_>, s: &str) -> PyResult<Py<PyAny>> {
        string_to_identity_py(py, s)
    }

    fn getProperties(&self) -> Properties {
        Properties { inner: self.inner.properties().clone() }
    }

    fn createObjectAdapter(slf: &Bound<'_, Self>, name: &str) -> PyResult<ObjectAdapter> {
        let py = slf.py();
        let a = slf.get().inner.create_object_adapter(name).map_err(|e| errors::to_py(py, &e))?;
        Ok(ObjectAdapter::new(a, slf.clone().into_any().unbind(), slf.get().pool()))
    }

    fn createObjectAdapterWithEndpoints(slf: &Bound<'_, Self>, name: &str, endpoints: &str) -> PyResult<ObjectAdapter> {
        let py = slf.py();
        let a =
            slf.get().inner.create_object_adapter_with_endpoints(name, endpoints).map_err(|e| errors::to_py(py, &e))?;
        Ok(ObjectAdapter::new(a, slf.clone().into_any().unbind(), slf.get().pool()))
    }

    /// The implicit context: `None` unless `Ice.ImplicitContext` is `Shared` or `PerThread`
    /// (floe keeps one context for the communicator in both cases).
    fn getImplicitContext(&self) -> Option<ImplicitContext> {
        let kind = self.inner.properties().get("Ice.ImplicitContext").unwrap_or_default();
        (!kind.is_empty() && kind != "None").then(|| ImplicitContext { inner: self.inner.clone() })
    }

    fn getLogger(&self) -> Logger {
        Logger { inner: self.inner.logger() }
    }

    fn shutdown(&self) {
        self.inner.shutdown();
    }

    fn isShutdown(&self) -> bool {
        self.inner.is_shutdown()
    }

    fn waitForShutdown(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.inner.clone();
        proxy::wait(py, &self.inner, async move {
            c.wait_for_shutdown().await;
            Ok(())
        })
    }

    fn destroy(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.inner.clone();
        proxy::wait(py, &self.inner, async move {
            c.destroy().await;
            Ok(())
        })
    }
}

/// `Ice.stringToIdentity`.
pub fn string_to_identity_py(py: Python<'_>, s: &str) -> PyResult<Py<PyAny>> {
    match string_to_identity(s) {
        Ok(id) => errors::identity(py, &id),
        Err(reason) => Err(errors::local(py, "IdentityParseException", &reason, &[])),
    }
}

/// `IcePy.stringToIdentity(s)`.
#[pyfunction]
#[pyo3(name = "stringToIdentity")]
pub fn string_to_identity_fn(py: Python<'_>, s: &str) -> PyResult<Py<PyAny>> {
    string_to_identity_py(py, s)
}

/// `IcePy.identityToString(id)`.
#[pyfunction]
#[pyo3(name = "identityToString")]
pub fn identity_to_string_fn(id: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(identity_to_string(&errors::to_identity(id)?))
}
