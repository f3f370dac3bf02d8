//! Ice/operations: the client checks of `AllTests.py` with `Twoways.py`, `Oneways.py` and
//! `BatchOneways.py`, against Ice's Python server.
//!
//! Ported: 204 checks (assertions in the source, some in loops; a whole-collection
//! comparison stands for Ice's per-element checks of that collection). Twoways runs on the `MyClass` and the
//! `MyDerivedClass` proxy, as Ice's client does.
//!
//! Not ported, as they do not apply to floe's API:
//! - the out-of-range argument checks (`opByte(0x01ff, …)`, `opShortIntLong(32767 + 1, …)`,
//!   `opFloatDouble(3.402823466E38 * 2, …)` raising `ValueError`): Rust's integer and float
//!   types cannot hold such values;
//! - the `array.array` variants of the sequence operations, `Ice.ObjectPrx.ice_staticId` and
//!   the `Prx.ice_staticId` checks (Python mapping);
//! - the futures and AMI variants (TwowaysFuture, TwowaysAMI, OnewaysFuture, OnewaysAMI,
//!   BatchOneways*Future/AMI): floe's invocations are all futures, which the checks here use;
//! - the batch request interceptor checks and `Connection.flushBatchRequests` /
//!   `Communicator.flushBatchRequests`: floe has neither;
//! - the `PerThread` implicit context (floe's implicit context is per communicator, as
//!   `Shared`), and the implicit context's `put`/`get`/`containsKey` return values (floe's
//!   setters return nothing).

// The values are Ice's own test values (3.14, FLT_MAX as Ice writes it).
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use floe::{CompactString, Context, Error, Identity, Proxy};
use floe_conformance::generated::operations::m::BPrx;
use floe_conformance::generated::operations::test::*;

use super::{expect_err, Helper};

fn s(v: &str) -> CompactString {
    v.into()
}

fn strings(v: &[&str]) -> Vec<CompactString> {
    v.iter().map(|x| s(x)).collect()
}

fn map<K: Eq + Hash, V>(pairs: impl IntoIterator<Item = (K, V)>) -> HashMap<K, V> {
    pairs.into_iter().collect()
}

