//! Server for Ice's `Ice/acm` suite: `communicator` creates adapters with the ACM timeout,
//! close and heartbeat settings the client asks for (each serving `test`, whose operations
//! sleep, hold the adapter while sleeping, or count the client's heartbeats), so that the
//! client can check both sides' active connection management.

use std::time::Duration;

use floe::{Current, Error, Identity, ObjectAdapter, Proxy};
use floe_conformance::generated::acm::test::*;
use floe_conformance::TestServer;
use tokio::sync::Notify;

type R<T> = floe::Result<T>;

#[derive(Default)]
struct TestIntfI {
    wake: Notify,
    heartbeats_at_start: std::sync::Mutex<u64>,
}

impl TestIntf for TestIntfI {
    async fn sleep(&self, seconds: i32, _: &Current) -> R<()> {
        let _ = tokio::time::timeout(Duration::from_secs(seconds.max(0) as u64), self.wake.notified()).await;
        Ok(())
    }
    async fn sleep_and_hold(&self, seconds: i32, current: &Current) -> R<()> {
        if let Some(adapter) = current.adapter() {
            adapter.hold();
        }
        self.sleep(seconds, current).await
    }
    async fn interrupt_sleep(&self, _: &Current) -> R<()> {
        self.wake.notify_waiters();
        Ok(())
    }
    async fn start_heartbeat_count(&self, current: &Current) -> R<()> {
        let seen = current.connection().map(|c| c.heartbeats_received()).unwrap_or(0);
        *self.heartbeats_at_start.lock().expect("count") = seen;
        Ok(())
    }
    async fn wait_for_heartbeat_count(&self, count: i32, current: &Current) -> R<()> {
        let Some(connection) = current.connection().cloned() else { return Ok(()) };
        let start = *self.heartbeats_at_start.lock().expect("count");
        // Bounded: the client's heartbeats come every few seconds at most.
        for _ in 0..600 {
            if connection.heartbeats_received().saturating_sub(start) >= count.max(0) as u64 {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(Error::UnknownException(format!("fewer than {count} heartbeats in 30 s")))
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
    async fn activate(&self, _: &Current) -> R<()> {
        self.adapter.activate().await
    }
    async fn hold(&self, _: &Current) -> R<()> {
        self.adapter.hold();
        Ok(())
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
        timeout: i32,
        close: i32,
        heartbeat: i32,
        current: &Current,
    ) -> R<Option<RemoteObjectAdapterPrx>> {
        let here = current.adapter().ok_or_else(|| Error::Adapter("no adapter".into()))?;
        let communicator = here.communicator();
        let props = communicator.properties();
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        let name = format!("ACMAdapter{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        for (key, value) in [("Timeout", timeout), ("Close", close), ("Heartbeat", heartbeat)] {
            if value >= 0 {
                props.set(&format!("{name}.ACM.{key}"), &value.to_string());
            }
        }
        let protocol = props.get("Ice.Default.Protocol").unwrap_or_else(|| "tcp".into());
        let adapter = communicator.create_object_adapter_with_endpoints(&name, &format!("{protocol} -h 127.0.0.1"))?;
        adapter.add(TestIntfServer::new(TestIntfI::default()), Identity::new("test"));
        adapter.activate().await?;
        let test = TestIntfPrx::from_object(adapter.create_proxy(Identity::new("test")));
        let remote = RemoteObjectAdapterServer::new(RemoteObjectAdapterI { adapter, test });
        Ok(Some(RemoteObjectAdapterPrx::from_object(here.add_with_uuid(remote))))
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    let defaults = [("Ice.Warn.Connections", "0"), ("Ice.ACM.Timeout", "1"), ("TestAdapter.ACM.Timeout", "0")];
    TestServer::main("acm", &defaults, |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(RemoteCommunicatorServer::new(RemoteCommunicatorI), Identity::new("communicator"));
        adapter.activate().await?;
        // Adapters made later do not announce themselves.
        server.communicator.properties().set("Ice.PrintAdapterReady", "0");
        Ok(())
    })
}
