//! Every kind of bad input yields a typed error naming what was wrong; nothing panics and
//! nothing allocates more than the input justifies.

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use floe::encoding::{Decode, DecodeError, Decoder, EncodingVersion, Identity, OptionalFormat, ProxyData};
use floe::protocol::compress::{compress_message, decompress_message};
use floe::protocol::request::{decode_batch, encode_request};
use floe::protocol::{FrameReader, OperationMode, ProtocolError, Reply, Request, RequestPrefix};
use proptest::prelude::*;

const V11: EncodingVersion = EncodingVersion::V1_1;

fn dec(bytes: &[u8]) -> Decoder {
    Decoder::from_slice(bytes, V11)
}

#[test]
fn truncated_values() {
    assert!(matches!(
        dec(&[1, 2, 3]).read_i32(),
        Err(DecodeError::OutOfBounds { what: "int", needed: 4, remaining: 3 })
    ));
    assert!(matches!(dec(&[]).read_u8(), Err(DecodeError::OutOfBounds { .. })));
    assert!(matches!(dec(&[0; 7]).read_i64(), Err(DecodeError::OutOfBounds { what: "long", .. })));
    assert!(matches!(dec(&[255, 0, 1]).read_size(), Err(DecodeError::OutOfBounds { .. })));
    assert!(matches!(Mixed::decode(&mut dec(&[1, 2, 3, 4, 5, 6])), Err(DecodeError::OutOfBounds { .. })));
}

#[test]
fn sizes_larger_than_the_input_are_rejected_before_allocating() {
    // 2^31-1 strings announced in 5 bytes.
    let mut d = dec(&[255, 0xff, 0xff, 0xff, 0x7f]);
    let err = Vec::<String>::decode(&mut d).unwrap_err();
    assert!(matches!(err, DecodeError::SizeExceedsInput { count: 2147483647, .. }), "{err}");
    // A string of 10 bytes with 3 present.
    assert!(matches!(dec(&[10, b'a', b'b', b'c']).read_string(), Err(DecodeError::SizeExceedsInput { count: 10, .. })));
    // 1000 ints need 4000 bytes.
    let mut bytes = vec![255];
    bytes.extend_from_slice(&1000i32.to_le_bytes());
    bytes.extend_from_slice(&[0; 100]);
    assert!(matches!(
        Vec::<i32>::decode(&mut dec(&bytes)),
        Err(DecodeError::SizeExceedsInput { min_element_size: 4, .. })
    ));
    assert!(matches!(
        Vec::<Fixed>::decode(&mut dec(&bytes)),
        Err(DecodeError::SizeExceedsInput { min_element_size: 16, .. })
    ));
    // A dictionary: each entry needs key + value.
    let mut bytes = vec![50];
    bytes.extend_from_slice(&[0; 60]);
    assert!(matches!(
        std::collections::BTreeMap::<String, i32>::decode(&mut dec(&bytes)),
        Err(DecodeError::SizeExceedsInput { min_element_size: 5, .. })
    ));
}

#[test]
fn negative_sizes() {
    assert!(matches!(dec(&[255, 0xff, 0xff, 0xff, 0xff]).read_size(), Err(DecodeError::NegativeSize(-1))));
    let mut d = dec(&[10, 0, 0, 0, 1]);
    assert!(matches!(d.skip_optional(OptionalFormat::FSize), Err(DecodeError::OutOfBounds { .. })));
    let mut d = dec(&[0xff, 0xff, 0xff, 0xff]);
    assert!(matches!(d.skip_optional(OptionalFormat::FSize), Err(DecodeError::NegativeSize(-1))));
}

#[test]
fn invalid_utf8() {
    let err = dec(&[3, b'a', 0xff, b'b']).read_string().unwrap_err();
    assert_eq!(err, DecodeError::InvalidUtf8 { valid_up_to: 1 });
    assert!(err.to_string().contains("UTF-8"));
}

#[test]
fn unknown_enumerators() {
    assert_eq!(
        Color::decode(&mut dec(&[3])).unwrap_err(),
        DecodeError::UnknownEnumerator { type_id: "::Interop::Color", value: 3 }
    );
    // A size that does not fit in an enum value.
    assert!(Color::decode(&mut dec(&[255, 0, 0, 0, 1])).is_err());
}

