//! Server for Ice 3.8's `Ice/objects` suite, generated from 3.8's Test.ice (with its
//! Forward.ice, Derived.ice and DerivedEx.ice): the 3.7 server's class graphs without the
//! classes and operations 3.8 removed (`E`, `F`, `H`, `N`, interfaces by value,
//! `supportsClassGraphDepthMax`), with 3.8's renamed classes (`opRenamedClass`), compact ids
//! given as enumerators, the `TestIntf` object (`test`) of derived types registered with
//! factories, and Ice 3.8's class graph depth limit of 10 (`Ice.ClassGraphDepthMax`).

#[cfg(floe_ice38)]
mod server {
    use std::sync::Mutex;

    use floe::{AnyClass, Class, Current, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, Proxy};
    use floe_conformance::generated38::objects::test::*;
    use floe_conformance::TestServer;

    type R<T> = floe::Result<T>;
    type Opt<T> = Option<Class<T>>;

    struct Graph {
        b1: Class<B>,
        b2: Class<B>,
        c: Class<C>,
        d: Class<D>,
    }

    impl Graph {
        /// The suite's graph: b1.theA = b2, b1.theB = b1, b2.theA = b2, b2.theB = b1,
        /// b2.theC = c, c.theB = b2, d.theA = b1, d.theB = b2.
        fn new() -> Graph {
            let b1 = Class::new(B::default());
            let b2 = Class::new(B::default());
            let c = Class::new(C::default());
            let d = Class::new(D::default());
            {
                let mut w = b1.write();
                w.the_a = b2.downcast();
                w.the_b = Some(b1.clone());
            }
            {
                let mut w = b2.write();
                w.the_a = b2.downcast();
                w.the_b = Some(b1.clone());
                w.the_c = Some(c.clone());
            }
            c.write().the_b = Some(b2.clone());
            {
                let mut w = d.write();
                w.the_a = b1.downcast();
                w.the_b = Some(b2.clone());
            }
            Graph { b1, b2, c, d }
        }

        /// What Ice's `ice_preMarshal` hooks do in the suite's servants: flag every instance
        /// about to be sent.
        fn mark_marshaled(&self) {
            self.b1.write().pre_marshal_invoked = true;
            self.b2.write().pre_marshal_invoked = true;
            self.c.write().pre_marshal_invoked = true;
            self.d.write().pre_marshal_invoked = true;
        }
    }

    struct InitialI {
        graph: Mutex<Graph>,
    }

