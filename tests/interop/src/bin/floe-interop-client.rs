//! floe-interop-client: exercises every operation, object, facet, error case and invocation
//! mode of tests/interop/Test.ice against a server (floe's own or a real ZeroC Ice one).
//!
//! `floe-interop-client [--proxy "tester:tcp -h 127.0.0.1 -p 12010"] [--no-shutdown] [--skip PREFIX …] [--Ice.X=Y …]`
//! (`--skip` leaves out the checks whose names start with PREFIX; they are listed as `skip`.)
//! Prints one line per check and ends with `N passed, M failed`; exits 0 only when M is 0.
#![allow(clippy::approx_constant)] // 3.14 is the value Test.ice specifies.

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use floe::bytes::Bytes;
use floe::encoding::{Decode, Encode, EncodingVersion};
use floe::protocol::OperationMode;
use floe::{CallError, Communicator, Context, Error, Identity, ObjectPrx, Proxy};
use floe_interop::interop::*;

type CheckResult = Result<(), String>;

struct Checks {
    passed: usize,
    failed: usize,
    /// Checks not run (`--skip PREFIX`): their names start with one of these.
    skip: Vec<String>,
}

impl Checks {
    async fn run(&mut self, name: &str, f: impl Future<Output = CheckResult>) {
        if self.skip.iter().any(|p| name.starts_with(p.as_str())) {
            println!("skip {name}");
            return;
        }
        match tokio::time::timeout(Duration::from_secs(30), f).await {
            Ok(Ok(())) => {
                self.passed += 1;
                println!("ok   {name}");
            }
            Ok(Err(e)) => {
                self.failed += 1;
                println!("FAIL {name}: {e}");
            }
            Err(_) => {
                self.failed += 1;
                println!("FAIL {name}: no answer within 30 s");
            }
        }
    }
}

fn eq<T: PartialEq + std::fmt::Debug>(got: T, want: T) -> CheckResult {
    if got == want {
        Ok(())
    } else {
        Err(format!("got {got:?}, expected {want:?}"))
    }
}

fn fail<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn mixed() -> Mixed {
    Mixed {
        b: true,
        by: 7,
        sh: -3,
        i: 100000,
        l: -9_000_000_000,
        f: 0.25,
        d: -1.5,
        s: "mïxed".into(),
        c: Color::Blue,
        p: Point { x: 3, y: 4 },
    }
}

fn rev<T: Clone>(v: &[T]) -> Vec<T> {
    v.iter().rev().cloned().collect()
}

