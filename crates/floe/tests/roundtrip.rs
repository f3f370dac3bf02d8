//! Property tests: arbitrary values survive encode → decode in both encodings, and
//! arbitrary messages survive framing, compression and batching.

mod common;

use std::collections::{BTreeMap, HashMap};

use bytes::{Bytes, BytesMut};
use common::*;
use floe::encoding::{
    Context, Decode, Decoder, Encode, Encoder, EncodingVersion, EndpointData, Identity, InvocationMode, IpEndpointData,
    OptionalFormat, ProtocolVersion, ProxyData,
};
use floe::protocol::compress::{compress_message, decompress_message};
use floe::protocol::request::{decode_batch, encode_request};
use floe::protocol::{BatchBuilder, FrameReader, OperationMode, Reply, ReplyBody, Request, RequestPrefix};
use proptest::prelude::*;

fn roundtrip<T: Encode + Decode + PartialEq + std::fmt::Debug>(v: &T, enc: EncodingVersion) {
    let mut e = Encoder::new(enc);
    v.encode(&mut e);
    let mut d = Decoder::new(e.into_bytes(), enc);
    let back = T::decode(&mut d).unwrap();
    assert_eq!(&back, v);
    assert!(d.is_empty());
}

fn encoding() -> impl Strategy<Value = EncodingVersion> {
    prop_oneof![Just(EncodingVersion::V1_0), Just(EncodingVersion::V1_1)]
}

fn color() -> impl Strategy<Value = Color> {
    prop_oneof![Just(Color::Red), Just(Color::Green), Just(Color::Blue)]
}

fn point() -> impl Strategy<Value = Point> {
    (any::<i32>(), any::<i32>()).prop_map(|(x, y)| Point { x, y })
}

fn mixed() -> impl Strategy<Value = Mixed> {
    (
        any::<bool>(),
        any::<u8>(),
        any::<i16>(),
        any::<i32>(),
        any::<i64>(),
        -1e30f32..1e30,
        -1e300f64..1e300,
        ".{0,20}",
        color(),
        point(),
    )
        .prop_map(|(b, by, sh, i, l, f, d, s, c, p)| Mixed { b, by, sh, i, l, f, d, s, c, p })
}

fn ip() -> impl Strategy<Value = IpEndpointData> {
    ("[a-z0-9.]{1,20}", 0..65536i32, -1..100000i32, any::<bool>())
        .prop_map(|(host, port, timeout, compress)| IpEndpointData { host, port, timeout, compress })
}

fn endpoint() -> impl Strategy<Value = EndpointData> {
    prop_oneof![
        ip().prop_map(EndpointData::Tcp),
        ip().prop_map(EndpointData::Ssl),
        ("[a-z0-9.]{1,20}", 0..65536i32, any::<bool>()).prop_map(|(host, port, compress)| EndpointData::Udp {
            host,
            port,
            compress
        }),
        (ip(), "/[a-z]{0,10}").prop_map(|(i, r)| EndpointData::Ws(i, r)),
        (ip(), "/[a-z]{0,10}").prop_map(|(i, r)| EndpointData::Wss(i, r)),
        (6..200i16, proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(ty, bytes)| EndpointData::Opaque {
            ty,
            encoding: EncodingVersion::V1_1,
            bytes
        }),
    ]
}

