//! Byte-exact checks against messages captured from real ZeroC Ice 3.7
//! (tests/vectors/ice37.txt, made by tests/vectors/capture.py): floe decodes every message to
//! the values the Ice client used, and encodes those values to exactly the same bytes.
#![allow(clippy::approx_constant)] // 3.14 is the value the Ice client sent, not an approximation of pi.

mod common;

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use common::*;
use floe::encoding::{
    Context, Decode, Decoder, Encode, Encoder, EncodingVersion, EndpointData, Identity, InvocationMode, IpEndpointData,
    OptionalFormat, ProtocolVersion, ProxyData, UserExceptionSlices,
};
use floe::protocol::compress::{compress_message, decompress_message};
use floe::protocol::header::{CLOSE_CONNECTION, VALIDATE_CONNECTION};
use floe::protocol::reply::RequestFailed;
use floe::protocol::request::{decode_batch, encode_request};
use floe::protocol::{
    BatchBuilder, FrameReader, MessageType, OperationMode, Reply, ReplyBody, Request, RequestPrefix,
    DEFAULT_MESSAGE_SIZE_MAX,
};

const V10: EncodingVersion = EncodingVersion::V1_0;
const V11: EncodingVersion = EncodingVersion::V1_1;

fn frame(msg: &Bytes) -> floe::protocol::Message {
    let mut buf = BytesMut::from(&msg[..]);
    let m = FrameReader::new(DEFAULT_MESSAGE_SIZE_MAX).next_message(&mut buf).unwrap().unwrap();
    assert!(buf.is_empty());
    m
}

fn request(ex: &Exchange) -> Request {
    let m = frame(ex.requests().next().unwrap_or_else(|| panic!("{}: no request", ex.label)));
    assert_eq!(m.header.message_type, MessageType::Request, "{}", ex.label);
    Request::decode(m.body).unwrap()
}

fn reply(ex: &Exchange) -> Reply {
    let m = frame(ex.replies().next().unwrap_or_else(|| panic!("{}: no reply", ex.label)));
    assert_eq!(m.header.message_type, MessageType::Reply, "{}", ex.label);
    Reply::decode(m.body).unwrap()
}

fn ok_payload(ex: &Exchange) -> (EncodingVersion, Bytes) {
    match reply(ex).body {
        ReplyBody::Ok { encoding, payload } => (encoding, payload),
        other => panic!("{}: expected OK reply, got {other:?}", ex.label),
    }
}

fn decode_like<T: Decode>(_: &T, d: &mut Decoder) -> T {
    T::decode(d).unwrap()
}

/// The values, written in order, give exactly `body`; and `body` decodes to the values.
macro_rules! check_body {
    ($label:expr, $body:expr, $enc:expr; $($v:expr),* $(,)?) => {{
        let body: &Bytes = &$body;
        #[allow(unused_mut)]
        let mut e = Encoder::new($enc);
        $( $v.encode(&mut e); )*
        assert_eq!(hex::encode(e.as_slice()), hex::encode(body), "{}: encode", $label);
        #[allow(unused_mut)]
        let mut d = Decoder::new(body.clone(), $enc);
        $( { let v = $v; let got = decode_like(&v, &mut d); assert_eq!(got, v, "{}: decode", $label); } )*
        assert!(d.is_empty(), "{}: {} trailing bytes", $label, d.remaining());
    }};
}

/// Checks the parameters of the request and the results of the reply of one exchange.
macro_rules! check_op {
    ($all:expr, $label:expr, $enc:expr; in: [$($i:expr),* $(,)?]; out: [$($o:expr),* $(,)?]) => {{
        let ex = exchange(&$all, $label);
        let req = request(ex);
        assert_eq!(req.encoding, $enc, "{}", $label);
        check_body!($label, req.params, $enc; $($i),*);
        let (enc, payload) = ok_payload(ex);
        assert_eq!(enc, $enc);
        check_body!($label, payload, $enc; $($o),*);
    }};
}

