//! Server for Ice 3.8's `Ice/proxy` suite, generated from 3.8's Test.ice: the 3.7 server's
//! `test` (which records the context of `ice_isA`, returns it from `getContext` and echoes
//! proxies back unchanged), plus the object `c` of 3.8, whose operations return their
//! argument.

#[cfg(floe_ice38)]
mod server {
    use std::sync::{Arc, Mutex};

    use floe::{Context, Current, DispatchFuture, Dispatcher, Identity, IncomingRequest, ObjectPrx};
    use floe_conformance::generated38::proxy::test::*;
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

    /// Object `c`: each operation returns what it is given.
    struct CI;

    impl A for CI {
        async fn op_a(&self, a: Option<APrx>, _: &Current) -> floe::Result<Option<APrx>> {
            Ok(a)
        }
    }

    impl B for CI {
        async fn op_b(&self, b: Option<BPrx>, _: &Current) -> floe::Result<Option<BPrx>> {
            Ok(b)
        }
    }

    impl C for CI {
        async fn op_c(&self, c: Option<CPrx>, _: &Current) -> floe::Result<Option<CPrx>> {
            Ok(c)
        }
        async fn op_s(&self, s: S, _: &Current) -> floe::Result<S> {
            Ok(s)
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

    pub(crate) fn main() -> std::process::ExitCode {
        TestServer::main("proxy", &[], |server| async move {
            let adapter = server.adapter("TestAdapter", 0)?;
            let is_a_context = Arc::new(Mutex::new(Context::new()));
            let servant = MyDerivedClassServer::new(MyDerivedClassI { is_a_context: is_a_context.clone() });
            adapter.add(Arc::new(RecordIsAContext { inner: servant, is_a_context }), Identity::new("test"));
            adapter.add(CServer::new(CI), Identity::new("c"));
            adapter.activate().await
        })
    }
}

#[cfg(floe_ice38)]
fn main() -> std::process::ExitCode {
    server::main()
}

#[cfg(not(floe_ice38))]
fn main() -> std::process::ExitCode {
    floe_conformance::without_ice38("proxy38")
}
