//! Server for Ice's `Ice/asyncio` suite (its client awaits Ice futures from Python's asyncio):
//! asynchronous operations that wait before they return or raise, and one that calls back
//! the proxy it is given.

use std::time::Duration;

use floe::{Current, Error, Identity};
use floe_conformance::generated::asyncio::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct TestIntfI;

impl TestIntf for TestIntfI {
    async fn op(&self, _: &Current) -> R<i32> {
        Ok(5)
    }
    async fn call_op_on(&self, proxy: Option<TestIntfPrx>, _: &Current) -> R<i32> {
        let proxy = proxy.ok_or_else(|| Error::UnknownException("callOpOn needs a proxy".into()))?;
        proxy.sleep(10).await?;
        proxy.op().await
    }
    async fn throw_user_exception1(&self, _: &Current) -> R<()> {
        Err(Error::user(TestException {}))
    }
    async fn throw_user_exception2(&self, _: &Current) -> R<()> {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Err(Error::user(TestException {}))
    }
    async fn throw_unhandled_exception1(&self, _: &Current) -> R<()> {
        Err(Error::UnknownException("unexpected".into()))
    }
    async fn throw_unhandled_exception2(&self, _: &Current) -> R<()> {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Err(Error::UnknownException("unexpected".into()))
    }
    async fn sleep(&self, ms: i32, _: &Current) -> R<()> {
        tokio::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
        Ok(())
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("asyncio", &[("Ice.Warn.Dispatch", "0")], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(TestIntfServer::new(TestIntfI), Identity::new("test"));
        adapter.activate().await
    })
}