#[test]
fn every_message_frames_and_reencodes_byte_for_byte() {
    let all = load_vectors();
    assert!(all.len() > 70, "vector file looks truncated");
    let mut requests = 0;
    let mut replies = 0;
    for ex in &all {
        for (_, raw) in &ex.messages {
            let m = frame(raw);
            match m.header.message_type {
                MessageType::ValidateConnection => assert_eq!(&raw[..], &VALIDATE_CONNECTION[..]),
                MessageType::Request if m.header.compression != floe::protocol::CompressionStatus::Compressed => {
                    let r = Request::decode(m.body.clone()).unwrap();
                    let prefix = RequestPrefix::new(&r.identity, &r.facet, &r.operation, r.mode);
                    let again =
                        encode_request(r.request_id, &prefix, &r.context, r.encoding, |e| e.write_raw(&r.params));
                    assert_eq!(hex::encode(&again), hex::encode(raw), "{}: request re-encoding", ex.label);
                    requests += 1;
                }
                MessageType::Reply if m.header.compression != floe::protocol::CompressionStatus::Compressed => {
                    let r = Reply::decode(m.body.clone()).unwrap();
                    let mut again = r.encode();
                    // The compression byte (1 = "a compressed reply would have been welcome") is the sender's choice.
                    again[9] = raw[9];
                    assert_eq!(hex::encode(again), hex::encode(raw), "{}: reply re-encoding", ex.label);
                    replies += 1;
                }
                _ => {}
            }
        }
    }
    assert!(requests > 70 && replies > 70, "{requests} requests, {replies} replies");
}

#[test]
fn close_connection_constant_matches_the_reference() {
    assert_eq!(hex::encode(CLOSE_CONNECTION), "49636550010001000401".to_string() + "0e000000");
}

#[test]
fn twoway_request_layout() {
    let all = load_vectors();
    let r = request(exchange(&all, "ping"));
    assert_eq!(r.request_id, 1);
    assert_eq!(r.identity, Identity::new("tester"));
    assert_eq!(r.facet, "");
    assert_eq!(r.operation, "ping");
    assert_eq!(r.mode, OperationMode::Normal);
    assert!(r.context.is_empty());
    assert_eq!(r.encoding, V11);
    assert!(r.params.is_empty());
    let (enc, payload) = ok_payload(exchange(&all, "ping"));
    assert_eq!((enc, payload.len()), (V11, 0));
    assert_eq!(request(exchange(&all, "opIdempotent")).mode, OperationMode::Idempotent);
}

#[test]
fn primitives() {
    let all = load_vectors();
    check_op!(all, "opBool", V11; in: [true]; out: [true, false]);
    check_op!(all, "opByte", V11; in: [200u8, 100u8]; out: [44u8, 200u8]);
    check_op!(all, "opShort", V11; in: [-12345i16]; out: [12345i16, -12345i16]);
    check_op!(all, "opInt", V11; in: [123456i32, -7i32]; out: [-864192i32, 123456i32]);
    check_op!(all, "opLong", V11; in: [1234567890123i64]; out: [2469135780246i64, 1234567890123i64]);
    check_op!(all, "opFloat", V11; in: [1.5f32]; out: [0.75f32, 1.5f32]);
    check_op!(all, "opDouble", V11; in: [2.25f64, 0.5f64]; out: [2.75f64, 2.25f64]);
    check_op!(all, "opString", V11; in: [String::from("héllo"), String::from("wörld")];
        out: [String::from("olléh"), String::from("héllowörld")]);
    check_op!(all, "opColor", V11; in: [Color::Green]; out: [Color::Blue, Color::Green]);
    check_op!(all, "opPoint", V11; in: [Point { x: 1, y: -2 }]; out: [Point { x: -2, y: 1 }, Point { x: 1, y: -2 }]);
    check_op!(all, "opMixed", V11; in: [mixed1()]; out: [mixed1()]);
    check_op!(all, "opIdempotent", V11; in: [41i32]; out: [42i32]);
}

