//! Server for Ice's `Ice/adapterDeactivation` suite: a servant locator for the category ""
//! locates `test` (with a cookie for `finished`) and `router`, an `Ice::Router` whose server
//! proxy moves to the next port on every call; `deactivate` deactivates the adapter, after
//! which the server exits.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use floe::{Current, Dispatcher, Error, LocatorCookie, ObjectPrx, ServantLocator};
use floe_conformance::generated::adapter_deactivation::{ice, test};
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct TestI;

impl test::TestIntf for TestI {
    async fn transient(&self, current: &Current) -> R<()> {
        let adapter = current.adapter().ok_or_else(|| Error::UnknownException("no adapter".into()))?;
        let transient =
            adapter.communicator().create_object_adapter_with_endpoints("TransientTestAdapter", "default")?;
        transient.activate().await?;
        transient.deactivate().await;
        Ok(())
    }
    async fn deactivate(&self, current: &Current) -> R<()> {
        let adapter = current.adapter().ok_or_else(|| Error::UnknownException("no adapter".into()))?.clone();
        // Deactivating closes the connections gracefully, after this request's reply: it runs
        // on its own, and the server exits once it is done.
        tokio::spawn(async move {
            adapter.deactivate().await;
            adapter.communicator().shutdown();
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(())
    }
}

struct RouterI {
    next_port: AtomicI32,
}

impl ice::Router for RouterI {
    async fn get_client_proxy(&self, _: &Current) -> R<(Option<ObjectPrx>, Option<bool>)> {
        Ok((None, Some(false)))
    }
    async fn get_server_proxy(&self, current: &Current) -> R<Option<ObjectPrx>> {
        let port = self.next_port.fetch_add(1, Ordering::SeqCst);
        let adapter = current.adapter().ok_or_else(|| Error::UnknownException("no adapter".into()))?;
        Ok(Some(adapter.communicator().string_to_proxy(&format!("dummy:tcp -h localhost -p {port} -t 30000"))?))
    }
    async fn add_proxies(&self, _: ice::ObjectProxySeq, _: &Current) -> R<ice::ObjectProxySeq> {
        Ok(Vec::new())
    }
}

/// What `locate` hands to `finished` for `test`.
struct Cookie(&'static str);

struct ServantLocatorI {
    router: Arc<dyn Dispatcher>,
}

impl ServantLocator for ServantLocatorI {
    fn locate(&self, _: &Current) -> Option<Arc<dyn Dispatcher>> {
        None
    }
    fn try_locate(&self, current: &Current) -> Result<Option<(Arc<dyn Dispatcher>, Option<LocatorCookie>)>, Error> {
        if current.id.name == "router" {
            return Ok(Some((self.router.clone(), None)));
        }
        if !current.id.category.is_empty() || current.id.name != "test" {
            return Ok(None);
        }
        Ok(Some((test::TestIntfServer::new(TestI), Some(Box::new(Cookie("blahblah")) as LocatorCookie))))
    }
    fn finished(&self, current: &Current, cookie: Option<LocatorCookie>) -> Result<(), Error> {
        if current.id.name == "router" {
            return Ok(());
        }
        match cookie.as_ref().and_then(|c| c.downcast_ref::<Cookie>()) {
            Some(Cookie("blahblah")) => Ok(()),
            _ => Err(Error::UnknownException("finished without the cookie locate made".into())),
        }
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("adapterDeactivation", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        let router = ice::RouterServer::new(RouterI { next_port: AtomicI32::new(23456) });
        adapter.add_servant_locator(Arc::new(ServantLocatorI { router }), "");
        adapter.activate().await
    })
}