/// Waits for the server's counter to reach `expected`. A slow server (an interpreted peer on a
/// loaded machine) may take a while to work through a large batch, so the wait fails only when
/// the counter has stopped moving for 5 s, or after 60 s in all.
async fn wait_counter(t: &TesterPrx, expected: i32) -> CheckResult {
    let give_up = Instant::now() + Duration::from_secs(60);
    let mut deadline = Instant::now() + Duration::from_secs(5);
    let mut last = None;
    loop {
        let got = t.get_counter().await.map_err(fail)?;
        if got == expected {
            return Ok(());
        }
        if last != Some(got) {
            last = Some(got);
            deadline = Instant::now() + Duration::from_secs(5);
        }
        if Instant::now() > deadline.min(give_up) {
            return Err(format!("counter is {got}, expected {expected}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn run(c: &mut Checks, communicator: &Communicator, t: &TesterPrx, v10: bool) {
    let sfx = if v10 { " (1.0)" } else { "" };
    let n = |s: &str| format!("{s}{sfx}");
    c.run(&n("ping"), async { t.ping().await.map_err(fail) }).await;
    c.run(&n("ice_ping"), async { t.ice_ping().await.map_err(fail) }).await;
    c.run(&n("ice_isA"), async { eq(t.ice_is_a("::Interop::Tester").await.map_err(fail)?, true) }).await;
    c.run(&n("ice_isA false"), async { eq(t.ice_is_a("::Interop::Echo").await.map_err(fail)?, false) }).await;
    c.run(&n("ice_ids"), async {
        eq(t.ice_ids().await.map_err(fail)?, vec!["::Ice::Object".to_string(), "::Interop::Tester".to_string()])
    })
    .await;
    c.run(&n("ice_id"), async { eq(t.ice_id().await.map_err(fail)?, "::Interop::Tester".to_string()) }).await;
    c.run(&n("checked_cast"), async {
        let p = TesterPrx::checked_cast(t).await.map_err(fail)?;
        eq(p.is_some(), true)
    })
    .await;
    c.run(&n("opBool"), async { eq(t.op_bool(true).await.map_err(fail)?, (false, true)) }).await;
    c.run(&n("opByte"), async { eq(t.op_byte(200, 100).await.map_err(fail)?, (200, 44)) }).await;
    c.run(&n("opShort"), async { eq(t.op_short(-32768).await.map_err(fail)?, (-32768, -32768)) }).await;
    c.run(&n("opInt"), async { eq(t.op_int(123456, -7).await.map_err(fail)?, (123456, -864192)) }).await;
    c.run(&n("opInt wraps"), async { eq(t.op_int(i32::MAX, 2).await.map_err(fail)?, (i32::MAX, -2)) }).await;
    c.run(&n("opLong"), async { eq(t.op_long(1234567890123).await.map_err(fail)?, (1234567890123, 2469135780246)) })
        .await;
    c.run(&n("opFloat"), async { eq(t.op_float(1.5).await.map_err(fail)?, (1.5, 0.75)) }).await;
    c.run(&n("opDouble"), async { eq(t.op_double(2.25, 0.5).await.map_err(fail)?, (2.25, 2.75)) }).await;
    c.run(&n("opString"), async {
        eq(t.op_string("héllo", "wörld").await.map_err(fail)?, ("héllowörld".into(), "olléh".into()))
    })
    .await;
    c.run(&n("opColor"), async { eq(t.op_color(Color::Blue).await.map_err(fail)?, (Color::Blue, Color::Red)) }).await;
    c.run(&n("opColor Green"), async {
        eq(t.op_color(Color::Green).await.map_err(fail)?, (Color::Green, Color::Blue))
    })
    .await;
    c.run(&n("opPoint"), async {
        eq(t.op_point(&Point { x: 1, y: -2 }).await.map_err(fail)?, (Point { x: 1, y: -2 }, Point { x: -2, y: 1 }))
    })
    .await;
    c.run(&n("opMixed"), async { eq(t.op_mixed(&mixed()).await.map_err(fail)?, mixed()) }).await;
    let bools = vec![true, false, false];
    c.run(&n("opBoolSeq"), async { eq(t.op_bool_seq(&bools).await.map_err(fail)?, (bools.clone(), rev(&bools))) })
        .await;
    let bytes = Bytes::from_static(&[0, 1, 255]);
    c.run(&n("opByteSeq"), async {
        eq(t.op_byte_seq(&bytes).await.map_err(fail)?, (bytes.clone(), Bytes::from_static(&[255, 1, 0])))
    })
    .await;
    let shorts = vec![1i16, -1, 300];
    c.run(&n("opShortSeq"), async { eq(t.op_short_seq(&shorts).await.map_err(fail)?, (shorts.clone(), rev(&shorts))) })
        .await;
    let ints: Vec<i32> = (0..1000).collect();
    c.run(&n("opIntSeq"), async { eq(t.op_int_seq(&ints).await.map_err(fail)?, (ints.clone(), rev(&ints))) }).await;
    let longs = vec![1i64, -(1 << 40)];
    c.run(&n("opLongSeq"), async { eq(t.op_long_seq(&longs).await.map_err(fail)?, (longs.clone(), rev(&longs))) })
        .await;
    let floats = vec![0.5f32, -2.0];
    c.run(&n("opFloatSeq"), async { eq(t.op_float_seq(&floats).await.map_err(fail)?, (floats.clone(), rev(&floats))) })
        .await;
    let doubles = vec![3.5f64, -0.25];
    c.run(&n("opDoubleSeq"), async {
        eq(t.op_double_seq(&doubles).await.map_err(fail)?, (doubles.clone(), rev(&doubles)))
    })
    .await;
    let strings: Vec<floe::CompactString> = vec!["a".into(), "".into(), "ü".into()];
    c.run(&n("opStringSeq"), async {
        eq(t.op_string_seq(&strings).await.map_err(fail)?, (strings.clone(), rev(&strings)))
    })
    .await;
    let colors = vec![Color::Red, Color::Blue, Color::Green];
    c.run(&n("opColorSeq"), async { eq(t.op_color_seq(&colors).await.map_err(fail)?, (colors.clone(), rev(&colors))) })
        .await;
    let points = vec![Point { x: 1, y: 2 }, Point { x: 3, y: 4 }];
    c.run(&n("opPointSeq"), async { eq(t.op_point_seq(&points).await.map_err(fail)?, (points.clone(), rev(&points))) })
        .await;
    let fixed: Vec<Fixed> = (0..300).map(|k| Fixed { i: k, j: -k, d: k as f64 * 0.5 }).collect();
    c.run(&n("opFixedSeq"), async { eq(t.op_fixed_seq(&fixed).await.map_err(fail)?, (fixed.clone(), rev(&fixed))) })
        .await;
    // Sequences of 64 KB or more are sent from their own memory (requests and replies): the
    // bytes on the wire must be the same as when they are copied.
    let many_fixed: Vec<Fixed> = (0..20_000).map(|k| Fixed { i: k, j: k ^ 0x5a5a, d: k as f64 / 3.0 }).collect();
    c.run(&n("opFixedSeq 20,000 (320 KB)"), async {
        eq(t.op_fixed_seq(&many_fixed).await.map_err(fail)?, (many_fixed.clone(), rev(&many_fixed)))
    })
    .await;
    let many_ints: Vec<i32> = (0..50_000).map(|k| k * 7 - 100_000).collect();
    c.run(&n("opIntSeq 50,000 (200 KB)"), async {
        eq(t.op_int_seq(&many_ints).await.map_err(fail)?, (many_ints.clone(), rev(&many_ints)))
    })
    .await;
    let many_doubles: Vec<f64> = (0..16_384).map(|k| k as f64 * -1.5).collect();
    c.run(&n("opDoubleSeq 16,384 (128 KB)"), async {
        eq(t.op_double_seq(&many_doubles).await.map_err(fail)?, (many_doubles.clone(), rev(&many_doubles)))
    })
    .await;
    let sd = vec![StringDouble { s: "x".into(), d: 1.0 }, StringDouble { s: "yz".into(), d: 2.5 }];
    c.run(&n("opStringDoubleSeq"), async {
        eq(t.op_string_double_seq(&sd).await.map_err(fail)?, (sd.clone(), rev(&sd)))
    })
    .await;
    let mixeds = vec![mixed(), Mixed { s: floe::CompactString::default(), c: Color::Red, ..mixed() }];
    c.run(&n("opMixedSeq"), async { eq(t.op_mixed_seq(&mixeds).await.map_err(fail)?, (mixeds.clone(), rev(&mixeds))) })
        .await;
    let nested = vec![vec![1, 2], vec![], vec![3]];
    c.run(&n("opIntSeqSeq"), async {
        eq(t.op_int_seq_seq(&nested).await.map_err(fail)?, (nested.clone(), rev(&nested)))
    })
    .await;
    let a: StringIntDict = [("a".into(), 1), ("b".into(), 2)].into();
    let b: StringIntDict = [("b".into(), 3), ("c".into(), 4)].into();
    let merged: StringIntDict = [("a".into(), 1), ("b".into(), 3), ("c".into(), 4)].into();
    c.run(&n("opStringIntDict"), async { eq(t.op_string_int_dict(&a, &b).await.map_err(fail)?, (a.clone(), merged)) })
        .await;
    let isd: IntStringDict = [(1, "one".into()), (-2, "two".into())].into();
    c.run(&n("opIntStringDict"), async { eq(t.op_int_string_dict(&isd).await.map_err(fail)?, isd.clone()) }).await;
    let spd: StringPointDict = [("p".into(), Point { x: 1, y: 2 })].into();
    c.run(&n("opStringPointDict"), async { eq(t.op_string_point_dict(&spd).await.map_err(fail)?, spd.clone()) }).await;
    let psd: PointStringDict = [(Point { x: 1, y: 2 }, "p".into()), (Point { x: 3, y: 4 }, "q".into())].into();
    c.run(&n("opPointStringDict"), async { eq(t.op_point_string_dict(&psd).await.map_err(fail)?, psd.clone()) }).await;
    let sssd: StringStringSeqDict = [("k".into(), vec!["v1".into(), "v2".into()]), ("e".into(), vec![])].into();
    c.run(&n("opStringStringSeqDict"), async {
        eq(t.op_string_string_seq_dict(&sssd).await.map_err(fail)?, sssd.clone())
    })
    .await;
    if v10 {
        c.run("optionals dropped (1.0)", async { eq(t.op_optional_int(Some(42)).await.map_err(fail)?, (None, None)) })
            .await;
    } else {
        c.run("opOptionalInt set", async {
            eq(t.op_optional_int(Some(42)).await.map_err(fail)?, (Some(42), Some(42)))
        })
        .await;
        c.run("opOptionalInt unset", async { eq(t.op_optional_int(None).await.map_err(fail)?, (None, None)) }).await;
        c.run("opOptionalString set", async {
            eq(t.op_optional_string(Some("opt")).await.map_err(fail)?, (Some("opt".into()), Some("opt".into())))
        })
        .await;
        c.run("opOptionalString unset", async { eq(t.op_optional_string(None).await.map_err(fail)?, (None, None)) })
            .await;
        c.run("opOptionalPoint", async {
            eq(t.op_optional_point(Some(&Point { x: 5, y: 6 })).await.map_err(fail)?, Some(Point { x: 5, y: 6 }))
        })
        .await;
        c.run("opOptionalPoint unset", async { eq(t.op_optional_point(None).await.map_err(fail)?, None) }).await;
        c.run("opOptionalIntSeq", async {
            eq(t.op_optional_int_seq(Some(&[7, 8, 9])).await.map_err(fail)?, Some(vec![7, 8, 9]))
        })
        .await;
    }
    c.run(&n("throwBase"), async {
        match t.throw_base("bad").await {
            Err(CallError::User(TesterThrowBaseError::BaseError(e))) => eq(e.reason, "bad".into()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("throwDerived"), async {
        match t.throw_derived("worse", 7).await {
            Err(CallError::User(TesterThrowDerivedError::DerivedError(e))) => {
                eq((e.reason, e.code), ("worse".into(), 7))
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("throwOther"), async {
        match t.throw_other(&[1, 2]).await {
            Err(CallError::User(TesterThrowOtherError::OtherError(e))) => eq(e.values, vec![1, 2]),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("throwUndeclared"), async {
        match t.throw_undeclared("u").await {
            Err(Error::UnknownUserException(id)) => eq(id, "::Interop::DerivedError".to_string()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("throwNonSlice"), async {
        match t.throw_non_slice().await {
            Err(Error::UnknownException(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("getContext per proxy"), async {
        let ctx: Context = [("k".to_string(), "v".to_string()), ("z".to_string(), "w".to_string())].into();
        let got = t.ice_context(ctx).get_context().await.map_err(fail)?;
        eq(got, HashMap::from([("k".into(), "v".into()), ("z".into(), "w".into())]))
    })
    .await;
    c.run(&n("getContext empty"), async { eq(t.get_context().await.map_err(fail)?, HashMap::new()) }).await;
    c.run(&n("getFacet"), async { eq(t.get_facet().await.map_err(fail)?, floe::CompactString::default()) }).await;
    c.run(&n("getEcho"), async {
        let e = t.get_echo().await.map_err(fail)?.ok_or("null proxy")?;
        eq(e.echo_string("via getEcho").await.map_err(fail)?, "via getEcho".into())
    })
    .await;
    c.run(&n("getSelf"), async {
        let s = t.get_self().await.map_err(fail)?.ok_or("null proxy")?;
        eq(s.ice_get_identity().clone(), Identity::new("tester"))?;
        s.ping().await.map_err(fail)
    })
    .await;
    for s in [
        "x:tcp -h 127.0.0.1 -p 4061 -t 5000",
        "x -f fac -o -s:udp -h 239.1.2.3 -p 5000 -z",
        "cat/x@MyAdapter",
        "x:opaque -t 99 -e 1.0 -v abch",
        "x -e 1.0:tcp -h a -p 1:tcp -h b -p 2 -z",
        "x:ssl -h 127.0.0.1 -p 4064 -t infinite",
        "x:ws -h localhost -p 8080 -r /chat",
    ] {
        let p = EchoPrx::from_object(communicator.string_to_proxy(s).expect("valid proxy string"));
        let want = if v10 { p.ice_encoding_version(EncodingVersion::V1_0) } else { p.clone() };
        // An ssl endpoint comes back as it went, whether the peer has IceSSL (it decodes
        // the endpoint) or not (it keeps the bytes unchanged).
        let want = want.to_string();
        c.run(&n(&format!("echoProxy {s}")), async {
            let got = t.echo_proxy(Some(&p)).await.map_err(fail)?.ok_or("null proxy")?;
            eq(got.to_string(), want)
        })
        .await;
    }
    c.run(&n("echoProxy null"), async { eq(t.echo_proxy(None).await.map_err(fail)?, None) }).await;
    c.run(&n("callEcho"), async {
        let e = t.get_echo().await.map_err(fail)?;
        eq(t.call_echo(e.as_ref(), "hi").await.map_err(fail)?, "hi".into())
    })
    .await;
    c.run(&n("facet echo"), async {
        eq(EchoPrx::unchecked_cast(&t.ice_facet("echo")).echo_string("f").await.map_err(fail)?, "f".into())
    })
    .await;
    c.run(&n("echo object"), async {
        let e = EchoPrx::unchecked_cast(&t.ice_identity(Identity::new("echo")));
        eq(e.echo_string("e").await.map_err(fail)?, "e".into())
    })
    .await;
    c.run(&n("named default servant"), async {
        let p = NamedPrx::unchecked_cast(&t.ice_identity(Identity::with_category("named", "alice")));
        eq(p.name().await.map_err(fail)?, "alice".into())
    })
    .await;
    c.run(&n("ObjectNotExist"), async {
        match t.ice_identity(Identity::new("nobody")).ice_ping().await {
            Err(Error::ObjectNotExist { identity, operation, .. }) => {
                eq((identity, operation), (Identity::new("nobody"), "ice_ping".to_string()))
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("FacetNotExist"), async {
        match t.ice_facet("nofacet").ice_ping().await {
            Err(Error::FacetNotExist { facet, .. }) => eq(facet, "nofacet".to_string()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("checked_cast of a missing facet"), async {
        eq(TesterPrx::checked_cast(&t.ice_facet("nofacet")).await.map_err(fail)?, None)
    })
    .await;
    c.run(&n("OperationNotExist"), async {
        match EchoPrx::unchecked_cast(t).echo_string("x").await {
            Err(Error::OperationNotExist { operation, .. }) => eq(operation, "echoString".to_string()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("oneway"), async {
        t.reset_counter().await.map_err(fail)?;
        let o = t.ice_oneway();
        for _ in 0..10 {
            o.inc_counter(2).await.map_err(fail)?;
        }
        wait_counter(t, 20).await
    })
    .await;
    c.run(&n("oneway proxy refuses a value-returning operation"), async {
        match t.ice_oneway().get_counter().await {
            Err(Error::TwowayOnly(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("batch oneway"), async {
        t.reset_counter().await.map_err(fail)?;
        let b = t.ice_batch_oneway();
        for _ in 0..100 {
            b.inc_counter(1).await.map_err(fail)?;
        }
        eq(b.batch_request_count(), 100)?;
        b.ice_flush_batch_requests().await.map_err(fail)?;
        wait_counter(t, 100).await
    })
    .await;
    c.run(&n("batch writer"), async {
        t.inc_counter(7).await.map_err(fail)?;
        let mut w = t.batch_writer();
        w.reset_counter();
        for k in 1..=100 {
            w.inc_counter(k);
        }
        eq(w.len(), 101)?;
        w.flush().await.map_err(fail)?;
        eq(w.len(), 0)?;
        wait_counter(t, 5050).await?;
        // Requests still queued when the writer goes move to the proxy's own batch queue.
        w.inc_counter(50);
        drop(w);
        eq(t.batch_request_count(), 1)?;
        t.ice_flush_batch_requests().await.map_err(fail)?;
        wait_counter(t, 5100).await
    })
    .await;
    c.run(&n("batches of several messages stay within the server's message size"), async {
        // 3 MB of requests against a server on the default Ice.MessageSizeMax (1 MB): every
        // message sent, whether auto-flushed by a batch-oneway proxy or filled by a batch
        // writer, must be small enough for it.
        t.reset_counter().await.map_err(fail)?;
        let b = t.ice_batch_oneway();
        for _ in 0..100_000 {
            b.inc_counter(1).await.map_err(fail)?;
        }
        b.ice_flush_batch_requests().await.map_err(fail)?;
        wait_counter(t, 100_000).await?;
        let mut w = t.batch_writer();
        for _ in 0..100_000 {
            w.inc_counter(1);
        }
        if !w.needs_flush() {
            return Err("a writer holding 3 MB of requests does not ask for a flush".into());
        }
        w.flush().await.map_err(fail)?;
        wait_counter(t, 200_000).await
    })
    .await;
    c.run(&n("batched twoway"), async {
        let obj: &ObjectPrx = t.as_object();
        let outcomes = obj
            .invoke_batch_twoway(
                "opIdempotent",
                OperationMode::Idempotent,
                (0..50).map(|k: i32| move |e: &mut floe::encoding::Encoder| k.encode(e)),
            )
            .await
            .map_err(fail)?;
        let mut got = Vec::new();
        for o in outcomes {
            got.push(o.map_err(fail)?.decode(i32::decode).map_err(fail)?);
        }
        eq(got, (1..51).collect::<Vec<i32>>())
    })
    .await;
    c.run(&n("compression"), async {
        let z = t.ice_compress(true);
        let data = Bytes::from((0..20000).map(|k| k as u8).collect::<Vec<u8>>());
        z.send_byte_seq(&data).await.map_err(fail)?;
        eq(z.recv_byte_seq(20000).await.map_err(fail)?, data)
    })
    .await;
    c.run(&n("recvByteSeq 500000"), async {
        let got = t.recv_byte_seq(500_000).await.map_err(fail)?;
        eq(got.len(), 500_000)?;
        eq(got.iter().enumerate().all(|(k, b)| *b == k as u8), true)
    })
    .await;
    c.run(&n("sendByteSeq 500000"), async { t.send_byte_seq(&Bytes::from(vec![7u8; 500_000])).await.map_err(fail) })
        .await;
    c.run(&n("large trailing byte sequences (sent from their own buffer)"), async {
        let big = Bytes::from((0..300_000u32).map(|k| (k * 7 % 251) as u8).collect::<Vec<u8>>());
        let reversed: Vec<u8> = big.iter().rev().copied().collect();
        eq(t.op_byte_seq(&big).await.map_err(fail)?, (big.clone(), Bytes::from(reversed.clone())))?;
        // Compressed requests take the ordinary path; the result is the same.
        eq(t.ice_compress(true).op_byte_seq(&big).await.map_err(fail)?, (big.clone(), Bytes::from(reversed)))?;
        // A oneway of that size, then a twoway behind it on the same connection.
        t.ice_oneway().send_byte_seq(&big).await.map_err(fail)?;
        t.ping().await.map_err(fail)
    })
    .await;
    c.run(&n("recvFixedSeq 50000"), async {
        let got = t.recv_fixed_seq(50_000).await.map_err(fail)?;
        eq((got.len(), got[49_999]), (50_000, Fixed { i: 49_999, j: -49_999, d: 24_999.5 }))
    })
    .await;
    let many: Vec<Fixed> = (0..50_000).map(|k| Fixed { i: k, j: k, d: 0.0 }).collect();
    c.run(&n("sendFixedSeq 50000"), async { t.send_fixed_seq(&many).await.map_err(fail) }).await;
    c.run(&n("recvStringDoubleSeq"), async {
        eq(t.recv_string_double_seq(3).await.map_err(fail)?, vec![StringDouble { s: "hello".into(), d: 3.14 }; 3])
    })
    .await;
    let sds = vec![StringDouble { s: "hello".into(), d: 3.14 }; 1000];
    c.run(&n("sendStringDoubleSeq"), async { t.send_string_double_seq(&sds).await.map_err(fail) }).await;
    c.run(&n("opIdempotent"), async { eq(t.op_idempotent(41).await.map_err(fail)?, 42) }).await;
    c.run(&n("asynchronous dispatch"), async {
        let start = Instant::now();
        let sleeps = futures_join((0..5).map(|k| t.sleep_then_return(300, k)));
        let ping = async {
            t.ping().await.map_err(fail)?;
            Ok::<Duration, String>(start.elapsed())
        };
        let (results, ping_time) = tokio::join!(sleeps, ping);
        let ping_time = ping_time?;
        let values: Result<Vec<i32>, _> = results.into_iter().collect();
        eq(values.map_err(fail)?, (0..5).collect::<Vec<i32>>())?;
        let total = start.elapsed();
        if ping_time > Duration::from_millis(250) || total > Duration::from_millis(1500) {
            return Err(format!("dispatch was not asynchronous: ping {ping_time:?}, all {total:?}"));
        }
        Ok(())
    })
    .await;
    c.run(&n("invocation timeout"), async {
        match t.ice_invocation_timeout(Some(Duration::from_millis(100))).sleep_then_return(1000, 1).await {
            Err(Error::InvocationTimeout(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    c.run(&n("connection still usable after a timeout"), async { t.ping().await.map_err(fail) }).await;
}

async fn futures_join<F: Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut handles = Vec::new();
    for f in futs {
        handles.push(f);
    }
    let mut out = Vec::new();
    // Poll them concurrently.
    let joined = futures_join_all(handles);
    for r in joined.await {
        out.push(r);
    }
    out
}

async fn futures_join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<std::pin::Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = (0..futs.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in futs.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("every future completed")).collect()
}

/// Echoes, for callbacks.
struct CallbackEcho;

impl Echo for CallbackEcho {
    async fn echo_string(&self, s: floe::CompactString, _: &floe::Current) -> floe::Result<floe::CompactString> {
        Ok(floe::format_compact!("callback {s}"))
    }
}

/// With `Ice.Default.Router` (a Glacier2 router): creates a session (any user and password
/// pass the router's null permissions verifier), then has the server call back an object of
/// an adapter routed through the router, in the category the router gives this client.
async fn routed_checks(c: &mut Checks, communicator: &Communicator, router: &ObjectPrx, t: &TesterPrx) {
    c.run("glacier2 createSession", async {
        let outcome = router
            .invoke("createSession", OperationMode::Normal, None, |e| {
                e.write_str("floe");
                e.write_str("secret");
            })
            .await
            .map_err(fail)?
            .ok_or("no reply")?;
        outcome.decode(|d| ObjectPrx::decode(communicator, d)).map_err(fail)?;
        Ok(())
    })
    .await;
    c.run("glacier2 callback through a routed adapter", async {
        let category = router
            .invoke("getCategoryForClient", OperationMode::Idempotent, None, |_| {})
            .await
            .map_err(fail)?
            .ok_or("no reply")?
            .decode(String::decode)
            .map_err(fail)?;
        let adapter = communicator.create_object_adapter_with_router("Callbacks", router).await.map_err(fail)?;
        let echo = adapter.add(EchoServer::new(CallbackEcho), Identity::with_category(&category, "echo"));
        adapter.activate().await.map_err(fail)?;
        let echo = EchoPrx::unchecked_cast(&echo);
        eq(t.call_echo(Some(&echo), "through the router").await.map_err(fail)?, "callback through the router".into())
    })
    .await;
}

fn main() -> std::process::ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let mut args: Vec<String> = std::env::args().collect();
    let proxy = match floe_interop::cli::take_option(&mut args, "--proxy") {
        Ok(v) => v.unwrap_or_else(|| "tester:tcp -h 127.0.0.1 -p 12010".to_string()),
        Err(e) => {
            eprintln!("floe-interop-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut skip = Vec::new();
    loop {
        match floe_interop::cli::take_option(&mut args, "--skip") {
            Ok(Some(prefix)) => skip.push(prefix),
            Ok(None) => break,
            Err(e) => {
                eprintln!("floe-interop-client: {e}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let shutdown = !args.iter().any(|a| a == "--no-shutdown");
    args.retain(|a| a != "--no-shutdown");
    let (communicator, _) = match Communicator::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe-interop-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let base = match communicator.string_to_proxy(&proxy) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("floe-interop-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut checks = Checks { passed: 0, failed: 0, skip };
    communicator.block_on(async {
        let t = TesterPrx::from_object(base);
        if let Some(router) = communicator.default_router() {
            routed_checks(&mut checks, &communicator, &router, &t).await;
        }
        run(&mut checks, &communicator, &t, false).await;
        let t10 = t.ice_encoding_version(EncodingVersion::V1_0);
        run(&mut checks, &communicator, &t10, true).await;
        if shutdown {
            checks.run("shutdown", async { t.shutdown().await.map_err(fail) }).await;
        }
        communicator.destroy().await;
    });
    println!("{} passed, {} failed", checks.passed, checks.failed);
    if checks.failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}