#[test]
fn sequences() {
    let all = load_vectors();
    check_op!(all, "opBoolSeq", V11; in: [vec![true, false, true]]; out: [vec![true, false, true], vec![true, false, true]]);
    check_op!(all, "opByteSeq", V11; in: [vec![0u8, 1, 2, 255]]; out: [vec![255u8, 2, 1, 0], vec![0u8, 1, 2, 255]]);
    check_op!(all, "opByteSeq", V11; in: [Bytes::from_static(&[0, 1, 2, 255])];
        out: [Bytes::from_static(&[255, 2, 1, 0]), Bytes::from_static(&[0, 1, 2, 255])]);
    check_op!(all, "opShortSeq", V11; in: [vec![1i16, -1, 300]]; out: [vec![300i16, -1, 1], vec![1i16, -1, 300]]);
    check_op!(all, "opIntSeq", V11; in: [vec![1i32, 2, 3, -4]]; out: [vec![-4i32, 3, 2, 1], vec![1i32, 2, 3, -4]]);
    check_op!(all, "opLongSeq", V11; in: [vec![1i64, -(1 << 40)]]; out: [vec![-(1i64 << 40), 1], vec![1i64, -(1 << 40)]]);
    check_op!(all, "opFloatSeq", V11; in: [vec![0.5f32, -2.0]]; out: [vec![-2.0f32, 0.5], vec![0.5f32, -2.0]]);
    check_op!(all, "opDoubleSeq", V11; in: [vec![3.14f64, -0.0]]; out: [vec![-0.0f64, 3.14], vec![3.14f64, -0.0]]);
    let strings = vec![String::from("a"), String::new(), String::from("ünï")];
    let reversed: Vec<String> = strings.iter().rev().cloned().collect();
    check_op!(all, "opStringSeq", V11; in: [strings.clone()]; out: [reversed, strings]);
    check_op!(all, "opColorSeq", V11; in: [vec![Color::Red, Color::Blue, Color::Green]];
        out: [vec![Color::Green, Color::Blue, Color::Red], vec![Color::Red, Color::Blue, Color::Green]]);
    let pts = vec![Point { x: 1, y: 2 }, Point { x: 3, y: 4 }];
    check_op!(all, "opPointSeq", V11; in: [pts.clone()]; out: [pts.iter().rev().copied().collect::<Vec<_>>(), pts]);
    let fixed = vec![Fixed { i: 1, j: 2, d: 0.5 }, Fixed { i: -1, j: -2, d: -0.5 }];
    check_op!(all, "opFixedSeq", V11; in: [fixed.clone()]; out: [fixed.iter().rev().copied().collect::<Vec<_>>(), fixed]);
    let sd = vec![StringDouble { s: "x".into(), d: 1.0 }, StringDouble { s: "yz".into(), d: 2.5 }];
    check_op!(all, "opStringDoubleSeq", V11; in: [sd.clone()]; out: [sd.iter().rev().cloned().collect::<Vec<_>>(), sd]);
    let mixed = vec![mixed1(), mixed2()];
    check_op!(all, "opMixedSeq", V11; in: [mixed.clone()]; out: [vec![mixed2(), mixed1()], mixed]);
    let nested = vec![vec![1i32, 2], vec![], vec![3]];
    check_op!(all, "opIntSeqSeq", V11; in: [nested.clone()]; out: [vec![vec![3i32], vec![], vec![1, 2]], nested]);
}