fn ctx(pairs: &[(&str, &str)]) -> Context {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[track_caller]
fn close(a: f64, b: f64, eps: f64) {
    assert!((a - b).abs() < eps, "{a} is not within {eps} of {b}");
}

fn bytes(v: &[u8]) -> ByteS {
    floe::bytes::Bytes::copy_from_slice(v)
}

pub(crate) async fn all_tests(h: Helper) {
    let base = h.proxy("test");
    let cl = MyClassPrx::checked_cast(&base).await.expect("checkedCast").expect("a MyClass");
    let derived = MyDerivedClassPrx::checked_cast(&cl).await.expect("checkedCast").expect("a MyDerivedClass");
    let bprx = BPrx::checked_cast(&h.proxy("b")).await.expect("checkedCast").expect("a B");

    twoways(&h, &cl, &bprx).await;
    twoways(&h, &MyClassPrx::unchecked_cast(&derived), &bprx).await;
    derived.op_derived().await.expect("opDerived");

    oneways(&cl).await;

    batch_oneways(&cl).await;
    batch_oneways(&MyClassPrx::unchecked_cast(&derived)).await;

    cl.shutdown().await.expect("shutdown");
    // The server is gone: a call fails with a local exception.
    let gone = cl.ice_timeout(100).ice_invocation_timeout(Some(Duration::from_secs(5))).ice_ping().await;
    assert!(gone.is_err(), "ice_ping after shutdown succeeded");
}

async fn twoways(h: &Helper, p: &MyClassPrx, bprx: &BPrx) {
    let literals = p.op_string_literals().await.expect("opStringLiterals");
    let expected = [
        (S0, "\\", SW0),
        (S1, "A", SW1),
        (S2, "Ice", SW2),
        (S3, "A21", SW3),
        (S4, "\\u0041 \\U00000041", SW4),
        (S5, "\u{ff}", SW5),
        (S6, "\u{3ff}", SW6),
        (S7, "\u{5f0}", SW7),
        (S8, "\u{10000}", SW8),
        (S9, "\u{1f34c}", SW9),
        (S10, "\u{da7}", SW10),
    ];
    for (k, (c, value, w)) in expected.iter().enumerate() {
        assert_eq!(c, value);
        assert_eq!(c, w);
        assert_eq!(literals[k], *c);
        assert_eq!(literals[k + 11], *c);
    }
    assert_eq!(SS0, "'\"?\\\u{7}\u{8}\u{c}\n\r\t\u{b}\u{6}");
    assert_eq!(SS0, SS1);
    assert_eq!(SS0, SS2);
    assert_eq!(literals[22], SS0);
    assert_eq!(literals[23], SS0);
    assert_eq!(literals[24], SS0);
    assert_eq!(SS3, "\\\\U\\u\\");
    assert_eq!(literals[25], SS3);
    assert_eq!(SS4, "\\A\\");
    assert_eq!(literals[26], SS4);
    assert_eq!(SS5, "\\u0041\\");
    assert_eq!(literals[27], SS5);
    assert_eq!(SU0, SU1);
    assert_eq!(SU0, SU2);
    assert_eq!(literals[28], SU0);
    assert_eq!(literals[29], SU0);
    assert_eq!(literals[30], SU0);

    p.ice_ping().await.expect("ice_ping");
    assert!(p.ice_is_a(MyClassPrx::TYPE_ID).await.expect("ice_isA"));
    let ids = p.ice_ids().await.expect("ice_ids");
    assert_eq!(ids, ["::Ice::Object", "::Test::MyClass", "::Test::MyDerivedClass"]);
    assert_eq!(p.ice_id().await.expect("ice_id"), MyDerivedClassPrx::TYPE_ID);

    p.op_void().await.expect("opVoid");

    let (r, b) = p.op_byte(0xff, 0x0f).await.expect("opByte");
    assert_eq!(b, 0xf0);
    assert_eq!(r, 0xff);

    let (r, b) = p.op_bool(true, false).await.expect("opBool");
    assert!(b);
    assert!(!r);

    for (s_, i, l) in [(10, 11, 12), (i16::MIN, i32::MIN, i64::MIN), (i16::MAX, i32::MAX, i64::MAX)] {
        let (r, so, io, lo) = p.op_short_int_long(s_, i, l).await.expect("opShortIntLong");
        assert_eq!(so, s_);
        assert_eq!(io, i);
        assert_eq!(lo, l);
        assert_eq!(r, l);
    }

    let (r, f, d) = p.op_float_double(3.14, 1.1E10).await.expect("opFloatDouble");
    close(f64::from(f), 3.14, 0.001);
    assert_eq!(d, 1.1E10);
    assert_eq!(r, 1.1E10);

    p.op_float_double(3.402823466E38, 0.0).await.expect("opFloatDouble(max)");
    p.op_float_double(-3.402823466E38, 0.0).await.expect("opFloatDouble(-max)");
    for v in [f64::INFINITY, f64::NEG_INFINITY] {
        let (r, f, d) = p.op_float_double(v as f32, v).await.expect("opFloatDouble(inf)");
        assert!(r.is_infinite() && f.is_infinite() && d.is_infinite());
    }
    for v in [f64::NAN, -f64::NAN] {
        let (r, f, d) = p.op_float_double(v as f32, v).await.expect("opFloatDouble(nan)");
        assert!(r.is_nan() && f.is_nan() && d.is_nan());
    }

    let (r, so) = p.op_string("hello", "world").await.expect("opString");
    assert_eq!(so, "world hello");
    assert_eq!(r, "hello world");

    let (r, e) = p.op_my_enum(MyEnum::Enum2).await.expect("opMyEnum");
    assert_eq!(e, MyEnum::Enum2);
    assert_eq!(r, MyEnum::Enum3);

    // opMyClass: proxies in and out.
    let (r, c1, c2) = p.op_my_class(Some(p)).await.expect("opMyClass");
    let (r, c1, c2) = (r.expect("r"), c1.expect("c1"), c2.expect("c2"));
    let same = |a: &MyClassPrx| a.ice_get_identity() == p.ice_get_identity() && a.ice_get_facet() == p.ice_get_facet();
    assert!(same(&c1));
    assert!(!same(&c2));
    assert!(same(&r));
    assert_eq!(*c1.ice_get_identity(), Identity::new("test"));
    assert_eq!(*c2.ice_get_identity(), Identity::new("noSuchIdentity"));
    assert_eq!(*r.ice_get_identity(), Identity::new("test"));
    r.op_void().await.expect("r.opVoid");
    c1.op_void().await.expect("c1.opVoid");
    expect_err(c2.op_void().await, "ObjectNotExistException", |e| matches!(e, Error::ObjectNotExist { .. }));

    let (r, c1, c2) = p.op_my_class(None).await.expect("opMyClass(None)");
    assert!(c1.is_none());
    assert!(c2.is_some());
    let r = r.expect("r");
    assert!(same(&r));
    r.op_void().await.expect("r.opVoid");

    // opStruct
    let si1 = Structure { p: Some(p.clone()), e: MyEnum::Enum3, s: AnotherStruct { s: s("abc") } };
    let si2 = Structure { p: None, e: MyEnum::Enum2, s: AnotherStruct { s: s("def") } };
    let (rso, so) = p.op_struct(&si1, &si2).await.expect("opStruct");
    assert!(rso.p.is_none());
    assert_eq!(rso.e, MyEnum::Enum2);
    assert_eq!(rso.s.s, "def");
    assert_eq!(so.p.as_ref(), Some(p));
    assert_eq!(so.e, MyEnum::Enum3);
    assert_eq!(so.s.s, "a new string");
    so.p.as_ref().expect("so.p").op_void().await.expect("so.p.opVoid");
    // Default-valued structs (Python's null struct marshals as the default one).
    let (rso, so) = p.op_struct(&Structure::default(), &Structure::default()).await.expect("opStruct(default)");
    assert!(rso.p.is_none());
    assert_eq!(rso.e, MyEnum::Enum1);
    assert_eq!(rso.s.s, "");
    assert!(so.p.is_none());
    assert_eq!(so.e, MyEnum::Enum1);
    assert_eq!(so.s.s, "a new string");

    // opByteS
    let (rso, bso) =
        p.op_byte_s(&bytes(&[0x01, 0x11, 0x12, 0x22]), &bytes(&[0xf1, 0xf2, 0xf3, 0xf4])).await.expect("opByteS");
    assert_eq!(&bso[..], [0x22, 0x12, 0x11, 0x01]);
    assert_eq!(&rso[..], [0x01, 0x11, 0x12, 0x22, 0xf1, 0xf2, 0xf3, 0xf4]);

    // opBoolS
    let (rso, bso) = p.op_bool_s(&[true, true, false], &[false]).await.expect("opBoolS");
    assert_eq!(bso, [true, true, false, false]);
    assert_eq!(rso, [false, true, true]);

    // opShortIntLongS
    let (rso, sso, iso, lso) =
        p.op_short_int_long_s(&[1, 2, 3], &[5, 6, 7, 8], &[10, 30, 20]).await.expect("opShortIntLongS");
    assert_eq!(sso, [1, 2, 3]);
    assert_eq!(iso, [8, 7, 6, 5]);
    assert_eq!(lso, [10, 30, 20, 10, 30, 20]);
    assert_eq!(rso, [10, 30, 20]);

    // opFloatDoubleS
    let (rso, fso, dso) = p.op_float_double_s(&[3.14, 1.11], &[1.1E10, 1.2E10, 1.3E10]).await.expect("opFloatDoubleS");
    assert_eq!(fso.len(), 2);
    close(f64::from(fso[0]), 3.14, 0.001);
    close(f64::from(fso[1]), 1.11, 0.001);
    assert_eq!(dso, [1.3E10, 1.2E10, 1.1E10]);
    assert_eq!(rso.len(), 5);
    assert_eq!(rso[..3], [1.1E10, 1.2E10, 1.3E10]);
    close(rso[3], 3.14, 0.001);
    close(rso[4], 1.11, 0.001);

    // opStringS
    let (rso, sso) = p.op_string_s(&strings(&["abc", "de", "fghi"]), &strings(&["xyz"])).await.expect("opStringS");
    assert_eq!(sso, strings(&["abc", "de", "fghi", "xyz"]));
    assert_eq!(rso, strings(&["fghi", "de", "abc"]));

    // opByteSS
    let (rso, bso) = p
        .op_byte_ss(&[bytes(&[0x01, 0x11, 0x12]), bytes(&[0xff])], &[bytes(&[0x0e]), bytes(&[0xf2, 0xf1])])
        .await
        .expect("opByteSS");
    assert_eq!(bso, [bytes(&[0xff]), bytes(&[0x01, 0x11, 0x12])]);
    assert_eq!(rso, [bytes(&[0x01, 0x11, 0x12]), bytes(&[0xff]), bytes(&[0x0e]), bytes(&[0xf2, 0xf1])]);

    // opBoolSS
    let (rso, bso) = p
        .op_bool_ss(&[vec![true], vec![false], vec![true, true]], &[vec![false, false, true]])
        .await
        .expect("opBoolSS");
    assert_eq!(bso, [vec![true], vec![false], vec![true, true], vec![false, false, true]]);
    assert_eq!(rso, [vec![true, true], vec![false], vec![true]]);

    // opShortIntLongSS
    let (rso, sso, iso, lso) = p
        .op_short_int_long_ss(&[vec![1, 2, 5], vec![13], vec![]], &[vec![24, 98], vec![42]], &[vec![496, 1729]])
        .await
        .expect("opShortIntLongSS");
    assert_eq!(rso, [vec![496, 1729]]);
    assert_eq!(sso, [vec![1, 2, 5], vec![13], vec![]]);
    assert_eq!(iso, [vec![42], vec![24, 98]]);
    assert_eq!(lso, [vec![496, 1729], vec![496, 1729]]);

    // opFloatDoubleSS
    let (rso, fso, dso) = p
        .op_float_double_ss(&[vec![3.14], vec![1.11], vec![]], &[vec![1.1E10, 1.2E10, 1.3E10]])
        .await
        .expect("opFloatDoubleSS");
    assert_eq!(fso.len(), 3);
    assert_eq!(fso[0].len(), 1);
    close(f64::from(fso[0][0]), 3.14, 0.001);
    assert_eq!(fso[1].len(), 1);
    close(f64::from(fso[1][0]), 1.11, 0.001);
    assert!(fso[2].is_empty());
    assert_eq!(dso, [vec![1.1E10, 1.2E10, 1.3E10]]);
    assert_eq!(rso, [vec![1.1E10, 1.2E10, 1.3E10], vec![1.1E10, 1.2E10, 1.3E10]]);

    // opStringSS
    let (rso, sso) = p
        .op_string_ss(&[strings(&["abc"]), strings(&["de", "fghi"])], &[vec![], vec![], strings(&["xyz"])])
        .await
        .expect("opStringSS");
    assert_eq!(sso, [strings(&["abc"]), strings(&["de", "fghi"]), vec![], vec![], strings(&["xyz"])]);
    assert_eq!(rso, [strings(&["xyz"]), vec![], vec![]]);

    // opStringSSS
    let sssi1 = vec![vec![strings(&["abc", "de"]), strings(&["xyz"])], vec![strings(&["hello"])]];
    let sssi2 = vec![vec![strings(&["", ""]), strings(&["abcd"])], vec![strings(&[""])], vec![]];
    let (rsso, ssso) = p.op_string_sss(&sssi1, &sssi2).await.expect("opStringSSS");
    let mut expected = sssi1.clone();
    expected.extend(sssi2.clone());
    assert_eq!(ssso, expected);
    assert_eq!(rsso, [vec![], vec![strings(&[""])], vec![strings(&["", ""]), strings(&["abcd"])]]);

    // opByteBoolD
    let di1 = map([(10u8, true), (100, false)]);
    let di2 = map([(10u8, true), (11, false), (101, true)]);
    let (ro, d_o) = p.op_byte_bool_d(&di1, &di2).await.expect("opByteBoolD");
    assert_eq!(d_o, di1);
    assert_eq!(ro, map([(10, true), (11, false), (100, false), (101, true)]));

    // opShortIntD
    let di1 = map([(110i16, -1), (1100, 123123)]);
    let di2 = map([(110i16, -1), (111, -100), (1101, 0)]);
    let (ro, d_o) = p.op_short_int_d(&di1, &di2).await.expect("opShortIntD");
    assert_eq!(d_o, di1);
    assert_eq!(ro, map([(110, -1), (111, -100), (1100, 123123), (1101, 0)]));

    // opLongFloatD
    let di1 = map([(999999110i64, -1.1f32), (999999111, 123123.2)]);
    let di2 = map([(999999110i64, -1.1f32), (999999120, -100.4), (999999130, 0.5)]);
    let (ro, d_o) = p.op_long_float_d(&di1, &di2).await.expect("opLongFloatD");
    assert_eq!(d_o.len(), di1.len());
    for (k, v) in &d_o {
        close(f64::from(*v), f64::from(di1[k]), 0.01);
    }
    assert_eq!(ro.len(), 4);
    for (k, v) in [(999999110, -1.1), (999999120, -100.4), (999999111, 123123.2), (999999130, 0.5)] {
        close(f64::from(ro[&k]), v, 0.01);
    }

    // opStringStringD
    let di1 = map([(s("foo"), s("abc -1.1")), (s("bar"), s("abc 123123.2"))]);
    let di2 = map([(s("foo"), s("abc -1.1")), (s("FOO"), s("abc -100.4")), (s("BAR"), s("abc 0.5"))]);
    let (ro, d_o) = p.op_string_string_d(&di1, &di2).await.expect("opStringStringD");
    assert_eq!(d_o, di1);
    assert_eq!(ro.len(), 4);
    assert_eq!(ro["foo"], "abc -1.1");
    assert_eq!(ro["FOO"], "abc -100.4");
    assert_eq!(ro["bar"], "abc 123123.2");
    assert_eq!(ro["BAR"], "abc 0.5");

    // opStringMyEnumD
    let di1 = map([(s("abc"), MyEnum::Enum1), (s(""), MyEnum::Enum2)]);
    let di2 = map([(s("abc"), MyEnum::Enum1), (s("qwerty"), MyEnum::Enum3), (s("Hello!!"), MyEnum::Enum2)]);
    let (ro, d_o) = p.op_string_my_enum_d(&di1, &di2).await.expect("opStringMyEnumD");
    assert_eq!(d_o, di1);
    assert_eq!(ro.len(), 4);
    assert_eq!(ro["abc"], MyEnum::Enum1);
    assert_eq!(ro["qwerty"], MyEnum::Enum3);
    assert_eq!(ro[""], MyEnum::Enum2);
    assert_eq!(ro["Hello!!"], MyEnum::Enum2);

    // opMyEnumStringD
    let di1 = map([(MyEnum::Enum1, s("abc"))]);
    let di2 = map([(MyEnum::Enum2, s("Hello!!")), (MyEnum::Enum3, s("qwerty"))]);
    let (ro, d_o) = p.op_my_enum_string_d(&di1, &di2).await.expect("opMyEnumStringD");
    assert_eq!(d_o, di1);
    assert_eq!(ro.len(), 3);
    assert_eq!(ro[&MyEnum::Enum1], "abc");
    assert_eq!(ro[&MyEnum::Enum2], "Hello!!");
    assert_eq!(ro[&MyEnum::Enum3], "qwerty");

    // opMyStructMyEnumD
    let (s11, s12, s22, s23) =
        (MyStruct { i: 1, j: 1 }, MyStruct { i: 1, j: 2 }, MyStruct { i: 2, j: 2 }, MyStruct { i: 2, j: 3 });
    let di1 = map([(s11, MyEnum::Enum1), (s12, MyEnum::Enum2)]);
    let di2 = map([(s11, MyEnum::Enum1), (s22, MyEnum::Enum3), (s23, MyEnum::Enum2)]);
    let (ro, d_o) = p.op_my_struct_my_enum_d(&di1, &di2).await.expect("opMyStructMyEnumD");
    assert_eq!(d_o, di1);
    assert_eq!(ro.len(), 4);
    assert_eq!(ro[&s11], MyEnum::Enum1);
    assert_eq!(ro[&s12], MyEnum::Enum2);
    assert_eq!(ro[&s22], MyEnum::Enum3);
    assert_eq!(ro[&s23], MyEnum::Enum2);

    // opByteBoolDS
    let dsi1 = [map([(10u8, true), (100, false)]), map([(10u8, true), (11, false), (101, true)])];
    let dsi2 = [map([(100u8, false), (101, false)])];
    let (ro, d_o) = p.op_byte_bool_ds(&dsi1, &dsi2).await.expect("opByteBoolDS");
    assert_eq!(ro, [dsi1[1].clone(), dsi1[0].clone()]);
    assert_eq!(d_o, [dsi2[0].clone(), dsi1[0].clone(), dsi1[1].clone()]);

    // opShortIntDS
    let dsi1 = [map([(110i16, -1), (1100, 123123)]), map([(110i16, -1), (111, -100), (1101, 0)])];
    let dsi2 = [map([(100i16, -1001)])];
    let (ro, d_o) = p.op_short_int_ds(&dsi1, &dsi2).await.expect("opShortIntDS");
    assert_eq!(ro, [dsi1[1].clone(), dsi1[0].clone()]);
    assert_eq!(d_o, [dsi2[0].clone(), dsi1[0].clone(), dsi1[1].clone()]);

    // opLongFloatDS
    let dsi1 = [
        map([(999999110i64, -1.1f32), (999999111, 123123.2)]),
        map([(999999110, -1.1), (999999120, -100.4), (999999130, 0.5)]),
    ];
    let dsi2 = [map([(999999140i64, 3.14f32)])];
    let (ro, d_o) = p.op_long_float_ds(&dsi1, &dsi2).await.expect("opLongFloatDS");
    let near = |a: &LongFloatD, b: &LongFloatD| {
        a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| (v - w).abs() < 0.01))
    };
    assert_eq!(ro.len(), 2);
    assert!(near(&ro[0], &dsi1[1]));
    assert!(near(&ro[1], &dsi1[0]));
    assert_eq!(d_o.len(), 3);
    assert!(near(&d_o[0], &dsi2[0]));
    assert!(near(&d_o[1], &dsi1[0]));
    assert!(near(&d_o[2], &dsi1[1]));

    // opStringStringDS
    let dsi1 = [
        map([(s("foo"), s("abc -1.1")), (s("bar"), s("abc 123123.2"))]),
        map([(s("foo"), s("abc -1.1")), (s("FOO"), s("abc -100.4")), (s("BAR"), s("abc 0.5"))]),
    ];
    let dsi2 = [map([(s("f00"), s("ABC -3.14"))])];
    let (ro, d_o) = p.op_string_string_ds(&dsi1, &dsi2).await.expect("opStringStringDS");
    assert_eq!(ro, [dsi1[1].clone(), dsi1[0].clone()]);
    assert_eq!(d_o, [dsi2[0].clone(), dsi1[0].clone(), dsi1[1].clone()]);

    // opStringMyEnumDS
    let dsi1 = [
        map([(s("abc"), MyEnum::Enum1), (s(""), MyEnum::Enum2)]),
        map([(s("abc"), MyEnum::Enum1), (s("qwerty"), MyEnum::Enum3), (s("Hello!!"), MyEnum::Enum2)]),
    ];
    let dsi2 = [map([(s("Goodbye"), MyEnum::Enum1)])];
    let (ro, d_o) = p.op_string_my_enum_ds(&dsi1, &dsi2).await.expect("opStringMyEnumDS");
    assert_eq!(ro, [dsi1[1].clone(), dsi1[0].clone()]);
    assert_eq!(d_o, [dsi2[0].clone(), dsi1[0].clone(), dsi1[1].clone()]);

    // opMyEnumStringDS
    let dsi1 = [map([(MyEnum::Enum1, s("abc"))]), map([(MyEnum::Enum2, s("Hello!!")), (MyEnum::Enum3, s("qwerty"))])];
    let dsi2 = [map([(MyEnum::Enum1, s("Goodbye"))])];
    let (ro, d_o) = p.op_my_enum_string_ds(&dsi1, &dsi2).await.expect("opMyEnumStringDS");
    assert_eq!(ro, [dsi1[1].clone(), dsi1[0].clone()]);
    assert_eq!(d_o, [dsi2[0].clone(), dsi1[0].clone(), dsi1[1].clone()]);

    // opMyStructMyEnumDS
    let dsi1 = [
        map([(s11, MyEnum::Enum1), (s12, MyEnum::Enum2)]),
        map([(s11, MyEnum::Enum1), (s22, MyEnum::Enum3), (s23, MyEnum::Enum2)]),
    ];
    let dsi2 = [map([(s23, MyEnum::Enum3)])];
    let (ro, d_o) = p.op_my_struct_my_enum_ds(&dsi1, &dsi2).await.expect("opMyStructMyEnumDS");
    assert_eq!(ro, [dsi1[1].clone(), dsi1[0].clone()]);
    assert_eq!(d_o, [dsi2[0].clone(), dsi1[0].clone(), dsi1[1].clone()]);

    // opByteByteSD
    let sdi1 = map([(0x01u8, bytes(&[0x01, 0x11])), (0x22, bytes(&[0x12]))]);
    let sdi2 = map([(0xf1u8, bytes(&[0xf2, 0xf3]))]);
    let (ro, d_o) = p.op_byte_byte_sd(&sdi1, &sdi2).await.expect("opByteByteSD");
    assert_eq!(d_o, sdi2);
    assert_eq!(ro, map([(0x01, bytes(&[0x01, 0x11])), (0x22, bytes(&[0x12])), (0xf1, bytes(&[0xf2, 0xf3]))]));

    // opBoolBoolSD
    let sdi1 = map([(false, vec![true, false]), (true, vec![false, true, true])]);
    let sdi2 = map([(false, vec![true, false])]);
    let (ro, d_o) = p.op_bool_bool_sd(&sdi1, &sdi2).await.expect("opBoolBoolSD");
    assert_eq!(d_o, sdi2);
    assert_eq!(ro, map([(false, vec![true, false]), (true, vec![false, true, true])]));

    // opShortShortSD
    let sdi1 = map([(1i16, vec![1i16, 2, 3]), (2, vec![4, 5])]);
    let sdi2 = map([(4i16, vec![6i16, 7])]);
    let (ro, d_o) = p.op_short_short_sd(&sdi1, &sdi2).await.expect("opShortShortSD");
    assert_eq!(d_o, sdi2);
    assert_eq!(ro, map([(1, vec![1, 2, 3]), (2, vec![4, 5]), (4, vec![6, 7])]));

    // opIntIntSD
    let sdi1 = map([(100, vec![100, 200, 300]), (200, vec![400, 500])]);
    let sdi2 = map([(400, vec![600, 700])]);
    let (ro, d_o) = p.op_int_int_sd(&sdi1, &sdi2).await.expect("opIntIntSD");
    assert_eq!(d_o, sdi2);
    assert_eq!(ro, map([(100, vec![100, 200, 300]), (200, vec![400, 500]), (400, vec![600, 700])]));

    // opLongLongSD
    let sdi1 = map([(999999990i64, vec![999999110i64, 999999111, 999999110]), (999999991, vec![999999120, 999999130])]);
    let sdi2 = map([(999999992i64, vec![999999110i64, 999999120])]);
    let (ro, d_o) = p.op_long_long_sd(&sdi1, &sdi2).await.expect("opLongLongSD");
    assert_eq!(d_o, sdi2);
    assert_eq!(
        ro,
        map([
            (999999990, vec![999999110, 999999111, 999999110]),
            (999999991, vec![999999120, 999999130]),
            (999999992, vec![999999110, 999999120]),
        ])
    );

    // opStringFloatSD
    let sdi1 = map([(s("abc"), vec![-1.1f32, 123123.2, 100.0]), (s("ABC"), vec![42.24, -1.61])]);
    let sdi2 = map([(s("aBc"), vec![-3.14f32, 3.14])]);
    let (ro, d_o) = p.op_string_float_sd(&sdi1, &sdi2).await.expect("opStringFloatSD");
    let near =
        |a: &[f32], b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (f64::from(*x) - y).abs() < 0.01);
    assert_eq!(d_o.len(), 1);
    assert!(near(&d_o["aBc"], &[-3.14, 3.14]));
    assert_eq!(ro.len(), 3);
    assert!(near(&ro["abc"], &[-1.1, 123123.2, 100.0]));
    assert!(near(&ro["ABC"], &[42.24, -1.61]));
    assert!(near(&ro["aBc"], &[-3.14, 3.14]));

    // opStringDoubleSD
    let sdi1 = map([(s("Hello!!"), vec![1.1E10, 1.2E10, 1.3E10]), (s("Goodbye"), vec![1.4E10, 1.5E10])]);
    let sdi2 = map([(s(""), vec![1.6E10, 1.7E10])]);
    let (ro, d_o) = p.op_string_double_sd(&sdi1, &sdi2).await.expect("opStringDoubleSD");
    assert_eq!(d_o, sdi2);
    let mut all = sdi1.clone();
    all.extend(sdi2.clone());
    assert_eq!(ro, all);

    // opStringStringSD
    let sdi1 = map([(s("abc"), strings(&["abc", "de", "fghi"])), (s("def"), strings(&["xyz", "or"]))]);
    let sdi2 = map([(s("ghi"), strings(&["and", "xor"]))]);
    let (ro, d_o) = p.op_string_string_sd(&sdi1, &sdi2).await.expect("opStringStringSD");
    assert_eq!(d_o, sdi2);
    let mut all = sdi1.clone();
    all.extend(sdi2.clone());
    assert_eq!(ro, all);

    // opMyEnumMyEnumSD
    use MyEnum::{Enum1, Enum2, Enum3};
    let sdi1 = map([(Enum3, vec![Enum1, Enum1, Enum2]), (Enum2, vec![Enum1, Enum2])]);
    let sdi2 = map([(Enum1, vec![Enum3, Enum3])]);
    let (ro, d_o) = p.op_my_enum_my_enum_sd(&sdi1, &sdi2).await.expect("opMyEnumMyEnumSD");
    assert_eq!(d_o, sdi2);
    assert_eq!(ro, map([(Enum3, vec![Enum1, Enum1, Enum2]), (Enum2, vec![Enum1, Enum2]), (Enum1, vec![Enum3, Enum3])]));

    // opIntS, around the one-byte/five-byte size boundary
    for l in [0, 1, 2, 126, 127, 128, 129, 253, 254, 255, 256, 257, 1000] {
        let input: Vec<i32> = (0..l).collect();
        let r = p.op_int_s(&input).await.expect("opIntS");
        assert_eq!(r.len(), l as usize);
        assert!(r.iter().enumerate().all(|(j, v)| *v == -(j as i32)), "opIntS({l})");
    }

    // opContext: per-proxy contexts.
    let c = ctx(&[("one", "ONE"), ("two", "TWO"), ("three", "THREE")]);
    let r = p.op_context().await.expect("opContext");
    assert!(p.as_object().reference().context.is_empty());
    assert_ne!(r, c);
    // Ice's `opContext(ctx)` (a per-call context) is a proxy with that context here, as
    // floe's generated calls take their context from the proxy.
    let r = p.ice_context(c.clone()).op_context().await.expect("opContext(ctx)");
    assert!(p.as_object().reference().context.is_empty());
    assert_eq!(r, c);
    let p2 = MyClassPrx::checked_cast(&p.ice_context(c.clone())).await.expect("checkedCast").expect("MyClass");
    assert_eq!(p2.as_object().reference().context, c);
    assert_eq!(p2.op_context().await.expect("opContext"), c);

    // Implicit context (Ice.ImplicitContext=Shared), on a communicator of its own.
    {
        let mut args = h.args.clone();
        args.push("--Ice.ImplicitContext=Shared".into());
        let (ic, _) = floe::Communicator::from_args(args).expect("communicator");
        let p1 = MyClassPrx::from_object(ic.string_to_proxy(&format!("test:{}", h.endpoint(0))).expect("proxy"));
        for (k, v) in &c {
            ic.set_implicit_context(k, v);
        }
        assert_eq!(ic.implicit_context(), c);
        assert_eq!(p1.op_context().await.expect("opContext"), c);
        assert!(!ic.implicit_context().contains_key("zero"));
        ic.set_implicit_context("zero", "ZERO");
        assert_eq!(ic.implicit_context().get("zero").map(String::as_str), Some("ZERO"));
        let c = ic.implicit_context();
        assert_eq!(p1.op_context().await.expect("opContext"), c);
        let prx_context = ctx(&[("one", "UN"), ("four", "QUATRE")]);
        let mut combined = c.clone();
        combined.extend(prx_context.clone());
        assert_eq!(combined["one"], "UN");
        let p2 = p1.ice_context(prx_context.clone());
        for k in c.keys() {
            ic.remove_implicit_context(k);
        }
        assert_eq!(p2.op_context().await.expect("opContext"), prx_context);
        for (k, v) in &c {
            ic.set_implicit_context(k, v);
        }
        assert_eq!(p2.op_context().await.expect("opContext"), combined);
        ic.destroy().await;
    }

    let d = 1278312346.0 / 13.0;
    p.op_double_marshaling(d, &[d; 5]).await.expect("opDoubleMarshaling");

    p.op_idempotent().await.expect("opIdempotent");
    p.op_nonmutating().await.expect("opNonmutating");

    assert_eq!(p.op_byte1(0xff).await.expect("opByte1"), 0xff);
    assert_eq!(p.op_short1(0x7fff).await.expect("opShort1"), 0x7fff);
    assert_eq!(p.op_int1(0x7fffffff).await.expect("opInt1"), 0x7fffffff);
    assert_eq!(p.op_long1(0x7fffffffffffffff).await.expect("opLong1"), 0x7fffffffffffffff);
    assert_eq!(p.op_float1(1.0).await.expect("opFloat1"), 1.0);
    assert_eq!(p.op_double1(1.0).await.expect("opDouble1"), 1.0);
    assert_eq!(p.op_string1("opString1").await.expect("opString1"), "opString1");
    assert!(p.op_string_s1(&[]).await.expect("opStringS1").is_empty());
    assert!(p.op_byte_bool_d1(&ByteBoolD::new()).await.expect("opByteBoolD1").is_empty());
    assert!(p.op_string_s2(&[]).await.expect("opStringS2").is_empty());
    assert!(p.op_byte_bool_d2(&ByteBoolD::new()).await.expect("opByteBoolD2").is_empty());

    let d = MyDerivedClassPrx::unchecked_cast(p);
    let st = MyStruct1 { tes_t: s("Test.MyStruct1.s"), my_class: None, my_struct1: s("Test.MyStruct1.myStruct1") };
    let st = d.op_my_struct1(&st).await.expect("opMyStruct1");
    assert_eq!(st.tes_t, "Test.MyStruct1.s");
    assert!(st.my_class.is_none());
    assert_eq!(st.my_struct1, "Test.MyStruct1.myStruct1");
    let c = floe::Class::new(MyClass1 {
        tes_t: s("Test.MyClass1.testT"),
        my_class: None,
        my_class1: s("Test.MyClass1.myClass1"),
    });
    let c = d.op_my_class1(Some(&c)).await.expect("opMyClass1").expect("a MyClass1");
    let c = c.read();
    assert_eq!(c.tes_t, "Test.MyClass1.testT");
    assert!(c.my_class.is_none());
    assert_eq!(c.my_class1, "Test.MyClass1.myClass1");

    let mut p1 = p.op_m_struct1().await.expect("opMStruct1");
    p1.e = MyEnum::Enum3;
    let (p3, p2) = p.op_m_struct2(&p1).await.expect("opMStruct2");
    assert!(p2 == p1 && p3 == p1);
    p.op_m_seq1().await.expect("opMSeq1");
    let (p3, p2) = p.op_m_seq2(&strings(&["test"])).await.expect("opMSeq2");
    assert!(p2[0] == "test" && p3[0] == "test");
    p.op_m_dict1().await.expect("opMDict1");
    let (p3, p2) = p.op_m_dict2(&map([(s("test"), s("test"))])).await.expect("opMDict2");
    assert!(p3["test"] == "test" && p2["test"] == "test");

    bprx.op_b().await.expect("opB");
    bprx.op_intf().await.expect("opIntf");
}