#[test]
fn bad_encapsulations() {
    // Size below 6.
    assert!(matches!(
        dec(&[5, 0, 0, 0, 1, 1]).start_encapsulation(),
        Err(DecodeError::BadEncapsulationSize { size: 5, .. })
    ));
    // Size beyond the buffer.
    assert!(matches!(
        dec(&[60, 0, 0, 0, 1, 1]).start_encapsulation(),
        Err(DecodeError::BadEncapsulationSize { size: 60, .. })
    ));
    // Negative size.
    assert!(matches!(
        dec(&[0xff, 0xff, 0xff, 0xff, 1, 1]).start_encapsulation(),
        Err(DecodeError::BadEncapsulationSize { .. })
    ));
    // Unknown versions.
    assert_eq!(
        dec(&[6, 0, 0, 0, 2, 0]).start_encapsulation().unwrap_err(),
        DecodeError::UnsupportedEncoding { major: 2, minor: 0 }
    );
    assert_eq!(
        dec(&[6, 0, 0, 0, 1, 9]).start_encapsulation().unwrap_err(),
        DecodeError::UnsupportedEncoding { major: 1, minor: 9 }
    );
    // Reads stop at the end of the encapsulation, not of the buffer.
    let mut d = dec(&[8, 0, 0, 0, 1, 1, 7, 0, 9, 9, 9, 9]);
    d.start_encapsulation().unwrap();
    assert!(matches!(d.read_i32(), Err(DecodeError::OutOfBounds { remaining: 2, .. })));
    // Data left over: in 1.0 more than one byte is an error (one is tolerated, as in Ice).
    let mut d = dec(&[10, 0, 0, 0, 1, 0, 1, 2, 3, 4]);
    d.start_encapsulation().unwrap();
    d.read_u8().unwrap();
    assert_eq!(d.end_encapsulation().unwrap_err(), DecodeError::EncapsulationNotConsumed { extra: 3 });
    // In 1.1 leftovers must be well-formed optionals; an end marker inside params is not.
    let mut d = dec(&[9, 0, 0, 0, 1, 1, 1, 0xff, 7]);
    d.start_encapsulation().unwrap();
    d.read_u8().unwrap();
    assert_eq!(d.end_encapsulation().unwrap_err(), DecodeError::EncapsulationNotConsumed { extra: 1 });
    // ... and leftovers that are not even optionals fail too.
    let mut d = dec(&[10, 0, 0, 0, 1, 1, 1, 2, 3, 4]);
    d.start_encapsulation().unwrap();
    d.read_u8().unwrap();
    assert!(d.end_encapsulation().is_err());
}

#[test]
fn bad_optionals_and_proxies() {
    // Tag 2 announced as F4 but read as VSize.
    let mut d = dec(&[0x12, 1, 0, 0, 0]);
    assert!(matches!(
        d.read_optional(2, OptionalFormat::VSize),
        Err(DecodeError::OptionalFormatMismatch { tag: 2, .. })
    ));
    // Facet with two elements.
    assert_eq!(dec(&[2, 1, b'a', 1, b'b']).read_facet().unwrap_err(), DecodeError::InvalidFacet(2));
    // Proxy mode 9.
    let bytes = [1, b'x', 0, 0, 9, 0, 1, 0, 1, 1, 0, 0];
    assert_eq!(ProxyData::decode_nullable(&mut dec(&bytes)).unwrap_err(), DecodeError::InvalidProxyMode(9));
    // A class optional is skipped by reading the instance: a truncated one is an error, a null
    // one or an instance of a type nobody knows (sliced, so skippable) is skipped.
    assert!(dec(&[0x0f]).skip_remaining_optionals().is_err());
    assert!(dec(&[0x0f, 0x00]).skip_remaining_optionals().is_ok());
    let unknown = [0x0f, 0x01, 0x31, 4, b':', b':', b'X', b'y', 4, 0, 0, 0];
    let mut d = dec(&unknown);
    assert!(d.skip_remaining_optionals().is_ok(), "{:?}", dec(&unknown).skip_remaining_optionals());
    assert!(d.is_empty());
    // The same instance without a slice size cannot be skipped.
    assert!(dec(&[0x0f, 0x01, 0x21, 4, b':', b':', b'X', b'y']).skip_remaining_optionals().is_err());
}

