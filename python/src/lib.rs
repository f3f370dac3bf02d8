//! `IcePy._native`: the native core of floe for Python. It gives Ice for Python's `IcePy` module
//! (what `slice2py`'s output and the `Ice` package call) over floe's Rust runtime: type
//! descriptions, the marshaling of Python values, proxies, operations, communicators, object
//! adapters and the dispatch to Python servants. Calls release the GIL while floe waits on the
//! network. The `IcePy` and `Ice` packages in `lib/` are the Python side.

use std::sync::OnceLock;

use pyo3::prelude::*;

mod communicator;
mod connection;
mod dispatch;
mod errors;
mod handles;
mod marshal;
mod operation;
mod pool;
mod proxy;
mod servant;
mod types;

/// The `Ice.Unset` marker of absent optional values.
static UNSET: OnceLock<Py<PyAny>> = OnceLock::new();

/// The type of `Ice.Unset`: false, and printed as `Unset`.
#[pyclass(frozen, module = "IcePy", name = "UnsetType")]
struct UnsetType;

#[pymethods]
impl UnsetType {
    fn __bool__(&self) -> bool {
        false
    }

    fn __repr__(&self) -> &'static str {
        "Unset"
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // floe's own traces (connections, dispatch, …) go to stderr when RUST_LOG asks for them,
    // e.g. RUST_LOG=floe=debug.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let unset = UNSET.get_or_init(|| Py::new(py, UnsetType).expect("the Unset marker").into_any());
    m.add("Unset", unset.clone_ref(py))?;
    types::register(m)?;
    m.add_class::<types::TypeInfo>()?;
    m.add_class::<proxy::Proxy>()?;
    m.add_class::<operation::Operation>()?;
    m.add_class::<communicator::Communicator>()?;
    m.add_class::<communicator::Properties>()?;
    m.add_class::<servant::ObjectAdapter>()?;
    m.add_class::<handles::Connection>()?;
    m.add_class::<connection::ImplicitContext>()?;
    m.add_class::<connection::Logger>()?;
    m.add_function(wrap_pyfunction!(communicator::create_properties, m)?)?;
    m.add_function(wrap_pyfunction!(communicator::string_to_identity_fn, m)?)?;
    m.add_function(wrap_pyfunction!(communicator::identity_to_string_fn, m)?)?;
    m.add("intVersion", 30710)?;
    m.add("stringVersion", "3.7.10")?;
    Ok(())
}
