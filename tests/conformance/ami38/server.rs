//! Server for Ice 3.8's `Ice/ami` suite, generated from 3.8's Test.ice: the 3.7 server
//! (`test`, `test2` and, on the second test port, `testController`), with 3.8's operations:
//! `closeConnection` (graceful) and `abortConnection` instead of `close(mode)`,
//! `opWithResultAndUE`, `opWithArgs`, at most three dispatches per connection (3.8's back
//! pressure check), and a `pingBiDir` that checks its callback fails while
//! the client's connection has no adapter (context `ONE`).

#[cfg(floe_ice38)]
mod server {

    use std::sync::Mutex;
    use std::time::Duration;

    use floe::bytes::Bytes;
    use floe::{Current, Error, Identity, ObjectAdapter, Proxy as _};
    use floe_conformance::generated38::ami::test::outer::inner;
    use floe_conformance::generated38::ami::test::*;
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
        async fn op_with_result_and_ue(&self, _: &Current) -> floe::Result<i32> {
            Err(Error::user(TestIntfException {}))
        }
        async fn op_with_args(
            &self,
            _: &Current,
        ) -> floe::Result<(i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32)> {
            Ok((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11))
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
        async fn close_connection(&self, current: &Current) -> floe::Result<()> {
            // A graceful close waits for the dispatches in progress, this one included, so it
            // runs after the reply has gone.
            if let Some(connection) = current.connection().cloned() {
                tokio::spawn(async move { connection.close().await });
            }
            Ok(())
        }
        async fn abort_connection(&self, current: &Current) -> floe::Result<()> {
            if let Some(connection) = current.connection() {
                connection.close_forcefully(Error::ConnectionLost("aborted".into()));
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
        async fn supports_functional_tests(&self, _: &Current) -> floe::Result<bool> {
            Ok(false)
        }
        async fn supports_back_pressure_tests(&self, _: &Current) -> floe::Result<bool> {
            Ok(true)
        }
        async fn ping_bi_dir(&self, reply: Option<PingReplyPrx>, current: &Current) -> floe::Result<()> {
            let (Some(reply), Some(connection)) = (reply, current.connection().cloned()) else {
                return Err(Error::Marshal(floe::encoding::DecodeError::Malformed("pingBiDir needs a proxy")));
            };
            // With the context `ONE` the client has not yet given its connection an adapter, so the
            // callback must fail with ObjectNotExist; without it, it must succeed.
            let expect_success = !current.ctx.contains_key("ONE");
            match reply.ice_fixed(connection).reply().await {
                Ok(()) if expect_success => Ok(()),
                Err(Error::ObjectNotExist { .. }) if !expect_success => Ok(()),
                Ok(()) => Err(Error::UnknownException("pingBiDir: the callback succeeded without an adapter".into())),
                Err(e) => Err(e),
            }
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

    pub(crate) fn main() -> std::process::ExitCode {
        // 3.8's back pressure check keeps the server's three threads busy (the driver's
        // `Ice.ThreadPool.Server.SizeMax=3`) and expects the server to stop reading: floe's
        // counterpart of that pool is at most three dispatches per connection.
        let defaults = [
            ("Ice.Warn.Connections", "0"),
            ("Ice.TCP.RcvSize", "50000"),
            ("TestAdapter.Connection.MaxDispatches", "3"),
        ];
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
}

#[cfg(floe_ice38)]
fn main() -> std::process::ExitCode {
    server::main()
}

#[cfg(not(floe_ice38))]
fn main() -> std::process::ExitCode {
    floe_conformance::without_ice38("ami38")
}