fn header(kind: u8, compress: u8, size: i32) -> Vec<u8> {
    let mut h = b"IceP\x01\x00\x01\x00".to_vec();
    h.push(kind);
    h.push(compress);
    h.extend_from_slice(&size.to_le_bytes());
    h
}

fn read(bytes: &[u8], max: usize) -> Result<Option<floe::protocol::Message>, ProtocolError> {
    FrameReader::new(max).next_message(&mut BytesMut::from(bytes))
}

#[test]
fn bad_headers() {
    let mut bad = header(0, 0, 14);
    bad[0] = b'X';
    assert_eq!(read(&bad, 1024).unwrap_err(), ProtocolError::BadMagic(*b"XceP"));
    let mut bad = header(0, 0, 14);
    bad[4] = 2;
    assert_eq!(read(&bad, 1024).unwrap_err(), ProtocolError::UnsupportedProtocol { major: 2, minor: 0 });
    let mut bad = header(0, 0, 14);
    bad[7] = 1;
    assert_eq!(read(&bad, 1024).unwrap_err(), ProtocolError::UnsupportedProtocolEncoding { major: 1, minor: 1 });
    assert_eq!(read(&header(7, 0, 14), 1024).unwrap_err(), ProtocolError::UnknownMessageType(7));
    assert_eq!(read(&header(0, 3, 14), 1024).unwrap_err(), ProtocolError::InvalidCompressionStatus(3));
    assert_eq!(read(&header(0, 0, 13), 1024).unwrap_err(), ProtocolError::MessageTooSmall(13));
    assert_eq!(read(&header(0, 0, -5), 1024).unwrap_err(), ProtocolError::MessageTooSmall(-5));
    assert_eq!(read(&header(0, 0, 2000), 1024).unwrap_err(), ProtocolError::MessageTooLarge { size: 2000, max: 1024 });
    assert!(matches!(read(&header(3, 0, 20), 1024).unwrap_err(), ProtocolError::HeaderOnlyMessageWithBody { .. }));
    // A huge announced size is refused from the header alone, before any room is reserved.
    let mut buf = BytesMut::from(&header(0, 0, i32::MAX)[..]);
    let cap = buf.capacity();
    assert!(FrameReader::new(1 << 20).next_message(&mut buf).is_err());
    assert_eq!(buf.capacity(), cap);
    // A partial header or body is not an error.
    assert_eq!(read(&header(0, 0, 100)[..10], 1024).unwrap(), None);
    assert_eq!(read(&header(0, 0, 100), 1024).unwrap(), None);
}

#[test]
fn bad_bodies() {
    // A request whose body stops inside the identity.
    assert!(matches!(Request::decode(Bytes::from_static(&[1, 0, 0, 0, 5, b'a'])), Err(ProtocolError::Decode(_))));
    assert!(matches!(
        Request::decode(Bytes::from_static(&[1, 0, 0, 0, 1, b'a', 0, 0, 1, b'o', 7, 0, 6, 0, 0, 0, 1, 1])),
        Err(ProtocolError::InvalidOperationMode(7))
    ));
    // Statuses from 8 on (Ice 3.8's) carry a message string: one that is missing is an error,
    // and so is anything after it.
    assert!(matches!(Reply::decode(Bytes::from_static(&[1, 0, 0, 0, 9])), Err(ProtocolError::Decode(_))));
    assert!(matches!(
        Reply::decode(Bytes::from_static(&[1, 0, 0, 0, 200, 2, b'n', b'o', 0])),
        Err(ProtocolError::Decode(_))
    ));
    assert_eq!(
        decode_batch(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff])).unwrap_err(),
        ProtocolError::InvalidBatchCount(-1)
    );
    assert_eq!(
        decode_batch(Bytes::from_static(&[100, 0, 0, 0, 0, 0])).unwrap_err(),
        ProtocolError::InvalidBatchCount(100)
    );
}

