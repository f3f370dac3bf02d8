//! The Python objects of floe's object adapters and connections: their data, below the modules
//! that give them methods (`crate::servant` and `crate::connection`), so that the dispatch can
//! hand out connections and connections can take adapters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use floe::Identity;
use pyo3::prelude::*;

use crate::pool::DispatchPool;

/// `IcePy.ObjectAdapter`: a floe object adapter serving Python servants.
#[pyclass(frozen, module = "IcePy")]
pub struct ObjectAdapter {
    /// The floe adapter.
    pub inner: floe::ObjectAdapter,
    /// The `Ice.Communicator` that made it.
    pub communicator: Py<PyAny>,
    /// The Python servants added, by identity and facet, for `find` and `remove`.
    pub servants: Mutex<HashMap<(Identity, String), Py<PyAny>>>,
    /// The threads that run its servants.
    pub pool: Arc<DispatchPool>,
}

impl ObjectAdapter {
    /// Wraps a floe adapter made by `communicator`, whose servants run on `pool`.
    pub fn new(inner: floe::ObjectAdapter, communicator: Py<PyAny>, pool: Arc<DispatchPool>) -> Self {
        ObjectAdapter { inner, communicator, servants: Mutex::default(), pool }
    }
}

/// `IcePy.Connection`: a floe connection.
#[pyclass(frozen, module = "IcePy")]
pub struct Connection {
    /// The floe connection.
    pub inner: floe::Connection,
    /// The floe communicator it belongs to.
    pub floe_communicator: floe::Communicator,
    /// Its Python object.
    pub communicator: Py<PyAny>,
}

impl Connection {
    /// The Python object of `inner`, a connection of `communicator`.
    pub fn wrap(
        py: Python<'_>,
        inner: floe::Connection,
        floe_communicator: &floe::Communicator,
        communicator: &Py<PyAny>,
    ) -> PyResult<Py<Connection>> {
        Py::new(
            py,
            Connection {
                inner,
                floe_communicator: floe_communicator.clone(),
                communicator: communicator.clone_ref(py),
            },
        )
    }
}
