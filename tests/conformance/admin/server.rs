//! Server for Ice's `Ice/admin` suite: a `RemoteCommunicatorFactory` (`factory`) that makes
//! communicators with the properties the client gives, each with a custom admin facet
//! (`TestFacet`) and a property-update callback on its `Properties` facet; the client then
//! calls their `Ice.Admin` objects (Process, Properties, Logger with a remote logger, the
//! custom facet, `Ice.Admin.Facets` filtering). Implements the C++ client's Test.ice, which
//! adds logging and callback operations to the Python client's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use floe::admin::slice::ice::PropertyDict;
use floe::admin::{LogSink, PropertiesAdminHandle, UpdateCallbackId};
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

/// The update callback registered on the communicator's `Properties` facet, and the changes
/// it last reported, until `getChanges` takes them.
struct Updates {
    admin: Option<PropertiesAdminHandle>,
    callback: Mutex<Option<UpdateCallbackId>>,
    last: Arc<(Mutex<Option<PropertyDict>>, Notify)>,
}

impl Updates {
    fn add(&self) {
        let Some(admin) = &self.admin else { return };
        let mut callback = lock(&self.callback);
        if callback.is_none() {
            *lock(&self.last.0) = None;
            let last = self.last.clone();
            *callback = Some(admin.add_update_callback(move |c| {
                *lock(&last.0) = Some(c.clone());
                last.1.notify_waiters();
            }));
        }
    }

    fn remove(&self) {
        if let (Some(admin), Some(id)) = (&self.admin, lock(&self.callback).take()) {
            admin.remove_update_callback(id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct RemoteCommunicatorI {
    communicator: Communicator,
    updates: Updates,
}

impl RemoteCommunicator for RemoteCommunicatorI {
    async fn get_admin(&self, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.communicator.admin().await
    }

    /// The changes of the last `setProperties` call; none without a registered callback. The
    /// callback runs before `setProperties` replies, so the changes are normally here
    /// already; they are waited for (bounded) in case they are not, as Ice's Python server
    /// does.
    async fn get_changes(&self, _: &Current) -> floe::Result<PropertyDict> {
        if lock(&self.updates.callback).is_none() {
            return Ok(PropertyDict::new());
        }
        let deadline = tokio::time::Instant::now() + CHANGES_WAIT;
        loop {
            let arrived = self.updates.last.1.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(c) = lock(&self.updates.last.0).take() {
                return Ok(c);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(floe::Error::UnknownException("no property update arrived".into()));
            }
        }
    }

    async fn add_update_callback(&self, _: &Current) -> floe::Result<()> {
        self.updates.add();
        Ok(())
    }

    async fn remove_update_callback(&self, _: &Current) -> floe::Result<()> {
        self.updates.remove();
        Ok(())
    }

    async fn print(&self, message: floe::CompactString, _: &Current) -> floe::Result<()> {
        self.communicator.logger().print(&message);
        Ok(())
    }

    async fn trace(
        &self,
        category: floe::CompactString,
        message: floe::CompactString,
        _: &Current,
    ) -> floe::Result<()> {
        self.communicator.logger().trace(&category, &message);
        Ok(())
    }

    async fn warning(&self, message: floe::CompactString, _: &Current) -> floe::Result<()> {
        self.communicator.logger().warning(&message);
        Ok(())
    }

    async fn error(&self, message: floe::CompactString, _: &Current) -> floe::Result<()> {
        self.communicator.logger().error(&message);
        Ok(())
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

/// The logger the C++ server installs when the client sets `NullLogger`: it writes nothing,
/// and its prefix is `NullLogger`.
struct NullSink;

impl LogSink for NullSink {
    fn print(&self, _: &str) {}
    fn trace(&self, _: &str, _: &str) {}
    fn warning(&self, _: &str) {}
    fn error(&self, _: &str) {}
    fn prefix(&self) -> &str {
        "NullLogger"
    }
}

struct FactoryI {
    /// What `Ice.AcceptClassCycles` is set to in the communicators made for the client
    /// (`Test.Admin.AcceptClassCycles`, default 1): Ice for Python sets 1 in every
    /// communicator, and the Python client counts it among the properties it reads back; the
    /// C++ run sets 0, meaning unset, as Ice for C++ leaves it.
    accept_class_cycles: bool,
    /// What `Ice.ProgramName` is set to in those communicators (`Test.Admin.ProgramName`,
    /// default unset): Ice 3.8 for C++ gives every communicator a program name (its
    /// executable's), and its admin client counts it among the properties it reads back.
    program_name: Option<String>,
}

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
        if self.accept_class_cycles {
            properties.set("Ice.AcceptClassCycles", "1");
        }
        if let Some(name) = &self.program_name {
            properties.set("Ice.ProgramName", name);
        }
        let communicator = if properties.get_int("NullLogger", 0)? > 0 {
            Communicator::with_logger(properties, Arc::new(NullSink))?
        } else {
            Communicator::with_properties(properties)?
        };
        communicator.add_admin_facet(TestFacetServer::new(TestFacetI), "TestFacet")?;
        let updates = Updates {
            admin: communicator.properties_admin(),
            callback: Mutex::new(None),
            last: Arc::new((Mutex::new(None), Notify::new())),
        };
        updates.add();
        let adapter = current.adapter().ok_or_else(|| floe::Error::Adapter("no adapter".into()))?;
        let servant = RemoteCommunicatorServer::new(RemoteCommunicatorI { communicator, updates });
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
        let accept_class_cycles = server.communicator.properties().get_bool("Test.Admin.AcceptClassCycles", true)?;
        let program_name = server.communicator.properties().get("Test.Admin.ProgramName");
        let factory = FactoryI { accept_class_cycles, program_name };
        adapter.add(RemoteCommunicatorFactoryServer::new(factory), Identity::new("factory"));
        adapter.activate().await
    })
}