fn proxy(enc: EncodingVersion) -> impl Strategy<Value = ProxyData> {
    (
        "[a-zA-Z0-9]{1,12}",
        "[a-z]{0,6}",
        "[a-z]{0,6}",
        0u8..5,
        any::<bool>(),
        proptest::collection::vec(endpoint(), 0..4),
        "[A-Za-z]{0,10}",
    )
        .prop_map(move |(name, category, facet, mode, secure, endpoints, adapter_id)| ProxyData {
            identity: Identity { name: name.into(), category: category.into() },
            facet,
            mode: InvocationMode::from_u8(mode).unwrap(),
            secure,
            protocol: ProtocolVersion::V1_0,
            encoding: if enc.is_1_0() { EncodingVersion::V1_0 } else { EncodingVersion::V1_1 },
            adapter_id: if endpoints.is_empty() { adapter_id } else { String::new() },
            endpoints: endpoints
                .into_iter()
                .map(|e| match e {
                    // The 1.0 encaps of an opaque endpoint is kept as it is; give it the outer version.
                    EndpointData::Opaque { ty, bytes, .. } => EndpointData::Opaque { ty, encoding: enc, bytes },
                    other => other,
                })
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn primitives_roundtrip(enc in encoding(), b in any::<bool>(), by in any::<u8>(), s in any::<i16>(), i in any::<i32>(),
                            l in any::<i64>(), f in any::<f32>().prop_filter("nan", |f| !f.is_nan()),
                            d in any::<f64>().prop_filter("nan", |d| !d.is_nan()), st in ".*") {
        roundtrip(&b, enc);
        roundtrip(&by, enc);
        roundtrip(&s, enc);
        roundtrip(&i, enc);
        roundtrip(&l, enc);
        roundtrip(&f, enc);
        roundtrip(&d, enc);
        roundtrip(&st, enc);
    }

    #[test]
    fn compact_strings_share_the_string_wire_form(s in ".{0,60}", enc in encoding()) {
        let c = floe::CompactString::from(s.as_str());
        let mut a = Encoder::new(enc);
        c.encode(&mut a);
        let mut b = Encoder::new(enc);
        s.encode(&mut b);
        prop_assert_eq!(a.as_slice(), b.as_slice());
        roundtrip(&c, enc);
    }

    #[test]
    fn sizes_roundtrip(n in 0usize..(i32::MAX as usize)) {
        let mut e = Encoder::default();
        e.write_size(n);
        prop_assert_eq!(e.len(), if n < 255 { 1 } else { 5 });
        let mut d = Decoder::new(e.into_bytes(), EncodingVersion::V1_1);
        prop_assert_eq!(d.read_size().unwrap(), n);
    }

    #[test]
    fn sequences_roundtrip(enc in encoding(),
                           bools in proptest::collection::vec(any::<bool>(), 0..300),
                           bytes in proptest::collection::vec(any::<u8>(), 0..600),
                           ints in proptest::collection::vec(any::<i32>(), 0..300),
                           longs in proptest::collection::vec(any::<i64>(), 0..50),
                           strings in proptest::collection::vec(".{0,8}", 0..30),
                           colors in proptest::collection::vec(color(), 0..30),
                           points in proptest::collection::vec(point(), 0..300),
                           fixed in proptest::collection::vec((any::<i32>(), any::<i32>(), -1e9f64..1e9), 0..100),
                           nested in proptest::collection::vec(proptest::collection::vec(any::<i32>(), 0..5), 0..10),
                           mixed in proptest::collection::vec(mixed(), 0..5)) {
        roundtrip(&bools, enc);
        roundtrip(&bytes, enc);
        roundtrip(&Bytes::from(bytes.clone()), enc);
        roundtrip(&ints, enc);
        roundtrip(&longs, enc);
        roundtrip(&strings, enc);
        roundtrip(&colors, enc);
        roundtrip(&points, enc);
        let fixed: Vec<Fixed> = fixed.into_iter().map(|(i, j, d)| Fixed { i, j, d }).collect();
        roundtrip(&fixed, enc);
        roundtrip(&nested, enc);
        roundtrip(&mixed, enc);
    }

    #[test]
    fn bulk_copy_equals_member_by_member(fixed in proptest::collection::vec((any::<i32>(), any::<i32>(), any::<f64>()), 0..100)) {
        let fixed: Vec<Fixed> = fixed.into_iter().map(|(i, j, d)| Fixed { i, j, d }).collect();
        let mut bulk = Encoder::default();
        fixed.encode(&mut bulk);
        let mut slow = Encoder::default();
        slow.write_size(fixed.len());
        for f in &fixed {
            f.encode(&mut slow);
        }
        prop_assert_eq!(bulk.as_slice(), slow.as_slice());
    }

    #[test]
    fn dictionaries_roundtrip(enc in encoding(),
                              a in proptest::collection::btree_map(".{0,6}", any::<i32>(), 0..20),
                              b in proptest::collection::hash_map(any::<i32>(), ".{0,6}", 0..20),
                              c in proptest::collection::btree_map(point(), proptest::collection::vec(".{0,3}", 0..3), 0..10)) {
        roundtrip(&a, enc);
        roundtrip(&b, enc);
        roundtrip(&c, enc);
    }

    #[test]
    fn proxies_roundtrip((enc, p) in encoding().prop_flat_map(|e| (Just(e), proxy(e)))) {
        let mut e = Encoder::new(enc);
        p.encode(&mut e);
        let mut d = Decoder::new(e.into_bytes(), enc);
        let back = ProxyData::decode_nullable(&mut d).unwrap().unwrap();
        prop_assert!(d.is_empty());
        let mut expected = p.clone();
        if enc.is_1_0() {
            expected.encoding = EncodingVersion::V1_0;
        }
        // Every endpoint, ssl and wss included, comes back as it was, and gives the same bytes.
        let reencode = |p: &ProxyData| {
            let mut e = Encoder::new(enc);
            p.encode(&mut e);
            e.into_bytes()
        };
        prop_assert_eq!(reencode(&back), reencode(&expected));
        for (b, x) in back.endpoints.iter().zip(&expected.endpoints) {
            prop_assert_eq!(b, x);
        }
    }

    #[test]
    fn optionals_are_found_in_any_subset(present in proptest::collection::vec(any::<bool>(), 8), values in proptest::collection::vec(any::<i32>(), 8),
                                         big_tag in 30i32..1000) {
        let mut e = Encoder::default();
        let tags: Vec<i32> = vec![1, 2, 5, 9, 17, 29, big_tag, big_tag + 1];
        for ((tag, on), v) in tags.iter().zip(&present).zip(&values) {
            if *on {
                if *tag % 2 == 0 {
                    prop_assert!(e.write_optional_tag(*tag, OptionalFormat::F4));
                    e.write_i32(*v);
                } else {
                    prop_assert!(e.write_optional_tag(*tag, OptionalFormat::VSize));
                    e.write_str(&v.to_string());
                }
            }
        }
        let bytes = e.into_bytes();
        // Read only every other tag: the others are skipped.
        let mut d = Decoder::new(bytes.clone(), EncodingVersion::V1_1);
        for ((tag, on), v) in tags.iter().zip(&present).zip(&values).step_by(2) {
            let fmt = if *tag % 2 == 0 { OptionalFormat::F4 } else { OptionalFormat::VSize };
            let found = d.read_optional(*tag, fmt).unwrap();
            prop_assert_eq!(found, *on);
            if found {
                if *tag % 2 == 0 { prop_assert_eq!(d.read_i32().unwrap(), *v); }
                else { prop_assert_eq!(d.read_string().unwrap(), v.to_string()); }
            }
        }
        d.skip_remaining_optionals().unwrap();
        prop_assert!(d.is_empty());
    }

    #[test]
    fn requests_frame_and_decode(id in any::<i32>(), name in "[a-z]{1,10}", facet in "[a-z]{0,5}", op in "[a-zA-Z_]{1,20}",
                                 mode in 0u8..3, ctx in proptest::collection::btree_map("[a-z]{0,4}", ".{0,4}", 0..4),
                                 enc in encoding(), payload in proptest::collection::vec(any::<u8>(), 0..3000),
                                 chunk in 1usize..64) {
        let identity = Identity::new(name);
        let mode = OperationMode::from_u8(mode).unwrap();
        let prefix = RequestPrefix::new(&identity, &facet, &op, mode);
        let context: Context = ctx;
        let msg = encode_request(id, &prefix, &context, enc, |e| e.write_raw(&payload));
        // Feed the frame reader in small chunks, as a socket would.
        let reader = FrameReader::new(1 << 20);
        let mut buf = BytesMut::new();
        let mut got = None;
        for piece in msg.chunks(chunk) {
            buf.extend_from_slice(piece);
            if let Some(m) = reader.next_message(&mut buf).unwrap() {
                got = Some(m);
            }
        }
        let m = got.expect("a whole message");
        let r = Request::decode(m.body).unwrap();
        prop_assert_eq!(r, Request { request_id: id, identity, facet: facet.into(), operation: op.into(), mode, context: context.into(), encoding: enc, params: Bytes::from(payload) });
    }

    #[test]
    fn compression_roundtrips(payload in proptest::collection::vec(0u8..4, 100..5000), level in 1u32..10) {
        let prefix = RequestPrefix::new(&Identity::new("a"), "", "op", OperationMode::Normal);
        let msg = encode_request(1, &prefix, &Context::new(), EncodingVersion::V1_1, |e| e.write_byte_seq(&payload));
        let c = compress_message(&msg, level).unwrap();
        let plain = decompress_message(&c, 1 << 20).unwrap();
        prop_assert_eq!(&plain[14..], &msg[14..]);
    }

    #[test]
    fn batches_roundtrip(ops in proptest::collection::vec(("[a-z]{1,8}", proptest::collection::vec(any::<u8>(), 0..50)), 1..40)) {
        let mut b = BatchBuilder::new();
        for (op, params) in &ops {
            let prefix = RequestPrefix::new(&Identity::new("t"), "", op, OperationMode::Normal);
            let e = b.start_request(&prefix, &Context::new(), EncodingVersion::V1_1);
            e.write_raw(params);
            b.finish_request();
        }
        let msg = b.take().unwrap();
        let mut buf = msg.clone();
        let m = FrameReader::new(1 << 20).next_message(&mut buf).unwrap().unwrap();
        let reqs = decode_batch(m.body).unwrap();
        prop_assert_eq!(reqs.len(), ops.len());
        for (r, (op, params)) in reqs.iter().zip(&ops) {
            prop_assert_eq!(&r.operation, op);
            prop_assert_eq!(&r.params[..], &params[..]);
        }
    }

    /// Batches taken with `take_full` as requests are queued (mixing the three ways of
    /// queuing one) stay under the limit unless a request alone reaches it, and carry every
    /// request once, in order.
    #[test]
    fn full_batches_stay_under_the_limit_and_keep_every_request(
        sizes in proptest::collection::vec(0usize..300, 1..200),
        limit in 18usize..1500,
    ) {
        let mut b = BatchBuilder::new();
        let mut messages = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let op = format!("op{i}");
            let prefix = RequestPrefix::new(&Identity::new("t"), "", &op, OperationMode::Normal);
            let params = vec![i as u8; n];
            match i % 3 {
                0 => {
                    b.start_request(&prefix, &Context::new(), EncodingVersion::V1_1).write_raw(&params);
                    b.finish_request();
                }
                1 => b.push_encoded(&prefix, &Context::new(), EncodingVersion::V1_1, &params),
                _ => {
                    let single = encode_request(0, &prefix, &Context::new(), EncodingVersion::V1_1, |e| e.write_raw(&params));
                    // A request message's body after the request id is a batched request.
                    b.push_request_bytes(&single[18..]);
                }
            }
            if let Some(m) = b.take_full(limit) {
                messages.push(m);
            }
        }
        messages.extend(b.take());
        let mut seen = Vec::new();
        for msg in messages {
            let mut buf = msg.clone();
            let m = FrameReader::new(1 << 20).next_message(&mut buf).unwrap().unwrap();
            prop_assert!(buf.is_empty(), "one message, size patched");
            let reqs = decode_batch(m.body).unwrap();
            prop_assert!(msg.len() < limit || reqs.len() == 1, "{} bytes, {} requests, limit {}", msg.len(), reqs.len(), limit);
            seen.extend(reqs.into_iter().map(|r| (r.operation.to_string(), r.params.len())));
        }
        let expected: Vec<_> = sizes.iter().enumerate().map(|(i, &n)| (format!("op{i}"), n)).collect();
        prop_assert_eq!(seen, expected);
    }

    #[test]
    fn replies_roundtrip(id in any::<i32>(), status in 0u8..8, text in ".{0,30}", payload in proptest::collection::vec(any::<u8>(), 0..100)) {
        use floe::protocol::reply::RequestFailed;
        let f = RequestFailed { identity: Identity::new("x"), facet: "f".into(), operation: text.clone() };
        let body = match status {
            0 => ReplyBody::Ok { encoding: EncodingVersion::V1_1, payload: Bytes::from(payload) },
            1 => ReplyBody::UserException { encoding: EncodingVersion::V1_0, payload: Bytes::from(payload) },
            2 => ReplyBody::ObjectNotExist(f),
            3 => ReplyBody::FacetNotExist(f),
            4 => ReplyBody::OperationNotExist(f),
            5 => ReplyBody::UnknownLocalException(text),
            6 => ReplyBody::UnknownUserException(text),
            _ => ReplyBody::UnknownException(text),
        };
        let r = Reply { request_id: id, body };
        let mut buf = r.encode();
        let m = FrameReader::new(1 << 20).next_message(&mut buf).unwrap().unwrap();
        prop_assert_eq!(Reply::decode(m.body).unwrap(), r);
    }
}

#[test]
fn hashmap_and_btreemap_share_a_wire_form() {
    let h: HashMap<String, i32> = [("only".to_string(), 1)].into();
    let b: BTreeMap<String, i32> = [("only".to_string(), 1)].into();
    let mut e1 = Encoder::default();
    h.encode(&mut e1);
    let mut e2 = Encoder::default();
    b.encode(&mut e2);
    assert_eq!(e1.as_slice(), e2.as_slice());
}