    impl InitialI {
        fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
            let g = self.graph.lock().expect("graph");
            g.mark_marshaled();
            g
        }
    }

    fn f22(current: &Current) -> R<F2Prx> {
        let adapter = current.adapter().ok_or_else(|| Error::Adapter("no adapter".into()))?;
        Ok(F2Prx::from_object(adapter.communicator().string_to_proxy("F22")?))
    }

    impl Initial for InitialI {
        async fn shutdown(&self, current: &Current) -> R<()> {
            floe_conformance::shutdown(current);
            Ok(())
        }
        async fn get_b1(&self, _: &Current) -> R<Opt<B>> {
            Ok(Some(self.graph().b1.clone()))
        }
        async fn get_b2(&self, _: &Current) -> R<Opt<B>> {
            Ok(Some(self.graph().b2.clone()))
        }
        async fn get_c(&self, _: &Current) -> R<Opt<C>> {
            Ok(Some(self.graph().c.clone()))
        }
        async fn get_d(&self, _: &Current) -> R<Opt<D>> {
            Ok(Some(self.graph().d.clone()))
        }
        async fn set_recursive(&self, _p: Opt<Recursive>, _: &Current) -> R<()> {
            Ok(())
        }
        async fn set_cycle(&self, r: Opt<Recursive>, _: &Current) -> R<()> {
            // Break the cycle the client sent, so that it is freed.
            if let Some(r) = r {
                r.write().v = None;
            }
            Ok(())
        }
        async fn accepts_class_cycles(&self, current: &Current) -> R<bool> {
            Ok(current.adapter().is_some_and(|a| a.communicator().accept_class_cycles()))
        }
        async fn get_mb(&self, _: &Current) -> R<Opt<B>> {
            Ok(Some(self.graph().b1.clone()))
        }
        async fn get_amdmb(&self, _: &Current) -> R<Opt<B>> {
            Ok(Some(self.graph().b1.clone()))
        }
        async fn get_all(&self, _: &Current) -> R<(Opt<B>, Opt<B>, Opt<C>, Opt<D>)> {
            let g = self.graph();
            Ok((Some(g.b1.clone()), Some(g.b2.clone()), Some(g.c.clone()), Some(g.d.clone())))
        }
        async fn op_renamed_class(&self, r: Opt<Renamed>, _: &Current) -> R<Opt<Renamed>> {
            // The instance goes back as it came, RenamedDerived included.
            Ok(r)
        }
        async fn get_k(&self, _: &Current) -> R<Opt<K>> {
            let l = Class::new(L { data: "l".into() });
            Ok(Some(Class::new(K { value: Some(l.to_any()) })))
        }
        async fn op_value(&self, v1: Option<AnyClass>, _: &Current) -> R<(Option<AnyClass>, Option<AnyClass>)> {
            Ok((v1.clone(), v1))
        }
        async fn op_value_seq(&self, v1: ValueSeq, _: &Current) -> R<(ValueSeq, ValueSeq)> {
            Ok((v1.clone(), v1))
        }
        async fn op_value_map(&self, v1: ValueMap, _: &Current) -> R<(ValueMap, ValueMap)> {
            Ok((v1.clone(), v1))
        }
        async fn get_d1(&self, d1: Opt<D1>, _: &Current) -> R<Opt<D1>> {
            Ok(d1)
        }
        async fn throw_e_derived(&self, _: &Current) -> R<()> {
            let a1 = |name: &str| Some(Class::new(A1 { name: name.into() }));
            Err(Error::user(EDerived { a1: a1("a1"), a2: a1("a2"), a3: a1("a3"), a4: a1("a4") }))
        }
        async fn set_g(&self, _g: Opt<G>, _: &Current) -> R<()> {
            Ok(())
        }
        async fn op_base_seq(&self, in_seq: BaseSeq, _: &Current) -> R<(BaseSeq, BaseSeq)> {
            Ok((in_seq.clone(), in_seq))
        }
        async fn get_compact(&self, _: &Current) -> R<Opt<Compact>> {
            Ok(Class::new(CompactExt::default()).downcast())
        }
        async fn get_inner_a(&self, _: &Current) -> R<Opt<inner::A>> {
            let b1: Opt<A> = self.graph().b1.downcast();
            Ok(Some(Class::new(inner::A { the_a: b1 })))
        }
        async fn get_inner_sub_a(&self, _: &Current) -> R<Opt<inner::sub::A>> {
            let b1: Opt<A> = self.graph().b1.downcast();
            let inner_a = Class::new(inner::A { the_a: b1 });
            Ok(Some(Class::new(inner::sub::A { the_a: Some(inner_a) })))
        }
        async fn throw_inner_ex(&self, _: &Current) -> R<()> {
            Err(Error::user(inner::Ex { reason: "Inner::Ex".into() }))
        }
        async fn throw_inner_sub_ex(&self, _: &Current) -> R<()> {
            Err(Error::user(inner::sub::Ex { reason: "Inner::Sub::Ex".into() }))
        }
        async fn op_m(&self, v1: Opt<M>, _: &Current) -> R<(Opt<M>, Opt<M>)> {
            Ok((v1.clone(), v1))
        }
        async fn op_f1(&self, f11: Opt<F1>, _: &Current) -> R<(Opt<F1>, Opt<F1>)> {
            Ok((f11, Some(Class::new(F1 { name: "F12".into() }))))
        }
        async fn op_f2(&self, f21: Option<F2Prx>, current: &Current) -> R<(Option<F2Prx>, Option<F2Prx>)> {
            Ok((f21, Some(f22(current)?)))
        }
        async fn has_f3(&self, _: &Current) -> R<bool> {
            Ok(true)
        }
        async fn op_f3(&self, f31: Opt<F3>, current: &Current) -> R<(Opt<F3>, Opt<F3>)> {
            let f12 = Class::new(F1 { name: "F12".into() });
            Ok((f31, Some(Class::new(F3 { f1: Some(f12), f2: Some(f22(current)?) }))))
        }
    }

    struct TestIntfI;

    impl TestIntf for TestIntfI {
        async fn op_derived(&self, _: &Current) -> R<Opt<Base>> {
            let derived = Class::new(Derived {
                base: Base { the_s: S { str: "S.str".into() }, str: "str".into() },
                b: "b".into(),
            });
            Ok(derived.downcast())
        }
        async fn throw_derived(&self, _: &Current) -> R<()> {
            Err(Error::user(DerivedEx { reason: "reason".into() }))
        }
    }

    /// Answers `op`, declared to return an `Empty`, with an `AlsoEmpty`, as Ice's own server
    /// does (a Blobject): the client must refuse it with a `MarshalException` naming both.
    struct UnexpectedObjectExceptionTestI;

    impl Dispatcher for UnexpectedObjectExceptionTestI {
        fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
            Box::pin(async move {
                let c = &request.current;
                match c.operation.as_str() {
                    "op" => c.ok(|e| {
                        e.write_class(Some(&Class::new(AlsoEmpty::default())));
                        e.write_pending_values();
                    }),
                    "ice_ping" => c.ok(|_| {}),
                    _ => c.operation_not_exist(),
                }
            })
        }
    }

    struct F2I;

    impl F2 for F2I {
        async fn op(&self, _: &Current) -> R<()> {
            Ok(())
        }
    }

    pub(crate) fn main() -> std::process::ExitCode {
        // Ice 3.8's default class graph depth (Ice 3.7's, floe's default, is 100): the client
        // checks that a graph of 11 levels is refused.
        let defaults = [("Ice.Warn.Dispatch", "0"), ("Ice.ClassGraphDepthMax", "10")];
        TestServer::main("objects", &defaults, |server| async move {
            let adapter = server.adapter("TestAdapter", 0)?;
            let initial = InitialI { graph: Mutex::new(Graph::new()) };
            adapter.add(InitialServer::new(initial), Identity::new("initial"));
            adapter.add(TestIntfServer::new(TestIntfI), Identity::new("test"));
            adapter.add(F2Server::new(F2I), Identity::new("F21"));
            adapter.add(std::sync::Arc::new(UnexpectedObjectExceptionTestI), Identity::new("uoet"));
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
    floe_conformance::without_ice38("objects38")
}
