//! Server for Ice's `Ice/admin` suite: a `RemoteCommunicatorFactory` (`factory`) that makes
//! communicators with the properties the client gives, each with a custom admin facet
//! (`TestFacet`) and a property-update callback on its `Properties` facet; the client then
//! calls their `Ice.Admin` objects (Process, Properties, the custom facet, `Ice.Admin.Facets`
//! filtering).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use floe::admin::slice::ice::PropertyDict;
use floe::{Communicator, Current, Identity, ObjectPrx, Properties, Proxy};
use floe_conformance::generated::admin::test::*;
use floe_conformance::TestServer;
use tokio::sync::Notify;

/// How long `getChanges` waits for the update callback before failing.
const CHANGES_WAIT: Duration = Duration::from_secs(30);

struct TestFacetI;

impl TestFacet for TestFacetI {
    async fn op(&self, _: &Current) -> floe::Result<()> {
        Ok(())
    }
}

/// The changes the last property update reported, until `getChanges` takes them.
#[derive(Default)]
struct Changes {
    last: Mutex<Option<PropertyDict>>,
    arrived: Notify,
}

struct RemoteCommunicatorI {
    communicator: Communicator,
    changes: Arc<Changes>,
}

impl RemoteCommunicator for RemoteCommunicatorI {
    async fn get_admin(&self, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.communicator.admin().await
    }

    async fn get_changes(&self, _: &Current) -> floe::Result<PropertyDict> {
        // The callback runs before `setProperties` replies, so the changes are normally here
        // already; wait for them (bounded) in case they are not.
        let deadline = tokio::time::Instant::now() + CHANGES_WAIT;
        loop {
            let arrived = self.changes.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(c) = self.changes.last.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return Ok(c);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(floe::Error::UnknownException("no property update arrived".into()));
            }
        }
    }

    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.shutdown();
        Ok(())
    }

    async fn wait_for_shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.wait_for_shutdown().await;
        Ok(())
    }

    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        self.communicator.destroy().await;
        Ok(())
    }
}

struct FactoryI;

impl RemoteCommunicatorFactory for FactoryI {
    async fn create_communicator(
        &self,
        props: PropertyDict,
        current: &Current,
    ) -> floe::Result<Option<RemoteCommunicatorPrx>> {
        let properties = Properties::new();
        for (k, v) in &props {
            properties.set(k, v);
        }
        // Ice for Python sets this in every communicator it makes, and the client counts it
        // among the properties it reads back.
        properties.set("Ice.AcceptClassCycles", "1");
        let communicator = Communicator::with_properties(properties)?;
        communicator.add_admin_facet(TestFacetServer::new(TestFacetI), "TestFacet")?;
        let changes = Arc::new(Changes::default());
        if let Some(admin) = communicator.properties_admin() {
            let changes = changes.clone();
            admin.add_update_callback(move |c| {
                *changes.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.clone());
                changes.arrived.notify_waiters();
            });
        }
        let adapter = current.adapter().ok_or_else(|| floe::Error::Adapter("no adapter".into()))?;
        let servant = RemoteCommunicatorServer::new(RemoteCommunicatorI { communicator, changes });
        Ok(Some(RemoteCommunicatorPrx::from_object(adapter.add_with_uuid(servant))))
    }

    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("admin", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(RemoteCommunicatorFactoryServer::new(FactoryI), Identity::new("factory"));
        adapter.activate().await
    })
}
