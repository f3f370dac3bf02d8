//! Server for Ice 3.8's `Ice/slicing/objects` suite, generated from 3.8's Test.ice with every
//! class keeping the slices of unknown derived types (Ice 3.8 has no `["preserve-slice"]`, it
//! preserves them always): the 3.7 server's class graphs, without `throwPreservedException`,
//! which 3.8 removed.

#[cfg(floe_ice38)]
mod server {

    use std::collections::HashMap;

    use floe::{AnyClass, Class, Current, Error, Identity};
    use floe_conformance::generated38::slicing_objects::test::*;
    use floe_conformance::TestServer;

    type R<T> = floe::Result<T>;
    type Opt<T> = Option<Class<T>>;

    fn check(ok: bool, what: &str) -> R<()> {
        if ok {
            Ok(())
        } else {
            Err(Error::UnknownException(format!("check failed: {what}")))
        }
    }

    /// The suite's d1 ↔ d2 graph: d1.pb = d1.pd1 = d2, d2.pb = d2.pd2 = d1.
    fn d1_d2() -> (Class<D1>, Class<D2>) {
        let d1 = Class::new(D1 { base: B { sb: "D1.sb".into(), pb: None }, sd1: "D1.sd1".into(), pd1: None });
        let d2 = Class::new(D2 { base: B { sb: "D2.sb".into(), pb: None }, sd2: "D2.sd2".into(), pd2: None });
        {
            let mut w = d2.write();
            w.base.pb = d1.downcast();
            w.pd2 = d1.downcast();
        }
        {
            let mut w = d1.write();
            w.base.pb = d2.downcast();
            w.pd1 = d2.downcast();
        }
        (d1, d2)
    }

    fn d1(sb: &str, sd1: &str) -> Class<D1> {
        Class::new(D1 { base: B { sb: sb.into(), pb: None }, sd1: sd1.into(), pd1: None })
    }

    fn d2(sb: &str, sd2: &str, pd2: Opt<B>) -> Class<D2> {
        Class::new(D2 { base: B { sb: sb.into(), pb: None }, sd2: sd2.into(), pd2 })
    }

    fn ps_unknown(graph: Opt<PNode>) -> Class<PSUnknown> {
        let preserved = Preserved { base: PBase { pi: 5 }, ps: "preserved".into() };
        Class::new(PSUnknown { base: preserved, psu: "unknown".into(), graph, cl: None })
    }

    fn ps_unknown2_cycle() -> Class<PSUnknown2> {
        let r = Class::new(PSUnknown2 { base: Preserved { base: PBase { pi: 5 }, ps: "preserved".into() }, pb: None });
        r.write().pb = r.downcast();
        r
    }

    struct TestI;

