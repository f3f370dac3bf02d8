//! Fuzz entry points. Each takes arbitrary bytes and must return without panicking, whatever
//! they contain; `fuzz/` runs them under libFuzzer and `tests/replay.rs` replays the corpora
//! and every past crash in the default test run.

use bytes::{Bytes, BytesMut};
use floe::encoding::{Decode, Decoder, EncodingVersion, OptionalFormat, ProxyData};
use floe::protocol::compress::decompress_message;
use floe::protocol::request::decode_batch;
use floe::protocol::{FrameReader, MessageType, Reply, Request};

/// A fuzz entry point.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/` know them.
pub const TARGETS: &[(&str, Target)] = &[
    ("frame", frame),
    ("request", request),
    ("reply", reply),
    ("types", types),
    ("decompress", decompress),
    ("proxy_string", proxy_string),
    ("slice", slice),
    ("classes", classes),
];

/// A byte stream cut into messages by the frame reader (fed in two pieces), each decoded as
/// its type says.
pub fn frame(data: &[u8]) {
    let reader = FrameReader::new(1 << 20);
    let split = data.first().map(|b| *b as usize % (data.len() + 1)).unwrap_or(0);
    let mut buf = BytesMut::new();
    for piece in [&data[..split], &data[split..]] {
        buf.extend_from_slice(piece);
        while let Ok(Some(m)) = reader.next_message(&mut buf) {
            match m.header.message_type {
                MessageType::Request => {
                    let _ = Request::decode(m.body);
                }
                MessageType::BatchRequest => {
                    let _ = decode_batch(m.body);
                }
                MessageType::Reply => {
                    let _ = Reply::decode(m.body);
                }
                _ => {}
            }
        }
    }
}

/// A request body, then its parameters read as several types.
pub fn request(data: &[u8]) {
    if let Ok(r) = Request::decode(Bytes::copy_from_slice(data)) {
        let mut d = r.params_decoder();
        let _ = Vec::<String>::decode(&mut d);
        let _ = d.read_optional(1, OptionalFormat::VSize);
        let _ = d.skip_remaining_optionals();
    }
    let _ = decode_batch(Bytes::copy_from_slice(data));
}

