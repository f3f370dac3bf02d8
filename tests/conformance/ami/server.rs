//! Server for Ice's `Ice/ami` suite: `test` (TestIntf, with an asynchronous `startDispatch`
//! that `finishDispatch` completes, batch counting, connection close on request, and a
//! bidirectional `pingBiDir`), `test2` (Outer::Inner::TestIntf) and, on the second test port,
//! `testController`, which holds and resumes the test adapter. Sockets get a 50,000-byte
//! receive buffer, as the suite needs sends to block while the adapter is held.

use std::sync::Mutex;
use std::time::Duration;

use floe::bytes::Bytes;
use floe::{Current, Error, Identity, ObjectAdapter, Proxy as _};
use floe_conformance::generated::ami::test::outer::inner;
use floe_conformance::generated::ami::test::*;
use floe_conformance::TestServer;
use tokio::sync::{oneshot, Notify};

#[derive(Default)]
struct State {
    batch_count: i32,
    pending: Option<oneshot::Sender<()>>,
    shutdown: bool,
}

#[derive(Default)]
struct TestIntfI {
    state: Mutex<State>,
    batch_arrived: Notify,
}

impl TestIntfI {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("state")
    }
}

impl TestIntf for TestIntfI {
    async fn op(&self, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn op_with_payload(&self, _seq: Bytes, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn op_with_result(&self, _: &Current) -> floe::Result<i32> {
        Ok(15)
    }
    async fn op_with_ue(&self, _: &Current) -> floe::Result<()> {
        Err(Error::user(TestIntfException {}))
    }
    async fn op_batch(&self, _: &Current) -> floe::Result<()> {
        self.state().batch_count += 1;
        self.batch_arrived.notify_waiters();
        Ok(())
    }
    async fn op_batch_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.state().batch_count)
    }
    async fn wait_for_batch(&self, count: i32, _: &Current) -> floe::Result<bool> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let arrived = self.batch_arrived.notified();
            {
                let mut state = self.state();
                if state.batch_count >= count || tokio::time::Instant::now() >= deadline {
                    let result = state.batch_count == count;
                    state.batch_count = 0;
                    return Ok(result);
                }
            }
            let _ = tokio::time::timeout_at(deadline, arrived).await;
        }
    }
    async fn close(&self, mode: CloseMode, current: &Current) -> floe::Result<()> {
        let Some(connection) = current.connection().cloned() else { return Ok(()) };
        match mode {
            CloseMode::Forcefully => connection.close_forcefully(Error::ConnectionLost("closed forcefully".into())),
            // A graceful close waits for the dispatches in progress, this one included, so
            // it runs after the reply has gone.
            CloseMode::Gracefully | CloseMode::GracefullyWithWait => {
                tokio::spawn(async move { connection.close().await });
            }
        }
        Ok(())
    }
    async fn sleep(&self, ms: i32, _: &Current) -> floe::Result<()> {
        tokio::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
        Ok(())
    }
    async fn start_dispatch(&self, _: &Current) -> floe::Result<()> {
        let finished = {
            let mut state = self.state();
            if state.shutdown {
                // The forceful close test may dispatch shutdown before startDispatch.
                return Ok(());
            }
            if let Some(previous) = state.pending.take() {
                let _ = previous.send(());
            }
            let (tx, rx) = oneshot::channel();
            state.pending = Some(tx);
            rx
        };
        let _ = finished.await;
        Ok(())
    }
    async fn finish_dispatch(&self, _: &Current) -> floe::Result<()> {
        let mut state = self.state();
        if let Some(pending) = state.pending.take() {
            let _ = pending.send(());
        }
        Ok(())
    }
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        {
            let mut state = self.state();
            state.shutdown = true;
            if let Some(pending) = state.pending.take() {
                let _ = pending.send(());
            }
        }
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn supports_amd(&self, _: &Current) -> floe::Result<bool> {
        Ok(true)
    }
    async fn supports_functional_tests(&self, _: &Current) -> floe::Result<bool> {
        Ok(false)
    }
    async fn ping_bi_dir(&self, reply: Option<PingReplyPrx>, current: &Current) -> floe::Result<()> {
        let (Some(reply), Some(connection)) = (reply, current.connection().cloned()) else {
            return Err(Error::Marshal(floe::encoding::DecodeError::Malformed("pingBiDir needs a proxy")));
        };
        reply.ice_fixed(connection).reply().await
    }
}

struct InnerTestIntfI;

impl inner::TestIntf for InnerTestIntfI {
    async fn op(&self, i: i32, _: &Current) -> floe::Result<(i32, i32)> {
        Ok((i, i))
    }
}

struct TestIntfControllerI {
    adapter: ObjectAdapter,
}

impl TestIntfController for TestIntfControllerI {
    async fn hold_adapter(&self, _: &Current) -> floe::Result<()> {
        self.adapter.hold();
        Ok(())
    }
    async fn resume_adapter(&self, _: &Current) -> floe::Result<()> {
        self.adapter.activate().await
    }
}

fn main() -> std::process::ExitCode {
    let defaults = [("Ice.Warn.Connections", "0"), ("Ice.TCP.RcvSize", "50000")];
    TestServer::main("ami", &defaults, |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        let controller_adapter = server.adapter("ControllerAdapter", 1)?;
        adapter.add(TestIntfServer::new(TestIntfI::default()), Identity::new("test"));
        adapter.add(inner::TestIntfServer::new(InnerTestIntfI), Identity::new("test2"));
        adapter.activate().await?;
        let controller = TestIntfControllerI { adapter: adapter.clone() };
        controller_adapter.add(TestIntfControllerServer::new(controller), Identity::new("testController"));
        controller_adapter.activate().await
    })
}