fn compressed_sample() -> BytesMut {
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "big", OperationMode::Normal);
    let msg = encode_request(1, &prefix, &Default::default(), V11, |e| e.write_byte_seq(&[7u8; 500]));
    compress_message(&msg, 1).unwrap()
}

#[test]
fn corrupt_compressed_messages() {
    let good = compressed_sample();
    assert!(decompress_message(&good, 1 << 20).is_ok());
    // Corrupt bzip2 stream.
    let mut bad = good.clone();
    let n = bad.len();
    for b in &mut bad[30..n - 4] {
        *b ^= 0x5a;
    }
    assert!(matches!(decompress_message(&bad, 1 << 20), Err(ProtocolError::Compression(_))));
    // Announced uncompressed size too small, too large, or wrong.
    let mut bad = good.clone();
    bad[14..18].copy_from_slice(&10i32.to_le_bytes());
    assert!(matches!(decompress_message(&bad, 1 << 20), Err(ProtocolError::Compression(_))));
    let mut bad = good.clone();
    bad[14..18].copy_from_slice(&(100i32 << 20).to_le_bytes());
    assert!(matches!(decompress_message(&bad, 1 << 20), Err(ProtocolError::MessageTooLarge { .. })));
    let mut bad = good.clone();
    bad[14..18].copy_from_slice(&100i32.to_le_bytes());
    assert!(matches!(decompress_message(&bad, 1 << 20), Err(ProtocolError::Compression(_))));
    let mut bad = good.clone();
    bad[14..18].copy_from_slice(&5000i32.to_le_bytes());
    assert!(matches!(decompress_message(&bad, 1 << 20), Err(ProtocolError::Compression(_))));
    // Truncated stream.
    assert!(decompress_message(&good[..good.len() - 10], 1 << 20).is_err());
    // A zip bomb is capped by MessageSizeMax: 10 MB of zeros compress to a few bytes.
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "big", OperationMode::Normal);
    let bomb = encode_request(1, &prefix, &Default::default(), V11, |e| e.write_byte_seq(&vec![0u8; 10 << 20]));
    let c = compress_message(&bomb, 9).unwrap();
    assert!(c.len() < 100_000);
    assert!(matches!(read(&c, 1 << 20), Err(ProtocolError::MessageTooLarge { .. })));
}

#[test]
fn every_truncation_and_bit_flip_of_every_vector_is_handled() {
    for ex in load_vectors() {
        for (_, raw) in &ex.messages {
            for cut in 0..raw.len() {
                let _ = read(&raw[..cut], 1 << 20);
                let _ = Request::decode(raw.slice(14.min(cut)..cut));
                let _ = Reply::decode(raw.slice(14.min(cut)..cut));
            }
            for i in 0..raw.len() {
                let mut m = raw.to_vec();
                m[i] ^= 0xff;
                if let Ok(Some(msg)) = read(&m, 1 << 20) {
                    let _ = Request::decode(msg.body.clone());
                    let _ = Reply::decode(msg.body.clone());
                    let _ = decode_batch(msg.body);
                }
            }
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        let b = Bytes::from(data.clone());
        let _ = Request::decode(b.clone());
        let _ = Reply::decode(b.clone());
        let _ = decode_batch(b.clone());
        let _ = read(&data, 1 << 16);
        let _ = decompress_message(&data, 1 << 16);
        for enc in [EncodingVersion::V1_0, EncodingVersion::V1_1] {
            let _ = ProxyData::decode_nullable(&mut Decoder::new(b.clone(), enc));
            let _ = Vec::<Mixed>::decode(&mut Decoder::new(b.clone(), enc));
            let _ = Vec::<Vec<String>>::decode(&mut Decoder::new(b.clone(), enc));
            let mut d = Decoder::new(b.clone(), enc);
            if d.start_encapsulation().is_ok() {
                let _ = d.read_optional(3, OptionalFormat::VSize);
                let _ = d.end_encapsulation();
            }
            let mut d = Decoder::new(b.clone(), enc);
            if d.start_exception().is_ok() {
                if let Ok(h) = d.start_exception_slice() {
                    let _ = d.skip_exception_slice(&h);
                }
            }
        }
    }
}