    impl TestIntf for TestI {
        async fn s_base_as_object(&self, _: &Current) -> R<Option<AnyClass>> {
            Ok(Some(Class::new(SBase { sb: "SBase.sb".into() }).to_any()))
        }
        async fn s_base_as_s_base(&self, _: &Current) -> R<Opt<SBase>> {
            Ok(Some(Class::new(SBase { sb: "SBase.sb".into() })))
        }
        async fn sbs_known_derived_as_s_base(&self, _: &Current) -> R<Opt<SBase>> {
            let v = SBSKnownDerived {
                base: SBase { sb: "SBSKnownDerived.sb".into() },
                sbskd: "SBSKnownDerived.sbskd".into(),
            };
            Ok(Class::new(v).downcast())
        }
        async fn sbs_known_derived_as_sbs_known_derived(&self, _: &Current) -> R<Opt<SBSKnownDerived>> {
            let v = SBSKnownDerived {
                base: SBase { sb: "SBSKnownDerived.sb".into() },
                sbskd: "SBSKnownDerived.sbskd".into(),
            };
            Ok(Some(Class::new(v)))
        }
        async fn sbs_unknown_derived_as_s_base(&self, _: &Current) -> R<Opt<SBase>> {
            let v = SBSUnknownDerived {
                base: SBase { sb: "SBSUnknownDerived.sb".into() },
                sbsud: "SBSUnknownDerived.sbsud".into(),
            };
            Ok(Class::new(v).downcast())
        }
        async fn sbs_unknown_derived_as_s_base_compact(&self, current: &Current) -> R<Opt<SBase>> {
            self.sbs_unknown_derived_as_s_base(current).await
        }
        async fn s_unknown_as_object(&self, _: &Current) -> R<Option<AnyClass>> {
            Ok(Some(Class::new(SUnknown { su: "SUnknown.su".into(), cycle: None }).to_any()))
        }
        async fn check_s_unknown(&self, o: Option<AnyClass>, current: &Current) -> R<()> {
            let su = o.as_ref().and_then(|o| o.downcast::<SUnknown>());
            if current.encoding.is_1_0() {
                check(su.is_none(), "1.0 slices SUnknown away")
            } else {
                check(su.is_some_and(|s| s.read().su == "SUnknown.su"), "SUnknown came back")
            }
        }
        async fn one_element_cycle(&self, _: &Current) -> R<Opt<B>> {
            let b = Class::new(B { sb: "B1.sb".into(), pb: None });
            b.write().pb = Some(b.clone());
            Ok(Some(b))
        }
        async fn two_element_cycle(&self, _: &Current) -> R<Opt<B>> {
            let b1 = Class::new(B { sb: "B1.sb".into(), pb: None });
            let b2 = Class::new(B { sb: "B2.sb".into(), pb: Some(b1.clone()) });
            b1.write().pb = Some(b2);
            Ok(Some(b1))
        }
        async fn d1_as_b(&self, _: &Current) -> R<Opt<B>> {
            Ok(d1_d2().0.downcast())
        }
        async fn d1_as_d1(&self, _: &Current) -> R<Opt<D1>> {
            Ok(Some(d1_d2().0))
        }
        async fn d2_as_b(&self, _: &Current) -> R<Opt<B>> {
            Ok(d1_d2().1.downcast())
        }
        async fn param_test1(&self, _: &Current) -> R<(Opt<B>, Opt<B>)> {
            let (d1, d2) = d1_d2();
            Ok((d1.downcast(), d2.downcast()))
        }
        async fn param_test2(&self, current: &Current) -> R<(Opt<B>, Opt<B>)> {
            let (p1, p2) = self.param_test1(current).await?;
            Ok((p2, p1))
        }
        async fn param_test3(&self, _: &Current) -> R<(Opt<B>, Opt<B>, Opt<B>)> {
            let p1_2 = d1("D1.sb (p1 2)", "D1.sd2 (p1 2)");
            let p1_1 = d2("D2.sb (p1 1)", "D2.sd2 (p1 1)", p1_2.downcast());
            let p2_2 = d1("D1.sb (p2 2)", "D1.sd2 (p2 2)");
            let p2_1 = d2("D2.sb (p2 1)", "D2.sd2 (p2 1)", p2_2.downcast());
            Ok((p2_2.downcast(), p1_1.downcast(), p2_1.downcast()))
        }
        async fn param_test4(&self, _: &Current) -> R<(Opt<B>, Opt<B>)> {
            let p1 = Class::new(B { sb: "B.sb (1)".into(), pb: None });
            let p2 = Class::new(B { sb: "B.sb (2)".into(), pb: None });
            let d4 =
                Class::new(D4 { base: B { sb: "D4.sb (1)".into(), pb: None }, p1: Some(p1), p2: Some(p2.clone()) });
            Ok((Some(p2), d4.downcast()))
        }
        async fn return_test1(&self, current: &Current) -> R<(Opt<B>, Opt<B>, Opt<B>)> {
            let (p1, p2) = self.param_test1(current).await?;
            Ok((p1.clone(), p1, p2))
        }
        async fn return_test2(&self, current: &Current) -> R<(Opt<B>, Opt<B>, Opt<B>)> {
            let (p2, p1) = self.param_test1(current).await?;
            Ok((p1.clone(), p1, p2))
        }
        async fn return_test3(&self, p1: Opt<B>, _p2: Opt<B>, _: &Current) -> R<Opt<B>> {
            Ok(p1)
        }
        async fn sequence_test(&self, p1: Opt<SS1>, p2: Opt<SS2>, _: &Current) -> R<SS3> {
            Ok(SS3 { c1: p1, c2: p2 })
        }
        async fn dictionary_test(&self, bin: BDict, _: &Current) -> R<(BDict, BDict)> {
            let mut bout = HashMap::new();
            for i in 0..10 {
                let b = bin.get(&i).cloned().flatten();
                let (sb, pb) = b.map(|b| (b.read().sb.clone(), b.read().pb.clone())).unwrap_or_default();
                let d2 = Class::new(D2 { base: B { sb, pb }, sd2: "D2".into(), pd2: None });
                d2.write().pd2 = d2.downcast();
                bout.insert(i * 10, d2.downcast());
            }
            let mut r: BDict = HashMap::new();
            for i in 0..10 {
                let s = format!("D1.{}", i * 20);
                let pb = if i == 0 { None } else { r.get(&((i - 1) * 20)).cloned().flatten() };
                let d1 = Class::new(D1 { base: B { sb: s.clone().into(), pb }, sd1: s.into(), pd1: None });
                d1.write().pd1 = d1.downcast();
                r.insert(i * 20, d1.downcast());
            }
            Ok((r, bout))
        }
        async fn exchange_p_base(&self, pb: Opt<PBase>, _: &Current) -> R<Opt<PBase>> {
            Ok(pb)
        }
        async fn pbs_unknown_as_preserved(&self, _: &Current) -> R<Opt<Preserved>> {
            Ok(ps_unknown(None).downcast())
        }
        async fn check_pbs_unknown(&self, p: Opt<Preserved>, current: &Current) -> R<()> {
            let p = p.ok_or_else(|| Error::UnknownException("null".into()))?;
            check(p.read().pi == 5 && p.read().ps == "preserved", "preserved members")?;
            let u = p.downcast::<PSUnknown>();
            if current.encoding.is_1_0() {
                check(u.is_none(), "1.0 slices PSUnknown away")
            } else {
                check(u.is_some_and(|u| u.read().psu == "unknown" && u.read().graph.is_none()), "PSUnknown came back")
            }
        }
        async fn pbs_unknown_as_preserved_with_graph(&self, _: &Current) -> R<Opt<Preserved>> {
            let (n1, n2, n3) =
                (Class::new(PNode::default()), Class::new(PNode::default()), Class::new(PNode::default()));
            n1.write().next = Some(n2.clone());
            n2.write().next = Some(n3.clone());
            n3.write().next = Some(n1.clone());
            Ok(ps_unknown(Some(n1)).downcast())
        }
        async fn check_pbs_unknown_with_graph(&self, p: Opt<Preserved>, current: &Current) -> R<()> {
            let p = p.ok_or_else(|| Error::UnknownException("null".into()))?;
            check(p.read().pi == 5 && p.read().ps == "preserved", "preserved members")?;
            let u = p.downcast::<PSUnknown>();
            if current.encoding.is_1_0() {
                return check(u.is_none(), "1.0 slices PSUnknown away");
            }
            let u = u.ok_or_else(|| Error::UnknownException("not a PSUnknown".into()))?;
            let g = u.read().graph.clone().ok_or_else(|| Error::UnknownException("no graph".into()))?;
            let n2 = g.read().next.clone().ok_or_else(|| Error::UnknownException("short graph".into()))?;
            let n3 = n2.read().next.clone().ok_or_else(|| Error::UnknownException("short graph".into()))?;
            let back = n3.read().next.clone();
            check(!g.ptr_eq(&n2) && !n2.ptr_eq(&n3) && back.is_some_and(|b| b.ptr_eq(&g)), "three-node cycle")?;
            n3.write().next = None; // break the cycle
            Ok(())
        }
        async fn pbs_unknown2_as_preserved_with_graph(&self, _: &Current) -> R<Opt<Preserved>> {
            Ok(ps_unknown2_cycle().downcast())
        }
        async fn check_pbs_unknown2_with_graph(&self, p: Opt<Preserved>, current: &Current) -> R<()> {
            let p = p.ok_or_else(|| Error::UnknownException("null".into()))?;
            check(p.read().pi == 5 && p.read().ps == "preserved", "preserved members")?;
            let u = p.downcast::<PSUnknown2>();
            if current.encoding.is_1_0() {
                return check(u.is_none(), "1.0 slices PSUnknown2 away");
            }
            let u = u.ok_or_else(|| Error::UnknownException("not a PSUnknown2".into()))?;
            let pb = u.read().pb.clone();
            check(pb.is_some_and(|pb| pb.ptr_eq(&u)), "self reference")?;
            u.write().pb = None; // break the cycle
            Ok(())
        }
        async fn exchange_p_node(&self, pn: Opt<PNode>, _: &Current) -> R<Opt<PNode>> {
            Ok(pn)
        }
        async fn throw_base_as_base(&self, _: &Current) -> R<()> {
            let pb = Class::new(B { sb: "sb".into(), pb: None });
            pb.write().pb = Some(pb.clone());
            Err(Error::user(BaseException { sbe: "sbe".into(), pb: Some(pb) }))
        }
        async fn throw_derived_as_base(&self, _: &Current) -> R<()> {
            let pb = Class::new(B { sb: "sb1".into(), pb: None });
            pb.write().pb = Some(pb.clone());
            let pd1 = d1("sb2", "sd2");
            {
                let mut w = pd1.write();
                w.base.pb = pd1.downcast();
                w.pd1 = pd1.downcast();
            }
            Err(Error::user(DerivedException { sbe: "sbe".into(), pb: Some(pb), sde: "sde1".into(), pd1: Some(pd1) }))
        }
        async fn throw_derived_as_derived(&self, current: &Current) -> R<()> {
            self.throw_derived_as_base(current).await
        }
        async fn throw_unknown_derived_as_base(&self, _: &Current) -> R<()> {
            let d2 = d2("sb d2", "sd2 d2", None);
            {
                let mut w = d2.write();
                w.base.pb = d2.downcast();
                w.pd2 = d2.downcast();
            }
            Err(Error::user(UnknownDerivedException {
                sbe: "sbe".into(),
                pb: d2.downcast(),
                sude: "sude".into(),
                pd2: Some(d2),
            }))
        }
        async fn use_forward(&self, _: &Current) -> R<Opt<Forward>> {
            let f = Class::new(Forward { h: None });
            let h = Class::new(Hidden { f: Some(f.clone()) });
            f.write().h = Some(h);
            Ok(Some(f))
        }
        async fn shutdown(&self, current: &Current) -> R<()> {
            floe_conformance::shutdown(current);
            Ok(())
        }
    }

    pub(crate) fn main() -> std::process::ExitCode {
        // The suite sends cyclic graphs (as Ice's own C++ server, this one accepts them).
        let defaults = [("Ice.Warn.Dispatch", "0"), ("Ice.AcceptClassCycles", "1")];
        TestServer::main("slicing/objects", &defaults, |server| async move {
            let adapter = server.adapter("TestAdapter", 0)?;
            adapter.add(TestIntfServer::new(TestI), Identity::new("Test"));
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
    floe_conformance::without_ice38("slicing_objects38")
}