#[test]
fn dictionaries() {
    let all = load_vectors();
    let m = |v: &[(&str, i32)]| v.iter().map(|(k, x)| (k.to_string(), *x)).collect::<BTreeMap<_, _>>();
    check_op!(all, "opStringIntDict", V11; in: [m(&[("a", 1), ("b", 2)]), m(&[("b", 3), ("c", 4)])];
        out: [m(&[("a", 1), ("b", 3), ("c", 4)]), m(&[("a", 1), ("b", 2)])]);
    let is: BTreeMap<i32, String> = [(1, "one".to_string()), (2, "two".to_string())].into();
    check_op!(all, "opIntStringDict", V11; in: [is.clone()]; out: [is]);
    let sp: BTreeMap<String, Point> = [("p".to_string(), Point { x: 1, y: 2 })].into();
    check_op!(all, "opStringPointDict", V11; in: [sp.clone()]; out: [sp]);
    let ps: BTreeMap<Point, String> = [(Point { x: 1, y: 2 }, "p".to_string())].into();
    check_op!(all, "opPointStringDict", V11; in: [ps.clone()]; out: [ps]);
    let sss: BTreeMap<String, Vec<String>> = [("k".to_string(), vec!["v1".to_string(), "v2".to_string()])].into();
    check_op!(all, "opStringStringSeqDict", V11; in: [sss.clone()]; out: [sss]);
    // The same bytes decode into a HashMap too.
    let (_, payload) = ok_payload(exchange(&all, "opIntStringDict"));
    let mut d = Decoder::new(payload, V11);
    let h = std::collections::HashMap::<i32, String>::decode(&mut d).unwrap();
    assert_eq!(h.get(&2).map(String::as_str), Some("two"));
}

fn encode_opt_i32(e: &mut Encoder, tag: i32, v: Option<i32>) {
    if let Some(v) = v {
        if e.write_optional_tag(tag, OptionalFormat::F4) {
            e.write_i32(v);
        }
    }
}

fn decode_opt_i32(d: &mut Decoder, tag: i32) -> Option<i32> {
    d.read_optional(tag, OptionalFormat::F4).unwrap().then(|| d.read_i32().unwrap())
}

fn encode_opt_string(e: &mut Encoder, tag: i32, v: Option<&str>) {
    if let Some(v) = v {
        if e.write_optional_tag(tag, OptionalFormat::VSize) {
            e.write_str(v);
        }
    }
}

fn decode_opt_string(d: &mut Decoder, tag: i32) -> Option<String> {
    d.read_optional(tag, OptionalFormat::VSize).unwrap().then(|| d.read_string().unwrap())
}

#[test]
fn optionals() {
    let all = load_vectors();
    for (label, v) in [("opOptionalInt set", Some(42)), ("opOptionalInt unset", None)] {
        let ex = exchange(&all, label);
        let req = request(ex);
        let mut e = Encoder::new(V11);
        encode_opt_i32(&mut e, 2, v);
        assert_eq!(e.as_slice(), &req.params[..], "{label}");
        let mut d = Decoder::new(req.params.clone(), V11);
        assert_eq!(decode_opt_i32(&mut d, 2), v);
        // Results: the return value (tag 1) and then b (tag 3), sorted by tag.
        let (_, payload) = ok_payload(ex);
        let mut e = Encoder::new(V11);
        encode_opt_i32(&mut e, 1, v);
        encode_opt_i32(&mut e, 3, v);
        assert_eq!(e.as_slice(), &payload[..], "{label}");
        let mut d = Decoder::new(payload, V11);
        assert_eq!((decode_opt_i32(&mut d, 1), decode_opt_i32(&mut d, 3)), (v, v));
    }
    for (label, v) in [("opOptionalString set", Some("opt")), ("opOptionalString unset", None)] {
        let ex = exchange(&all, label);
        let req = request(ex);
        let mut e = Encoder::new(V11);
        encode_opt_string(&mut e, 2, v);
        assert_eq!(e.as_slice(), &req.params[..], "{label}");
        let (_, payload) = ok_payload(ex);
        let mut d = Decoder::new(payload.clone(), V11);
        // Reading tag 3 first skips tag 1.
        assert_eq!(decode_opt_string(&mut d, 3).as_deref(), v);
        let mut d = Decoder::new(payload, V11);
        assert_eq!(decode_opt_string(&mut d, 1).as_deref(), v);
        assert_eq!(decode_opt_string(&mut d, 3).as_deref(), v);
    }
    // A fixed-size struct: VSize with the struct size as prefix.
    let ex = exchange(&all, "opOptionalPoint");
    let req = request(ex);
    let mut e = Encoder::new(V11);
    assert!(e.write_optional_tag(2, OptionalFormat::VSize));
    e.write_size(8);
    Point { x: 5, y: 6 }.encode(&mut e);
    assert_eq!(e.as_slice(), &req.params[..]);
    let mut d = Decoder::new(ok_payload(ex).1, V11);
    assert!(d.read_optional(1, OptionalFormat::VSize).unwrap());
    assert_eq!(d.read_size().unwrap(), 8);
    assert_eq!(Point::decode(&mut d).unwrap(), Point { x: 5, y: 6 });
    // A sequence of fixed-size elements: VSize with n * 4 + 1 as prefix.
    let ex = exchange(&all, "opOptionalIntSeq");
    let req = request(ex);
    let mut e = Encoder::new(V11);
    assert!(e.write_optional_tag(2, OptionalFormat::VSize));
    e.write_size(3 * 4 + 1);
    vec![7i32, 8, 9].encode(&mut e);
    assert_eq!(e.as_slice(), &req.params[..]);
    // Encoding 1.0 drops optionals entirely.
    let ex = exchange(&all, "1.0 opOptionalInt");
    let req = request(ex);
    assert_eq!(req.encoding, V10);
    assert!(req.params.is_empty());
    let mut e = Encoder::new(V10);
    encode_opt_i32(&mut e, 2, Some(42));
    assert!(e.is_empty());
}

