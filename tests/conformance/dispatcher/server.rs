//! Server for Ice's `Ice/dispatcher` suite (its client runs its own callbacks through an Ice
//! dispatcher): `test`, with a large-payload operation for flow control, and
//! `testController`, which holds and resumes the test adapter. Sockets get a 50,000-byte
//! receive buffer, as the suite's servers set, so that a client's sends block while the
//! adapter is held.

use std::time::Duration;

use floe::bytes::Bytes;
use floe::{Current, Identity, ObjectAdapter};
use floe_conformance::generated::dispatcher::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct TestIntfI;

impl TestIntf for TestIntfI {
    async fn op(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn sleep(&self, ms: i32, _: &Current) -> R<()> {
        tokio::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
        Ok(())
    }
    async fn op_with_payload(&self, _: Bytes, _: &Current) -> R<()> {
        Ok(())
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

struct TestIntfControllerI {
    adapter: ObjectAdapter,
}

impl TestIntfController for TestIntfControllerI {
    async fn hold_adapter(&self, _: &Current) -> R<()> {
        self.adapter.hold();
        Ok(())
    }
    async fn resume_adapter(&self, _: &Current) -> R<()> {
        self.adapter.activate().await
    }
}

fn main() -> std::process::ExitCode {
    let defaults = [("Ice.Warn.Connections", "0"), ("Ice.TCP.RcvSize", "50000")];
    TestServer::main("dispatcher", &defaults, |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        let controller_adapter = server.adapter("ControllerAdapter", 1)?;
        adapter.add(TestIntfServer::new(TestIntfI), Identity::new("test"));
        adapter.activate().await?;
        let controller = TestIntfControllerI { adapter: adapter.clone() };
        controller_adapter.add(TestIntfControllerServer::new(controller), Identity::new("testController"));
        controller_adapter.activate().await
    })
}
