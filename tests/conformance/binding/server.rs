//! Server for Ice's `Ice/binding` suite: `communicator` creates object adapters at run time
//! (each serving `test`, which answers with its adapter's name) and deactivates them, so that
//! the client can check how it picks endpoints and reuses connections. Adapters created with
//! the bare `default` endpoint listen on a port the system picks.

use floe::{Current, Error, Identity, ObjectAdapter, Proxy};
use floe_conformance::generated::binding::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct TestI;

impl TestIntf for TestI {
    async fn get_adapter_name(&self, current: &Current) -> R<floe::CompactString> {
        Ok(current.adapter().map(|a| a.name().to_string()).unwrap_or_default().into())
    }
}

struct RemoteObjectAdapterI {
    adapter: ObjectAdapter,
    test: TestIntfPrx,
}

impl RemoteObjectAdapter for RemoteObjectAdapterI {
    async fn get_test_intf(&self, _: &Current) -> R<Option<TestIntfPrx>> {
        Ok(Some(self.test.clone()))
    }
    async fn deactivate(&self, _: &Current) -> R<()> {
        self.adapter.deactivate().await;
        Ok(())
    }
}

struct RemoteCommunicatorI;

impl RemoteCommunicator for RemoteCommunicatorI {
    async fn create_object_adapter(
        &self,
        name: floe::CompactString,
        endpoints: floe::CompactString,
        current: &Current,
    ) -> R<Option<RemoteObjectAdapterPrx>> {
        let here = current.adapter().ok_or_else(|| Error::Adapter("no adapter".into()))?;
        let communicator = here.communicator();
        let endpoints = if endpoints.contains("-p") {
            endpoints
        } else {
            let host = communicator.properties().get("Ice.Default.Host").unwrap_or_else(|| "127.0.0.1".into());
            floe::format_compact!("{endpoints} -h \"{host}\" -p 0")
        };
        let adapter = communicator.create_object_adapter_with_endpoints(&name, &endpoints)?;
        adapter.add(TestIntfServer::new(TestI), Identity::new("test"));
        adapter.activate().await?;
        // Made once the adapter listens, so that it carries the port the system picked.
        let test = TestIntfPrx::from_object(adapter.create_proxy(Identity::new("test")));
        let remote = RemoteObjectAdapterServer::new(RemoteObjectAdapterI { adapter, test });
        Ok(Some(RemoteObjectAdapterPrx::from_object(here.add_with_uuid(remote))))
    }
    async fn deactivate_object_adapter(&self, adapter: Option<RemoteObjectAdapterPrx>, _: &Current) -> R<()> {
        if let Some(adapter) = adapter {
            adapter.deactivate().await?;
        }
        Ok(())
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("binding", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(RemoteCommunicatorServer::new(RemoteCommunicatorI), Identity::new("communicator"));
        adapter.activate().await
    })
}