fn user_exception(ex: &Exchange) -> (EncodingVersion, Bytes) {
    match reply(ex).body {
        ReplyBody::UserException { encoding, payload } => (encoding, payload),
        other => panic!("{}: expected a user exception, got {other:?}", ex.label),
    }
}

fn check_exception<E: UserExceptionSlices + PartialEq + std::fmt::Debug>(
    ex: &Exchange,
    encoding: EncodingVersion,
    value: E,
) {
    let (enc, payload) = user_exception(ex);
    assert_eq!(enc, encoding);
    let mut e = Encoder::new(encoding);
    value.encode_exception(&mut e);
    assert_eq!(hex::encode(e.as_slice()), hex::encode(&payload), "{}", ex.label);
    let mut d = Decoder::new(payload, encoding);
    d.start_exception().unwrap();
    let first = d.start_exception_slice().unwrap();
    assert_eq!(first.type_id, value.type_id());
    assert_eq!(E::decode_body(&mut d).unwrap(), value);
    assert!(d.is_empty());
}

#[test]
fn user_exceptions() {
    let all = load_vectors();
    check_exception(exchange(&all, "throwBase"), V11, BaseError { reason: "bad".into() });
    check_exception(exchange(&all, "throwDerived"), V11, DerivedError { reason: "worse".into(), code: 7 });
    check_exception(exchange(&all, "throwOther"), V11, OtherError { values: vec![1, 2] });
    check_exception(exchange(&all, "throwUndeclared"), V11, DerivedError { reason: "u".into(), code: 1 });
    check_exception(exchange(&all, "1.0 throwBase"), V10, BaseError { reason: "bad".into() });
    check_exception(exchange(&all, "1.0 throwDerived"), V10, DerivedError { reason: "worse".into(), code: 7 });
    // A reader that only knows BaseError skips the derived slice in 1.0 (slices have sizes).
    let (_, payload) = user_exception(exchange(&all, "1.0 throwDerived"));
    let mut d = Decoder::new(payload, V10);
    d.start_exception().unwrap();
    let h = d.start_exception_slice().unwrap();
    assert_eq!(h.type_id, "::Interop::DerivedError");
    d.skip_exception_slice(&h).unwrap();
    let h = d.start_exception_slice().unwrap();
    assert_eq!(h.type_id, "::Interop::BaseError");
    assert_eq!(BaseError::decode_body(&mut d).unwrap(), BaseError { reason: "worse".into() });
    // In compact 1.1 the derived slice has no size: an unknown one cannot be skipped.
    let (_, payload) = user_exception(exchange(&all, "throwDerived"));
    let mut d = Decoder::new(payload, V11);
    d.start_exception().unwrap();
    let h = d.start_exception_slice().unwrap();
    assert!(!h.has_size && !h.is_last);
    assert!(matches!(d.skip_exception_slice(&h), Err(floe::encoding::DecodeError::UnknownSliceWithoutSize { .. })));
}

