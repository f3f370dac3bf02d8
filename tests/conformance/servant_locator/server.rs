//! Server for Ice's `Ice/servantLocator` suite: servant locators for the categories
//! "category" and "" that locate a fresh servant with a cookie, raise the exception each
//! operation names from `locate` (identity name "locate") or from `finished` (name "finished"),
//! and can be removed and added again at run time through `test/activation`.

use std::sync::{Arc, Mutex};

use floe::{Current, Dispatcher, Error, Identity, LocatorCookie, ServantLocator};
use floe_conformance::generated::servant_locator::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct TestI;

impl TestIntf for TestI {
    async fn request_failed_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn unknown_user_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn unknown_local_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn unknown_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn local_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn user_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn python_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn unknown_exception_with_servant_exception(&self, current: &Current) -> R<()> {
        Err(object_not_exist(current))
    }
    async fn impossible_exception(&self, throw: bool, _: &Current) -> R<floe::CompactString> {
        if throw {
            Err(Error::user(TestImpossibleException {}))
        } else {
            Ok("Hello".into())
        }
    }
    async fn intf_user_exception(&self, throw: bool, _: &Current) -> R<floe::CompactString> {
        if throw {
            Err(Error::user(TestIntfUserException {}))
        } else {
            Ok("Hello".into())
        }
    }
    async fn async_response(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn async_exception(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn object_not_exist(current: &Current) -> Error {
    Error::ObjectNotExist {
        identity: current.id.clone(),
        facet: current.facet.to_string(),
        operation: current.operation.to_string(),
    }
}

/// The cookie `locate` hands to `finished`.
struct Cookie(&'static str);

struct ServantLocatorI {
    category: &'static str,
    /// The request being served between `locate` and `finished` (-1: none).
    request_id: Mutex<i32>,
    deactivated: Mutex<bool>,
}

impl ServantLocatorI {
    fn new(category: &'static str) -> Arc<Self> {
        Arc::new(ServantLocatorI { category, request_id: Mutex::new(-1), deactivated: Mutex::new(false) })
    }

    /// The error the suite expects for each operation, raised from `locate` or `finished`.
    fn exception(current: &Current) -> Result<(), Error> {
        let reason = || "reason".to_string();
        Err(match current.operation.as_str() {
            "ice_ids" | "userException" | "impossibleException" => Error::user(TestIntfUserException {}),
            "requestFailedException" => object_not_exist(current),
            "unknownUserException" => Error::UnknownUserException(reason()),
            "unknownLocalException" => Error::UnknownLocalException(reason()),
            "unknownException" | "unknownExceptionWithServantException" => Error::UnknownException(reason()),
            "localException" => Error::Io("socket error".into()),
            // A Python-specific operation (it checks for Python's own exception text); the suite
            // accepts OperationNotExist from servers in other languages.
            "pythonException" => Error::OperationNotExist {
                identity: current.id.clone(),
                facet: current.facet.to_string(),
                operation: current.operation.to_string(),
            },
            "intfUserException" | "asyncResponse" | "asyncException" => Error::user(TestImpossibleException {}),
            _ => return Ok(()),
        })
    }

    fn check(&self, ok: bool, what: &str) -> Result<(), Error> {
        if ok {
            Ok(())
        } else {
            Err(Error::UnknownException(format!("servant locator for {:?}: {what}", self.category)))
        }
    }
}

impl ServantLocator for ServantLocatorI {
    fn locate(&self, _: &Current) -> Option<Arc<dyn Dispatcher>> {
        None
    }

    fn try_locate(&self, current: &Current) -> Result<Option<floe::Located>, Error> {
        self.check(!*self.deactivated.lock().expect("state"), "locate after deactivate")?;
        self.check(current.id.category == self.category || self.category.is_empty(), "wrong category")?;
        // "invalidReturnValue"/"invalidReturnType" test what Python does with a locator that
        // returns something other than a servant; a Rust locator cannot, and finds nothing.
        if matches!(current.id.name.as_str(), "unknown" | "invalidReturnValue" | "invalidReturnType") {
            return Ok(None);
        }
        self.check(current.id.name == "locate" || current.id.name == "finished", "unexpected identity")?;
        if current.id.name == "locate" {
            Self::exception(current)?;
        }
        let mut request_id = self.request_id.lock().expect("state");
        // locate is called once per request, finished after it.
        self.check(*request_id == -1, "locate called twice")?;
        *request_id = current.request_id;
        Ok(Some((TestIntfServer::new(TestI), Some(Box::new(Cookie("blahblah")) as LocatorCookie))))
    }

    fn finished(&self, current: &Current, cookie: Option<LocatorCookie>) -> Result<(), Error> {
        self.check(!*self.deactivated.lock().expect("state"), "finished after deactivate")?;
        {
            let mut request_id = self.request_id.lock().expect("state");
            self.check(*request_id == current.request_id, "finished for another request")?;
            *request_id = -1;
        }
        if current.id.name == "finished" {
            Self::exception(current)?;
        }
        let message = cookie.and_then(|c| c.downcast::<Cookie>().ok()).map(|c| c.0);
        self.check(message == Some("blahblah"), "lost cookie")
    }

    fn deactivate(&self, _category: &str) {
        *self.deactivated.lock().expect("state") = true;
    }
}

struct TestActivationI;

impl TestActivation for TestActivationI {
    async fn activate_servant_locator(&self, activate: bool, current: &Current) -> R<()> {
        let Some(adapter) = current.adapter() else { return Ok(()) };
        if activate {
            adapter.add_servant_locator(ServantLocatorI::new(""), "");
            adapter.add_servant_locator(ServantLocatorI::new("category"), "category");
        } else {
            for category in ["", "category"] {
                if let Some(locator) = adapter.remove_servant_locator(category) {
                    locator.deactivate(category);
                }
            }
        }
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("servantLocator", &[("Ice.Warn.Dispatch", "0")], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add_servant_locator(ServantLocatorI::new("category"), "category");
        adapter.add_servant_locator(ServantLocatorI::new(""), "");
        adapter.add(TestIntfServer::new(TestI), Identity::new("asm"));
        adapter.add(TestActivationServer::new(TestActivationI), Identity::with_category("test", "activation"));
        adapter.activate().await
    })
}
