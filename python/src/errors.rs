//! floe's errors as the `Ice.LocalException` subclasses that Ice for Python raises, and back:
//! what a servant raises becomes the reply Ice sends for it.

use floe::encoding::DecodeError;
use floe::{Error, Identity};
use pyo3::prelude::*;

/// The `Ice` package (our own `lib/Ice`).
pub fn ice(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("Ice")
}

/// An `Ice.<name>` local exception with `message` and attributes `attrs`.
pub fn local(py: Python<'_>, name: &str, message: &str, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = ice(py)?.getattr(name).or_else(|_| ice(py)?.getattr("UnknownLocalException"))?;
        let obj = class.call0()?;
        obj.setattr("_message", message)?;
        for (k, v) in attrs {
            obj.setattr(*k, v)?;
        }
        Ok(PyErr::from_value(obj))
    })();
    made.unwrap_or_else(|e| e)
}

/// An `Ice.MarshalException`.
pub fn marshal(reason: String) -> PyErr {
    Python::attach(|py| {
        local(
            py,
            "MarshalException",
            &reason,
            &[(
                "reason",
                reason.clone().into_pyobject(py).map(|s| s.into_any().unbind()).unwrap_or_else(|_| py.None()),
            )],
        )
    })
}

/// A decoding failure as an `Ice.MarshalException`.
pub fn marshal_from(e: DecodeError) -> PyErr {
    marshal(e.to_string())
}

/// An `Ice.Identity` for `id`.
pub fn identity(py: Python<'_>, id: &Identity) -> PyResult<Py<PyAny>> {
    Ok(ice(py)?.getattr("Identity")?.call1((id.name.as_str(), id.category.as_str()))?.unbind())
}

/// Reads an `Ice.Identity` (anything with `name` and `category`).
pub fn to_identity(v: &Bound<'_, PyAny>) -> PyResult<Identity> {
    let name: String = v.getattr("name")?.extract()?;
    let category: String = v.getattr("category")?.extract()?;
    Ok(Identity { name: name.into(), category: category.into() })
}

fn text(py: Python<'_>, s: &str) -> Py<PyAny> {
    pyo3::types::PyString::new(py, s).into_any().unbind()
}

/// The Python exception for a floe error.
pub fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    let message = e.to_string();
    let request_failed = |name: &str, id: &Identity, facet: &str, operation: &str| {
        let id = identity(py, id).unwrap_or_else(|_| py.None());
        local(py, name, &message, &[("id", id), ("facet", text(py, facet)), ("operation", text(py, operation))])
    };
    match e {
        Error::ConnectFailed { reason, .. } if reason.contains("refused") => {
            local(py, "ConnectionRefusedException", &message, &[])
        }
        Error::ObjectNotExist { identity, facet, operation } => {
            request_failed("ObjectNotExistException", identity, facet, operation)
        }
        Error::FacetNotExist { identity, facet, operation } => {
            request_failed("FacetNotExistException", identity, facet, operation)
        }
        Error::OperationNotExist { identity, facet, operation } => {
            request_failed("OperationNotExistException", identity, facet, operation)
        }
        Error::UnknownLocalException(s) | Error::UnknownUserException(s) | Error::UnknownException(s) => {
            let name = e.ice_type_id().trim_start_matches("::Ice::");
            local(py, name, &message, &[("unknown", text(py, s))])
        }
        Error::TwowayOnly(op) => local(py, "TwowayOnlyException", &message, &[("operation", text(py, op))]),
        Error::NoEndpoint(p) => local(py, "NoEndpointException", &message, &[("proxy", text(py, p))]),
        Error::ProxyParse { input, .. } => local(py, "ProxyParseException", &message, &[("str", text(py, input))]),
        Error::Adapter(m) if m.contains("invalid endpoint") => local(py, "EndpointParseException", &message, &[]),
        Error::Marshal(d) => local(py, "MarshalException", &message, &[("reason", text(py, &d.to_string()))]),
        _ => local(py, e.ice_type_id().trim_start_matches("::Ice::"), &message, &[]),
    }
}

/// What a servant raised, as the floe error its reply reports: Ice's request-failed and
/// unknown exceptions travel as themselves, any other local exception as
/// `UnknownLocalException` and any other Python exception as `UnknownException`, with the
/// exception's text.
pub fn from_py(py: Python<'_>, err: &PyErr, operation: &str, id: &Identity, facet: &str) -> Error {
    let value = err.value(py);
    let class_name = |v: &Bound<'_, PyAny>| -> String {
        v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".to_owned())
    };
    let is = |name: &str| -> bool {
        ice(py).and_then(|m| m.getattr(name)).and_then(|c| value.is_instance(&c)).unwrap_or(false)
    };
    let attr = |name: &str| -> Option<String> { value.getattr(name).ok().and_then(|v| v.extract().ok()) };
    let target = |default: &Identity| -> Identity {
        value
            .getattr("id")
            .ok()
            .and_then(|v| to_identity(&v).ok())
            .filter(|i| !i.name.is_empty())
            .unwrap_or_else(|| default.clone())
    };
    let facet_of = || attr("facet").filter(|f| !f.is_empty()).unwrap_or_else(|| facet.to_owned());
    let operation_of = || attr("operation").filter(|o| !o.is_empty()).unwrap_or_else(|| operation.to_owned());
    if is("ObjectNotExistException") {
        return Error::ObjectNotExist { identity: target(id), facet: facet_of(), operation: operation_of() };
    }
    if is("FacetNotExistException") {
        return Error::FacetNotExist { identity: target(id), facet: facet_of(), operation: operation_of() };
    }
    if is("OperationNotExistException") {
        return Error::OperationNotExist { identity: target(id), facet: facet_of(), operation: operation_of() };
    }
    let described = || -> String {
        let text = value.str().map(|s| s.to_string()).unwrap_or_default();
        if text.is_empty() {
            class_name(value)
        } else {
            format!("{}: {text}", class_name(value))
        }
    };
    for (name, make) in [
        ("UnknownLocalException", Error::UnknownLocalException as fn(String) -> Error),
        ("UnknownUserException", Error::UnknownUserException),
        ("UnknownException", Error::UnknownException),
    ] {
        if is(name) {
            return make(attr("unknown").unwrap_or_else(described));
        }
    }
    if is("LocalException") {
        let id = value
            .getattr("ice_id")
            .and_then(|f| f.call0())
            .and_then(|s| s.extract::<String>())
            .unwrap_or_else(|_| class_name(value));
        return Error::UnknownLocalException(format!(
            "{id}: {}",
            value.str().map(|s| s.to_string()).unwrap_or_default()
        ));
    }
    if is("UserException") {
        let id = value.getattr("_ice_id").and_then(|s| s.extract::<String>()).unwrap_or_else(|_| class_name(value));
        return Error::UnknownUserException(id);
    }
    Error::UnknownException(described())
}