#[test]
fn system_exception_replies() {
    let all = load_vectors();
    match reply(exchange(&all, "throwNonSlice")).body {
        ReplyBody::UnknownException(text) => assert!(text.contains("not a Slice exception"), "{text}"),
        other => panic!("{other:?}"),
    }
    let failed = |name: &str, facet: &str, op: &str| RequestFailed {
        identity: Identity::new(name),
        facet: facet.into(),
        operation: op.into(),
    };
    assert_eq!(
        reply(exchange(&all, "ObjectNotExist")).body,
        ReplyBody::ObjectNotExist(failed("nobody", "", "ice_ping"))
    );
    assert_eq!(
        reply(exchange(&all, "FacetNotExist")).body,
        ReplyBody::FacetNotExist(failed("tester", "nofacet", "ice_ping"))
    );
    assert_eq!(
        reply(exchange(&all, "OperationNotExist")).body,
        ReplyBody::OperationNotExist(failed("tester", "", "nope"))
    );
}

#[test]
fn context_facet_and_builtins() {
    let all = load_vectors();
    let ex = exchange(&all, "getContext");
    let ctx: Context = [("k".to_string(), "v".to_string()), ("z".to_string(), "w".to_string())].into();
    assert_eq!(request(ex).context, ctx);
    check_body!("getContext", ok_payload(ex).1, V11; ctx);
    check_op!(all, "getFacet", V11; in: []; out: [String::new()]);
    let req = request(exchange(&all, "facet echoString"));
    assert_eq!(req.facet, "echo");
    check_op!(all, "facet echoString", V11; in: [String::from("f")]; out: [String::from("f")]);
    let req = request(exchange(&all, "named name"));
    assert_eq!(req.identity, Identity::with_category("named", "alice"));
    check_op!(all, "named name", V11; in: []; out: [String::from("alice")]);
    let req = request(exchange(&all, "ice_isA"));
    assert_eq!((req.operation.as_str(), req.mode), ("ice_isA", OperationMode::Nonmutating));
    check_op!(all, "ice_isA", V11; in: [String::from("::Interop::Tester")]; out: [true]);
    check_op!(all, "ice_ids", V11; in: []; out: [vec![String::from("::Ice::Object"), String::from("::Interop::Tester")]]);
    check_op!(all, "ice_id", V11; in: []; out: [String::from("::Interop::Tester")]);
}

#[test]
fn bulk_results() {
    let all = load_vectors();
    check_op!(all, "recvByteSeq", V11; in: [10i32]; out: [(0u8..10).collect::<Vec<u8>>()]);
    check_op!(all, "recvFixedSeq", V11; in: [3i32];
        out: [(0..3).map(|k| Fixed { i: k, j: -k, d: k as f64 * 0.5 }).collect::<Vec<_>>()]);
    check_op!(all, "recvStringDoubleSeq", V11; in: [2i32];
        out: [vec![StringDouble { s: "hello".into(), d: 3.14 }; 2]]);
}

fn tcp(host: &str, port: i32, timeout: i32, compress: bool) -> IpEndpointData {
    IpEndpointData { host: host.into(), port, timeout, compress }
}

fn proxy(name: &str) -> ProxyData {
    ProxyData {
        identity: Identity::new(name),
        facet: String::new(),
        mode: InvocationMode::Twoway,
        secure: false,
        protocol: ProtocolVersion::V1_0,
        encoding: V11,
        endpoints: Vec::new(),
        adapter_id: String::new(),
    }
}

fn check_proxy(all: &[Exchange], label: &str, encoding: EncodingVersion, expected: Option<ProxyData>) {
    let ex = exchange(all, label);
    let (enc, payload) = ok_payload(ex);
    assert_eq!(enc, encoding);
    let mut d = Decoder::new(payload.clone(), encoding);
    let got = ProxyData::decode_nullable(&mut d).unwrap();
    assert!(d.is_empty(), "{label}");
    // Every endpoint, ssl and wss included, is read back with its structure.
    assert_eq!(got, expected, "{label}");
    let mut e = Encoder::new(encoding);
    ProxyData::encode_nullable(expected.as_ref(), &mut e);
    assert_eq!(hex::encode(e.as_slice()), hex::encode(&payload), "{label}");
    if label.starts_with("echoProxy") {
        assert_eq!(request(ex).params, payload, "{label}: echoed unchanged");
    }
}

