//! `IcePy.ObjectAdapter`: a floe object adapter serving Python servants (their dispatch is in
//! [`crate::dispatch`]).

use std::sync::Arc;

use floe::dispatch::Dispatcher;
use floe::Identity;
use pyo3::prelude::*;

use crate::dispatch::PyServant;
use crate::errors;
pub use crate::handles::ObjectAdapter;
use crate::proxy::{self, Proxy};

impl ObjectAdapter {
    fn remember(&self, id: &Identity, facet: &str, servant: &Bound<'_, PyAny>) {
        let mut map = self.servants.lock().unwrap_or_else(|e| e.into_inner());
        map.insert((id.clone(), facet.to_owned()), servant.clone().unbind());
    }

    fn dispatcher(slf: &Bound<'_, Self>, servant: &Bound<'_, PyAny>) -> Arc<dyn Dispatcher> {
        Arc::new(PyServant::new(
            servant.clone().unbind(),
            slf.clone().into_any().unbind(),
            slf.get().inner.communicator(),
            slf.get().communicator.clone_ref(slf.py()),
            slf.get().pool.clone(),
        ))
    }

    fn proxy<'py>(slf: &Bound<'py, Self>, p: floe::ObjectPrx) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        Proxy::wrap(py, &errors::ice(py)?.getattr("ObjectPrx")?, p, &slf.get().communicator)
    }
}

#[pymethods]
#[allow(non_snake_case)]
impl ObjectAdapter {
    fn getName(&self) -> String {
        self.inner.name().to_owned()
    }

    fn getCommunicator(&self, py: Python<'_>) -> Py<PyAny> {
        self.communicator.clone_ref(py)
    }

    fn add<'py>(
        slf: &Bound<'py, Self>,
        servant: &Bound<'py, PyAny>,
        id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = checked_identity(slf.py(), id)?;
        slf.get().remember(&id, "", servant);
        let p = slf.get().inner.add(Self::dispatcher(slf, servant), id);
        Self::proxy(slf, p)
    }

    fn addFacet<'py>(
        slf: &Bound<'py, Self>,
        servant: &Bound<'py, PyAny>,
        id: &Bound<'py, PyAny>,
        facet: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = checked_identity(slf.py(), id)?;
        slf.get().remember(&id, facet, servant);
        slf.get().inner.add_facet(Self::dispatcher(slf, servant), id.clone(), facet);
        Self::proxy(slf, slf.get().inner.create_proxy(id).ice_facet(facet))
    }

    fn addWithUUID<'py>(slf: &Bound<'py, Self>, servant: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let p = slf.get().inner.add_with_uuid(Self::dispatcher(slf, servant));
        slf.get().remember(p.ice_get_identity(), "", servant);
        Self::proxy(slf, p)
    }

    fn addDefaultServant(slf: &Bound<'_, Self>, servant: &Bound<'_, PyAny>, category: &str) {
        slf.get().inner.add_default_servant(Self::dispatcher(slf, servant), category);
    }

    /// Removes the servant of `id`; returns it (`None` when there was none).
    fn remove(&self, id: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        let id = errors::to_identity(id)?;
        self.inner.remove(&id);
        let mut map = self.servants.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.remove(&(id, String::new())))
    }

    /// The servant of `id`, if any.
    fn find(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        let id = errors::to_identity(id)?;
        let map = self.servants.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.get(&(id, String::new())).map(|s| s.clone_ref(py)))
    }

    fn createProxy<'py>(slf: &Bound<'py, Self>, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let id = checked_identity(slf.py(), id)?;
        Self::proxy(slf, slf.get().inner.create_proxy(id))
    }

    fn createDirectProxy<'py>(slf: &Bound<'py, Self>, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let id = checked_identity(slf.py(), id)?;
        Self::proxy(slf, slf.get().inner.create_direct_proxy(id))
    }

    fn createIndirectProxy<'py>(slf: &Bound<'py, Self>, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let id = checked_identity(slf.py(), id)?;
        Self::proxy(slf, slf.get().inner.create_indirect_proxy(id))
    }

    fn activate(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        proxy::wait(py, &self.inner.communicator(), async move { a.activate().await })
    }

    fn hold(&self) {
        self.inner.hold();
    }

    fn deactivate(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        proxy::wait(py, &self.inner.communicator(), async move {
            a.deactivate().await;
            Ok(())
        })
    }

    fn destroy(&self, py: Python<'_>) -> PyResult<()> {
        self.deactivate(py)
    }

    fn waitForDeactivate(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        proxy::wait(py, &self.inner.communicator(), async move {
            a.wait_for_deactivate().await;
            Ok(())
        })
    }

    fn isDeactivated(&self) -> bool {
        self.inner.is_deactivated()
    }

    fn getAdapterId(&self) -> String {
        self.inner.adapter_id().to_owned()
    }
}

fn checked_identity(py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Identity> {
    let id = errors::to_identity(id)?;
    if id.name.is_empty() {
        return Err(errors::local(py, "IllegalIdentityException", "the identity's name is empty", &[]));
    }
    Ok(id)
}
