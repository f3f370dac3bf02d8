//! Server for Ice's `Ice/proxy` suite: `test` remembers the context of the last `ice_isA`
//! (what a checked cast sends), returns it from `getContext`, and echoes proxies back unchanged
//! (opaque endpoints included).

use std::sync::{Arc, Mutex};

use floe::{Context, Current, DispatchFuture, Dispatcher, Identity, IncomingRequest, ObjectPrx};
use floe_conformance::generated::proxy::test::*;
use floe_conformance::TestServer;

struct MyDerivedClassI {
    is_a_context: Arc<Mutex<Context>>,
}

/// Records the context of `ice_isA` requests before the generated dispatcher answers them.
struct RecordIsAContext {
    inner: Arc<dyn Dispatcher>,
    is_a_context: Arc<Mutex<Context>>,
}

impl Dispatcher for RecordIsAContext {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        if request.current.operation == "ice_isA" {
            *self.is_a_context.lock().expect("context") = Context::clone(&request.current.ctx);
        }
        self.inner.dispatch(request)
    }
}

impl MyClass for MyDerivedClassI {
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn get_context(&self, _: &Current) -> floe::Result<Context> {
        Ok(self.is_a_context.lock().expect("context").clone())
    }
}

impl MyDerivedClass for MyDerivedClassI {
    async fn echo(&self, obj: Option<ObjectPrx>, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        Ok(obj)
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("proxy", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        let is_a_context = Arc::new(Mutex::new(Context::new()));
        let servant = MyDerivedClassServer::new(MyDerivedClassI { is_a_context: is_a_context.clone() });
        adapter.add(Arc::new(RecordIsAContext { inner: servant, is_a_context }), Identity::new("test"));
        adapter.activate().await
    })
}