#[test]
fn proxies() {
    let all = load_vectors();
    let mut p = proxy("x");
    p.endpoints = vec![EndpointData::Tcp(tcp("127.0.0.1", 4061, 5000, false))];
    check_proxy(&all, "echoProxy 0 x:tcp -h 127.0.0.1 -p 4061 -t 5000", V11, Some(p));
    let mut p = proxy("x");
    p.facet = "fac".into();
    p.mode = InvocationMode::Oneway;
    p.secure = true;
    p.endpoints = vec![EndpointData::Udp { host: "239.1.2.3".into(), port: 5000, compress: true }];
    check_proxy(&all, "echoProxy 1 x -f fac -o -s:udp -h 239.1.2.3 -p 5000 -z", V11, Some(p));
    let mut p = proxy("x");
    p.endpoints = vec![EndpointData::Ws(tcp("localhost", 8080, 5000, false), "/chat".into())];
    check_proxy(&all, "echoProxy 2 x:ws -h localhost -p 8080 -r /chat -t 5000", V11, Some(p));
    let mut p = proxy("x");
    p.endpoints = vec![EndpointData::Ssl(tcp("127.0.0.1", 4064, -1, false))];
    check_proxy(&all, "echoProxy 3 x:ssl -h 127.0.0.1 -p 4064 -t infinite", V11, Some(p));
    let mut p = proxy("x");
    p.endpoints = vec![EndpointData::Wss(tcp("h", 443, 60000, false), "/x".into())];
    check_proxy(&all, "echoProxy 4 x:wss -h h -p 443 -r /x", V11, Some(p));
    let mut p = proxy("x");
    p.identity.category = "cat".into();
    p.adapter_id = "MyAdapter".into();
    check_proxy(&all, "echoProxy 5 cat/x@MyAdapter", V11, Some(p));
    let mut p = proxy("x");
    p.mode = InvocationMode::BatchDatagram;
    check_proxy(&all, "echoProxy 6 x -D", V11, Some(p));
    let mut p = proxy("x");
    p.endpoints = vec![EndpointData::Opaque { ty: 99, encoding: V10, bytes: vec![0x69, 0xb7, 0x21] }];
    check_proxy(&all, "echoProxy 7 x:opaque -t 99 -e 1.0 -v abch", V11, Some(p));
    let mut p = proxy("x");
    p.encoding = V10;
    p.endpoints = vec![EndpointData::Tcp(tcp("a", 1, 60000, false)), EndpointData::Tcp(tcp("b", 2, 60000, true))];
    check_proxy(&all, "echoProxy 8 x -e 1.0:tcp -h a -p 1:tcp -h b -p 2 -z", V11, Some(p));
    check_proxy(&all, "echoProxy null", V11, None);
    let port = |label: &str| {
        let (_, payload) = ok_payload(exchange(&all, label));
        let p =
            ProxyData::decode_nullable(&mut Decoder::new(payload, if label.starts_with("1.0") { V10 } else { V11 }))
                .unwrap()
                .unwrap();
        match &p.endpoints[0] {
            EndpointData::Tcp(ip) => ip.port,
            other => panic!("{other:?}"),
        }
    };
    let server_port = port("getSelf");
    let mut p = proxy("tester");
    p.endpoints = vec![EndpointData::Tcp(tcp("127.0.0.1", server_port, 60000, false))];
    check_proxy(&all, "getSelf", V11, Some(p.clone()));
    let mut e = p.clone();
    e.identity = Identity::new("echo");
    check_proxy(&all, "getEcho", V11, Some(e));
    let mut p10 = p.clone();
    p10.encoding = V10;
    check_proxy(&all, "1.0 getSelf", V10, Some(p10.clone()));
    let mut u = proxy("x");
    u.encoding = V10;
    u.endpoints = vec![EndpointData::Udp { host: "127.0.0.1".into(), port: 5000, compress: true }];
    check_proxy(&all, "1.0 echoProxy udp", V10, Some(u));
    // callEcho: a proxy followed by a string.
    let req = request(exchange(&all, "callEcho"));
    let mut d = req.params_decoder();
    let target = ProxyData::decode_nullable(&mut d).unwrap().unwrap();
    assert_eq!(target.identity, Identity::new("echo"));
    assert_eq!(d.read_string().unwrap(), "hi");
    check_body!("callEcho", ok_payload(exchange(&all, "callEcho")).1, V11; String::from("hi"));
}