async fn oneways(p: &MyClassPrx) {
    let p = p.ice_oneway();
    p.ice_ping().await.expect("ice_ping");
    p.op_void().await.expect("opVoid");
    p.op_idempotent().await.expect("opIdempotent");
    p.op_nonmutating().await.expect("opNonmutating");
    expect_err(p.op_byte(0xff, 0x0f).await, "TwowayOnlyException", |e| matches!(e, Error::TwowayOnly(_)));
}

async fn batch_oneways(p: &MyClassPrx) {
    let bs1 = floe::bytes::Bytes::from(vec![0u8; 10 * 1024]);
    p.op_byte_s_oneway(&bs1).await.expect("opByteSOneway (twoway)");

    let batch = p.ice_batch_oneway();
    batch.ice_flush_batch_requests().await.expect("empty flush");

    p.op_byte_s_oneway_call_count().await.expect("reset the call count");
    for _ in 0..30 {
        batch.op_byte_s_oneway(&bs1).await.expect("queue opByteSOneway");
    }
    // Ice.BatchAutoFlushSize=100 (KB): three batches of nine requests were sent by themselves.
    let mut count = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while count < 27 {
        count += p.op_byte_s_oneway_call_count().await.expect("opByteSOnewayCallCount");
        assert!(Instant::now() < deadline, "only {count} of the 27 auto-flushed requests arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let batch1 = p.ice_batch_oneway();
    let batch2 = p.ice_batch_oneway();
    batch1.ice_ping().await.expect("batch1.ice_ping");
    batch2.ice_ping().await.expect("batch2.ice_ping");
    batch1.ice_flush_batch_requests().await.expect("batch1 flush");
    batch1.ice_get_connection().await.expect("connection").close().await;
    batch1.ice_ping().await.expect("batch1.ice_ping");
    batch2.ice_ping().await.expect("batch2.ice_ping");
    batch1.ice_get_connection().await.expect("batch1 connection");
    batch2.ice_get_connection().await.expect("batch2 connection");
    batch1.ice_ping().await.expect("batch1.ice_ping");
    batch1.ice_get_connection().await.expect("connection").close().await;
    batch1.ice_ping().await.expect("batch1.ice_ping");
    batch2.ice_ping().await.expect("batch2.ice_ping");

    // A batch to an object that does not exist does not disturb the others.
    let batch3 = batch.ice_identity(Identity::new("invalid"));
    batch3.ice_ping().await.expect("batch3.ice_ping");
    batch3.ice_flush_batch_requests().await.expect("batch3 flush");
    batch3.ice_ping().await.expect("batch3.ice_ping");
    batch.ice_ping().await.expect("batch.ice_ping");
    batch.ice_flush_batch_requests().await.expect("batch flush");
    batch.ice_ping().await.expect("batch.ice_ping");
    // The server is still there and serving.
    p.ice_ping().await.expect("ice_ping after the batches");
}