/// A reply body, then its payload as a user exception.
pub fn reply(data: &[u8]) {
    if let Ok(r) = Reply::decode(Bytes::copy_from_slice(data)) {
        if let floe::protocol::ReplyBody::UserException { encoding, payload } = r.body {
            let mut d = Decoder::new(payload, encoding);
            if d.start_exception().is_ok() {
                while let Ok(h) = d.start_exception_slice() {
                    if h.is_last || d.skip_exception_slice(&h).is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// Every Slice type's decoder, in both encodings (the first byte picks the encoding).
pub fn types(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else { return };
    let enc = if first & 1 == 0 { EncodingVersion::V1_0 } else { EncodingVersion::V1_1 };
    let b = Bytes::copy_from_slice(rest);
    let d = || Decoder::new(b.clone(), enc);
    let _ = ProxyData::decode_nullable(&mut d());
    let _ = Vec::<bool>::decode(&mut d());
    let _ = Vec::<i16>::decode(&mut d());
    let _ = Vec::<i64>::decode(&mut d());
    let _ = Vec::<f64>::decode(&mut d());
    let _ = Bytes::decode(&mut d());
    let _ = Vec::<Vec<String>>::decode(&mut d());
    let _ = std::collections::HashMap::<String, Vec<i32>>::decode(&mut d());
    let _ = std::collections::BTreeMap::<i32, String>::decode(&mut d());
    let _ = floe::encoding::Identity::decode(&mut d());
    let _ = d().read_enum(first as i32 * 1000);
    let mut e = d();
    if e.start_encapsulation().is_ok() {
        for tag in [1, 5, 40] {
            if let Ok(true) = e.read_optional(tag, OptionalFormat::from_bits(first >> 1)) {
                let _ = e.skip_optional(OptionalFormat::from_bits(first >> 1));
            }
        }
        let _ = e.end_encapsulation();
    }
}

/// A compressed message, decompressed with a 1 MB cap.
pub fn decompress(data: &[u8]) {
    let _ = decompress_message(data, 1 << 20);
}

/// Proxy and endpoint strings.
pub fn proxy_string(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let defaults = floe::proxy::reference::ParseDefaults::default();
        if let Ok(r) = floe::proxy::reference::Reference::parse(s, &defaults) {
            // What parses must print and parse back to the same reference.
            let again = floe::proxy::reference::Reference::parse(&r.to_string(), &defaults);
            assert_eq!(again.as_ref().ok(), Some(&r), "{s:?} printed as {}", r);
        }
        let _ = floe::proxy::reference::parse_endpoint(s, &defaults);
    }
}

/// Slice source text: compiled, and generated when it checks (generated code that does not
/// parse is a failure).
pub fn slice(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let c = floe_slice::compile_str("fuzz.ice", s, &[]);
        let _ = c.render_diagnostics();
        if let Some(u) = &c.unit {
            // A checked unit always generates Rust that parses; an error is a generator bug.
            if let Err(e) = floe_slice::generate(u, &Default::default()) {
                panic!("{e}");
            }
        }
    }
}

/// A class for the `classes` target: a linked node with a `Value` member, so that inputs reach
/// back-references, cycles, derived types, unknown types and preserved slices.
#[derive(Debug, Default)]
struct Node {
    value: i32,
    next: Option<floe::Class<Node>>,
    any: Option<floe::AnyClass>,
}

impl floe::encoding::ClassValue for Node {
    fn ice_id(&self) -> &'static str {
        "::Fuzz::Node"
    }
    fn part(&self, t: std::any::TypeId) -> Option<&dyn std::any::Any> {
        (t == std::any::TypeId::of::<Self>()).then_some(self as &dyn std::any::Any)
    }
    fn part_mut(&mut self, t: std::any::TypeId) -> Option<&mut dyn std::any::Any> {
        (t == std::any::TypeId::of::<Self>()).then_some(self as &mut dyn std::any::Any)
    }
    fn part_checker(&self) -> fn(std::any::TypeId) -> bool {
        |t| t == std::any::TypeId::of::<Node>()
    }
    fn preserves_slices(&self) -> bool {
        true
    }
    fn encode_slices(&self, enc: &mut floe::encoding::Encoder) {
        enc.start_class_slice("::Fuzz::Node", Some(3), true, false);
        enc.write_i32(self.value);
        enc.write_class(self.next.as_ref());
        enc.write_class(self.any.as_ref());
        enc.end_class_slice();
    }
    fn decode_slices(&mut self, dec: &mut Decoder) -> floe::encoding::Result<()> {
        dec.start_class_slice()?;
        self.value = dec.read_i32()?;
        self.next = dec.read_class::<Node>()?;
        self.any = dec.read_any_class(None)?;
        dec.end_class_slice()
    }
}

impl floe::encoding::ClassType for Node {
    const TYPE_ID: &'static str = "::Fuzz::Node";
    const FACTORY: floe::encoding::ClassFactory = floe::encoding::ClassFactory {
        create: |id| (id == "::Fuzz::Node").then(|| Box::new(Node::default()) as Box<dyn floe::encoding::ClassValue>),
        compact: |id| (id == 3).then_some("::Fuzz::Node"),
    };
}

/// Class graphs in both encodings and both formats: read as Node and as any class, then
/// written back (which walks what was read, cycles included).
pub fn classes(data: &[u8]) {
    for encoding in [EncodingVersion::V1_1, EncodingVersion::V1_0] {
        let mut d = Decoder::new(Bytes::copy_from_slice(data), encoding);
        d.set_class_factory(<Node as floe::encoding::ClassType>::FACTORY);
        let a = d.read_class::<Node>();
        let b = d.read_any_class(None);
        if d.read_pending_values().is_ok() {
            for format in [floe::encoding::FormatType::Compact, floe::encoding::FormatType::Sliced] {
                let mut e = floe::encoding::Encoder::new(encoding);
                e.set_format(format);
                if let Ok(Some(a)) = &a {
                    let _ = a.read().value;
                    e.write_class(Some(a));
                }
                if let Ok(Some(b)) = &b {
                    e.write_class(Some(b));
                }
                e.write_pending_values();
            }
        }
    }
}

/// Encoded class graphs to start the `classes` target from: a cycle, sharing, a node holding
/// another as a `Value`, and an instance of an unknown derived type (sliced format) — in both
/// encodings and formats.
pub fn class_seeds() -> Vec<Vec<u8>> {
    let a = floe::Class::new(Node { value: 1, next: None, any: None });
    let b = floe::Class::new(Node { value: 2, next: Some(a.clone()), any: Some(a.to_any()) });
    a.write().next = Some(b.clone());
    let mut seeds = Vec::new();
    for encoding in [EncodingVersion::V1_1, EncodingVersion::V1_0] {
        for format in [floe::encoding::FormatType::Compact, floe::encoding::FormatType::Sliced] {
            let mut e = floe::encoding::Encoder::new(encoding);
            e.set_format(format);
            e.write_class(Some(&a));
            e.write_class(Some(&b.to_any()));
            e.write_pending_values();
            seeds.push(e.as_slice().to_vec());
        }
    }
    // An unknown most-derived slice ("::Fuzz::Leaf", sliced) in front of a Node slice.
    let mut unknown = vec![0x01, 0x11, 12];
    unknown.extend_from_slice(b"::Fuzz::Leaf");
    unknown.extend_from_slice(&8i32.to_le_bytes());
    unknown.extend_from_slice(&7i32.to_le_bytes());
    unknown.extend_from_slice(&[0x33, 3]);
    unknown.extend_from_slice(&10i32.to_le_bytes());
    unknown.extend_from_slice(&5i32.to_le_bytes());
    unknown.extend_from_slice(&[0, 0, 0]);
    seeds.push(unknown);
    seeds
}