#[test]
fn encoding_1_0() {
    let all = load_vectors();
    check_op!(all, "1.0 opColor", V10; in: [Color::Blue]; out: [Color::Red, Color::Blue]);
    check_op!(all, "1.0 opMixed", V10; in: [mixed1()]; out: [mixed1()]);
    check_op!(all, "1.0 opColorSeq", V10; in: [vec![Color::Red, Color::Blue, Color::Green]];
        out: [vec![Color::Green, Color::Blue, Color::Red], vec![Color::Red, Color::Blue, Color::Green]]);
    // The 1.0 enum of a type whose largest value is below 127 is one byte.
    let req = request(exchange(&all, "1.0 opColor"));
    assert_eq!(&req.params[..], &[6]);
}

#[test]
fn oneway_and_batch() {
    let all = load_vectors();
    let ex = exchange(&all, "incCounter oneway");
    assert_eq!(ex.replies().count(), 0);
    let req = request(ex);
    assert!(req.is_oneway());
    check_body!("oneway", req.params, V11; 5i32);

    let ex = exchange(&all, "incCounter batch");
    let raw = ex.requests().next().unwrap();
    let m = frame(raw);
    assert_eq!(m.header.message_type, MessageType::BatchRequest);
    let reqs = decode_batch(m.body).unwrap();
    assert_eq!(reqs.len(), 2);
    let prefix = RequestPrefix::new(&Identity::new("tester"), "", "incCounter", OperationMode::Normal);
    let mut batch = BatchBuilder::new();
    for (r, n) in reqs.iter().zip([1i32, 2]) {
        assert_eq!(r.operation, "incCounter");
        check_body!("batch", r.params, V11; n);
        let e = batch.start_request(&prefix, &Context::new(), V11);
        n.encode(e);
        batch.finish_request();
    }
    assert_eq!(hex::encode(batch.take().unwrap()), hex::encode(raw));
    assert!(batch.take().is_none(), "an empty batch yields nothing");
}

#[test]
fn compression_is_byte_exact() {
    let all = load_vectors();
    let ex = exchange(&all, "sendByteSeq compressed");
    let raw = ex.requests().next().unwrap();
    assert_eq!(raw[9], 2, "compression status 2");
    let plain = decompress_message(raw, DEFAULT_MESSAGE_SIZE_MAX).unwrap();
    let r = Request::decode(plain.clone().freeze().slice(14..)).unwrap();
    assert_eq!(r.operation, "sendByteSeq");
    check_body!("compressed", r.params, V11; vec![0u8; 200]);
    // floe compresses the same uncompressed message to the same bytes as Ice.
    let prefix = RequestPrefix::new(&r.identity, "", "sendByteSeq", OperationMode::Normal);
    let mut again = encode_request(r.request_id, &prefix, &Context::new(), V11, |e| vec![0u8; 200].encode(e));
    again[9] = 2;
    let compressed = compress_message(&again, 1).unwrap();
    assert_eq!(hex::encode(&compressed), hex::encode(raw));
    // The small reply to a compressed request is sent uncompressed with status 1.
    let reply_raw = ex.replies().next().unwrap();
    assert_eq!(reply_raw[9], 1);
    // The frame reader decompresses transparently.
    assert_eq!(frame(raw).body, plain.freeze().slice(14..));
}
