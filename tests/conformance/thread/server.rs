//! Server for Ice's `Ice/thread` suite: a `RemoteCommunicatorFactory` (`factory`) that makes
//! communicators with the properties the client gives and thread hooks that count the
//! threads those communicators' runtimes start and stop. The client makes five concurrent
//! `sleep` calls on an object of such a communicator, checks that threads started for them,
//! destroys the communicator and checks that every started thread stopped.
//!
//! `sleep` does what a floe servant doing blocking work does: it runs the work on the
//! blocking pool of the runtime that dispatches it (`tokio::task::spawn_blocking`), whose
//! threads start on demand. `Ice.ThreadPool.Server.SizeMax` (5 in the client) sizes the
//! communicator's worker threads, as it does for any floe communicator; the blocking pool
//! keeps tokio's own limit, since it is not a dispatch pool (Ice's limit would not bound the
//! same thing).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use floe::admin::slice::ice::PropertyDict;
use floe::{Communicator, Current, Identity, Properties, Proxy};
use floe_conformance::generated::thread::test::*;
use floe_conformance::TestServer;

/// What the thread hooks counted.
#[derive(Default)]
struct Counts {
    starts: AtomicUsize,
    stops: AtomicUsize,
}

impl Counts {
    fn get(n: &AtomicUsize) -> i32 {
        i32::try_from(n.load(Ordering::SeqCst)).unwrap_or(i32::MAX)
    }
}

struct TestIntfI;

impl TestIntf for TestIntfI {
    async fn sleep(&self, ms: i32, _: &Current) -> floe::Result<()> {
        let pause = Duration::from_millis(u64::try_from(ms).unwrap_or(0));
        tokio::task::spawn_blocking(move || std::thread::sleep(pause))
            .await
            .map_err(|e| floe::Error::UnknownException(format!("sleep: {e}")))
    }
}

struct RemoteCommunicatorI {
    communicator: Communicator,
    counts: Arc<Counts>,
    object: TestIntfPrx,
}

impl RemoteCommunicator for RemoteCommunicatorI {
    async fn get_object(&self, _: &Current) -> floe::Result<Option<TestIntfPrx>> {
        Ok(Some(self.object.clone()))
    }

    // One pair of hooks counts both what Ice's thread notification object and its start/stop
    // functions count: the same events.
    async fn get_thread_hook_start_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(Counts::get(&self.counts.starts))
    }

    async fn get_thread_hook_stop_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(Counts::get(&self.counts.stops))
    }

    async fn get_thread_start_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(Counts::get(&self.counts.starts))
    }

    async fn get_thread_stop_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(Counts::get(&self.counts.stops))
    }

    /// Destroys the communicator, which stops its runtime and waits for its threads.
    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        self.communicator.destroy().await;
        Ok(())
    }
}

/// A communicator with `properties` whose thread hooks count into `counts`. It is made on a
/// plain thread: made on a thread of this server's runtime, it would use that runtime and have
/// no threads of its own to count.
async fn hooked_communicator(properties: Properties, counts: Arc<Counts>) -> floe::Result<Communicator> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("make-communicator".into())
        .spawn(move || {
            let (a, b) = (counts.clone(), counts);
            let made = Communicator::builder()
                .properties(properties)
                .thread_hooks(
                    move || {
                        a.starts.fetch_add(1, Ordering::SeqCst);
                    },
                    move || {
                        b.stops.fetch_add(1, Ordering::SeqCst);
                    },
                )
                .build();
            let _ = tx.send(made);
        })
        .map_err(|e| floe::Error::Io(format!("cannot start a thread: {e}")))?;
    rx.await.map_err(|_| floe::Error::Initialization("no communicator made".into()))?
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
        let counts = Arc::new(Counts::default());
        let communicator = hooked_communicator(properties, counts.clone()).await?;
        // The adapter is made and activated on the new communicator's runtime: an adapter's
        // accept loop, and so its connections and dispatches, run on the runtime that
        // activates it, and `sleep` must run on the blocking pool whose threads are counted.
        let c = communicator.clone();
        let object = communicator
            .runtime_handle()
            .spawn(async move {
                let oa = c.create_object_adapter_with_endpoints("TestIntfAdapter", "tcp -h 127.0.0.1")?;
                let object = TestIntfPrx::from_object(oa.add_with_uuid(TestIntfServer::new(TestIntfI)));
                oa.activate().await?;
                Ok::<_, floe::Error>(object)
            })
            .await
            .map_err(|e| floe::Error::Initialization(format!("cannot activate the adapter: {e}")))??;
        let adapter = current.adapter().ok_or_else(|| floe::Error::Adapter("no adapter".into()))?;
        let servant = RemoteCommunicatorServer::new(RemoteCommunicatorI { communicator, counts, object });
        Ok(Some(RemoteCommunicatorPrx::from_object(adapter.add_with_uuid(servant))))
    }

    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("thread", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(RemoteCommunicatorFactoryServer::new(FactoryI), Identity::new("factory"));
        adapter.activate().await
    })
}
