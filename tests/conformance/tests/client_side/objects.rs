//! Ice/objects: the client checks of `AllTests.py` against Ice's Python server.
//!
//! Ported: 79 checks (assertions in the source) — class graphs received from the server (the
//! B1/B2/C/D graph alone and all at once, with its shared instances and cycles, and the
//! `ice_preMarshal` flags the server's objects set), `Value` parameters alone, in sequences
//! and dictionaries, classes with class members, an exception with class members, sequences
//! of classes, a deep recursive graph, compact type ids, marshaled results, class-keyed
//! dictionaries, forward-declared classes and proxies, and class cycles.
//!
//! Not ported:
//! - the `ice_postUnmarshal` flags and the client's value factories (`MyValueFactory`,
//!   `getE`/`getF`'s `checkValues`, the factory-made types of `getJ`/`getH`, `setI` with the
//!   client's implementations): floe has no value factories calling back into the client's
//!   own implementations, nor unmarshal hooks;
//! - the object factory registration checks (`addObjectFactory`, `findObjectFactory`);
//! - `UnexpectedObjectExceptionTestPrx` (Ice's streaming API on the server);
//! - `opN` (a class holding a Python-side instance of `I`).

use floe::{AnyClass, CallError, Class, Error, Proxy};
use floe_conformance::generated::objects::test::*;

use super::Helper;

fn l(data: &str) -> Class<L> {
    Class::new(L { data: data.into() })
}

fn data(v: &Option<AnyClass>) -> String {
    let v = v.as_ref().expect("a value").downcast::<L>().expect("an L");
    let d = v.read().data.to_string();
    d
}

fn a1(name: &str) -> Option<Class<A1>> {
    Some(Class::new(A1 { name: name.into() }))
}

fn name(a: &Option<Class<A1>>) -> String {
    a.as_ref().expect("an A1").read().name.to_string()
}

pub(crate) async fn all_tests(h: Helper) {
    let base = h.proxy("initial");
    let initial = InitialPrx::checked_cast(&base).await.expect("checkedCast").expect("an Initial");
    assert_eq!(*initial.as_object(), base);

    let b1 = initial.get_b1().await.expect("getB1").expect("b1");
    let b2 = initial.get_b2().await.expect("getB2").expect("b2");
    let c = initial.get_c().await.expect("getC").expect("c");
    let d = initial.get_d().await.expect("getD").expect("d");

    // getK and Value parameters.
    let k = initial.get_k().await.expect("getK").expect("k");
    assert_eq!(data(&k.read().value), "l");
    let (v1, v2) = initial.op_value(Some(&l("l").to_any())).await.expect("opValue");
    assert_eq!(data(&v1), "l");
    assert_eq!(data(&v2), "l");
    let (v1, v2) = initial.op_value_seq(&[Some(l("l").to_any())]).await.expect("opValueSeq");
    assert_eq!(data(&v1[0]), "l");
    assert_eq!(data(&v2[0]), "l");
    let map: ValueMap = [("l".into(), Some(l("l").to_any()))].into_iter().collect();
    let (v1, v2) = initial.op_value_map(&map).await.expect("opValueMap");
    assert_eq!(data(&v1["l"]), "l");
    assert_eq!(data(&v2["l"]), "l");

    // getD1
    let d1 = Class::new(D1 { base: B1 { a1: a1("a1"), a2: a1("a2") }, a3: a1("a3"), a4: a1("a4") });
    let d1 = initial.get_d1(Some(&d1)).await.expect("getD1").expect("d1");
    let d1 = d1.read();
    assert_eq!(name(&d1.base.a1), "a1");
    assert_eq!(name(&d1.base.a2), "a2");
    assert_eq!(name(&d1.a3), "a3");
    assert_eq!(name(&d1.a4), "a4");

    // throwEDerived
    match initial.throw_e_derived().await {
        Err(CallError::User(InitialThrowEDerivedError::EDerived(e))) => {
            assert_eq!(name(&e.a1), "a1");
            assert_eq!(name(&e.a2), "a2");
            assert_eq!(name(&e.a3), "a3");
            assert_eq!(name(&e.a4), "a4");
        }
        other => panic!("expected EDerived, got {other:?}"),
    }

    // setG
    let g = Class::new(G { base: Base { the_s: S { str: "hello".into() }, str: "g".into() } });
    match initial.set_g(Some(&g)).await {
        Ok(()) | Err(Error::OperationNotExist { .. }) => {}
        other => panic!("setG: {other:?}"),
    }

    // Consistency of the graphs received one by one.
    assert!(!b1.ptr_eq(&b2));
    assert!(!b1.ptr_eq(&c));
    assert!(!b1.ptr_eq(&d));
    assert!(!b2.ptr_eq(&c));
    assert!(!b2.ptr_eq(&d));
    assert!(!c.ptr_eq(&d));
    {
        let b1r = b1.read();
        assert!(b1r.base.the_b.as_ref().expect("b1.theB").ptr_eq(&b1));
        assert!(b1r.base.the_c.is_none());
        let the_a = b1r.the_a.as_ref().expect("b1.theA").downcast::<B>().expect("b1.theA is a B");
        let ar = the_a.read();
        assert!(ar.the_a.as_ref().expect("b1.theA.theA").ptr_eq(&the_a));
        assert!(ar.base.the_b.as_ref().expect("b1.theA.theB").ptr_eq(&b1));
        let the_c = ar.base.the_c.clone().expect("b1.theA.theC");
        assert!(the_c.read().the_b.as_ref().expect("b1.theA.theC.theB").ptr_eq(&the_a));
        assert!(b1r.base.pre_marshal_invoked);
        assert!(ar.base.pre_marshal_invoked);
        assert!(the_c.read().pre_marshal_invoked);
    }
    assert!(b2.read().the_a.as_ref().expect("b2.theA").ptr_eq(&b2));
    assert!(d.read().the_c.is_none());

    // All at once: one graph.
    let (b1, b2, c, d) = initial.get_all().await.expect("getAll");
    let (b1, b2, c, d) = (b1.expect("b1"), b2.expect("b2"), c.expect("c"), d.expect("d"));
    assert!(!b1.ptr_eq(&b2));
    assert!(!b1.ptr_eq(&c));
    assert!(!b1.ptr_eq(&d));
    assert!(!b2.ptr_eq(&c));
    assert!(!b2.ptr_eq(&d));
    assert!(!c.ptr_eq(&d));
    {
        let (b1r, b2r, cr, dr) = (b1.read(), b2.read(), c.read(), d.read());
        assert!(b1r.the_a.as_ref().expect("b1.theA").ptr_eq(&b2));
        assert!(b1r.base.the_b.as_ref().expect("b1.theB").ptr_eq(&b1));
        assert!(b1r.base.the_c.is_none());
        assert!(b2r.the_a.as_ref().expect("b2.theA").ptr_eq(&b2));
        assert!(b2r.base.the_b.as_ref().expect("b2.theB").ptr_eq(&b1));
        assert!(b2r.base.the_c.as_ref().expect("b2.theC").ptr_eq(&c));
        assert!(cr.the_b.as_ref().expect("c.theB").ptr_eq(&b2));
        assert!(dr.the_a.as_ref().expect("d.theA").ptr_eq(&b1));
        assert!(dr.the_b.as_ref().expect("d.theB").ptr_eq(&b2));
        assert!(dr.the_c.is_none());
        assert!(dr.pre_marshal_invoked);
        assert!(b1r.base.pre_marshal_invoked);
        assert!(b2r.base.pre_marshal_invoked);
        assert!(cr.pre_marshal_invoked);
    }

    // Sequences of classes.
    match initial.op_base_seq(&[]).await {
        Ok(_) => {
            let one = Class::new(Base::default());
            let (ret, out) = initial.op_base_seq(&[Some(one)]).await.expect("opBaseSeq");
            assert!(ret.len() == 1 && out.len() == 1);
        }
        Err(Error::OperationNotExist { .. }) => {}
        Err(e) => panic!("opBaseSeq: {e}"),
    }

    // A recursive graph deeper than Ice's default class graph depth (100): the server
    // refuses it, or accepts it if it has no limit.
    let depth_max = initial.supports_class_graph_depth_max().await.expect("supportsClassGraphDepthMax");
    let top = Class::new(Recursive::default());
    let mut p = top.clone();
    let mut refused = false;
    for depth in 0..=700 {
        let next = Class::new(Recursive::default());
        p.write().v = Some(next.clone());
        p = next;
        if (depth < 10 && depth % 10 == 0) || (depth < 1000 && depth % 100 == 0) {
            match initial.set_recursive(Some(&top)).await {
                Ok(()) => {}
                Err(Error::UnknownLocalException(_) | Error::UnknownException(_)) => {
                    refused = true;
                    break;
                }
                Err(e) => panic!("setRecursive: {e}"),
            }
        }
    }
    assert!(refused || !depth_max, "the server took a graph deeper than its limit");
    initial.set_recursive(Some(&Class::new(Recursive::default()))).await.expect("setRecursive");

    // Compact type ids.
    match initial.get_compact().await {
        Ok(r) => assert!(r.is_some()),
        Err(Error::OperationNotExist { .. }) => {}
        Err(e) => panic!("getCompact: {e}"),
    }

    // Marshaled results.
    let b1 = initial.get_mb().await.expect("getMB").expect("b1");
    assert!(b1.read().base.the_b.as_ref().expect("theB").ptr_eq(&b1));
    let b1 = initial.get_amdmb().await.expect("getAMDMB").expect("b1");
    assert!(b1.read().base.the_b.as_ref().expect("theB").ptr_eq(&b1));

    // A class holding a dictionary with struct keys.
    let (k1, k2) = (StructKey { i: 1, s: "1".into() }, StructKey { i: 2, s: "2".into() });
    let m = Class::new(M { v: [(k1.clone(), Some(l("one"))), (k2.clone(), Some(l("two")))].into_iter().collect() });
    let (m1, m2) = initial.op_m(Some(&m)).await.expect("opM");
    let (m1, m2) = (m1.expect("m1"), m2.expect("m2"));
    let l_data = |v: &Option<Class<L>>| v.as_ref().expect("an L").read().data.to_string();
    assert_eq!(m1.read().v.len(), 2);
    assert_eq!(m2.read().v.len(), 2);
    assert_eq!(l_data(&m1.read().v[&k1]), "one");
    assert_eq!(l_data(&m2.read().v[&k1]), "one");
    assert_eq!(l_data(&m1.read().v[&k2]), "two");
    assert_eq!(l_data(&m2.read().v[&k2]), "two");

    // Forward declarations.
    let (f11, f12) = initial.op_f1(Some(&Class::new(F1 { name: "F11".into() }))).await.expect("opF1");
    let f11 = f11.expect("f11");
    assert_eq!(f11.read().name, "F11");
    assert_eq!(f12.expect("f12").read().name, "F12");
    let f2 = F2Prx::from_object(h.proxy("F21"));
    let (f21, f22) = initial.op_f2(Some(&f2)).await.expect("opF2");
    let f21 = f21.expect("f21");
    assert_eq!(f21.ice_get_identity().name, "F21");
    f21.op().await.expect("F21.op");
    assert_eq!(f22.expect("f22").ice_get_identity().name, "F22");
    if initial.has_f3().await.expect("hasF3") {
        let f3 = Class::new(F3 { f1: Some(f11.clone()), f2: Some(f21.clone()) });
        let (f31, f32) = initial.op_f3(Some(&f3)).await.expect("opF3");
        let (f31, f32) = (f31.expect("f31"), f32.expect("f32"));
        assert_eq!(f31.read().f1.as_ref().expect("f1").read().name, "F11");
        assert_eq!(f31.read().f2.as_ref().expect("f2").ice_get_identity().name, "F21");
        assert_eq!(f32.read().f1.as_ref().expect("f1").read().name, "F12");
        assert_eq!(f32.read().f2.as_ref().expect("f2").ice_get_identity().name, "F22");
    }

    // A class cycle: the server takes it if it accepts cycles.
    let rec = Class::new(Recursive::default());
    rec.write().v = Some(rec.clone());
    let accepts = initial.accepts_class_cycles().await.expect("acceptsClassCycles");
    match initial.set_cycle(Some(&rec)).await {
        Ok(()) => assert!(accepts),
        Err(Error::UnknownLocalException(_)) => assert!(!accepts),
        Err(e) => panic!("setCycle: {e}"),
    }
    rec.write().v = None;

    initial.shutdown().await.expect("shutdown");
}
