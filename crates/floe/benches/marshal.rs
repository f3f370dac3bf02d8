//! Micro-benchmarks of marshaling and framing: a request for `void o()`, a 500,000-byte
//! sequence and 50,000 `{int, int, double}` structs, each encoded and decoded.

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use floe::encoding::{
    decode_seq_bulk, encode_seq_bulk, Context, Decode, Decoder, Encode, Encoder, EncodingVersion, Identity, WireLayout,
};
use floe::protocol::request::{finish_request, start_request};
use floe::protocol::{FrameReader, OperationMode, Request, RequestPrefix};

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Fixed {
    i: i32,
    j: i32,
    d: f64,
}

unsafe impl WireLayout for Fixed {}

impl Encode for Fixed {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_i32(self.i);
        enc.write_i32(self.j);
        enc.write_f64(self.d);
    }
    fn encode_seq(items: &[Self], enc: &mut Encoder) {
        encode_seq_bulk(items, enc);
    }
}

impl Decode for Fixed {
    const MIN_WIRE_SIZE: usize = 16;
    fn decode(dec: &mut Decoder) -> floe::encoding::Result<Self> {
        Ok(Fixed { i: dec.read_i32()?, j: dec.read_i32()?, d: dec.read_f64()? })
    }
    fn decode_seq(dec: &mut Decoder) -> floe::encoding::Result<Vec<Self>> {
        decode_seq_bulk(dec)
    }
}

fn request_with(prefix: &RequestPrefix, params: impl FnOnce(&mut Encoder), buf: BytesMut) -> BytesMut {
    let mut enc = Encoder::with_buffer(buf, EncodingVersion::V1_0);
    let start = start_request(&mut enc, 1, prefix, &Context::new(), EncodingVersion::V1_1);
    params(&mut enc);
    finish_request(&mut enc, start);
    enc.into_buffer()
}

fn bench(c: &mut Criterion) {
    let reader = FrameReader::new(64 << 20);
    let mut g = c.benchmark_group("void o()");
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "o", OperationMode::Normal);
    g.throughput(Throughput::Elements(1));
    let mut scratch = BytesMut::with_capacity(64);
    g.bench_function("encode request", |b| {
        b.iter(|| {
            scratch.clear();
            let out = request_with(black_box(&prefix), |_| {}, std::mem::take(&mut scratch));
            scratch = out;
            black_box(scratch.len())
        })
    });
    let msg = request_with(&prefix, |_| {}, BytesMut::new()).freeze();
    g.bench_function("frame + decode request", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&msg[..]);
            let m = reader.next_message(&mut buf).unwrap().unwrap();
            black_box(Request::decode(m.body).unwrap())
        })
    });
    g.finish();

    let mut g = c.benchmark_group("500000-byte sequence");
    let data = vec![7u8; 500_000];
    g.throughput(Throughput::Bytes(500_000));
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "sendByteSeq", OperationMode::Normal);
    let mut scratch = BytesMut::with_capacity(600_000);
    g.bench_function("encode request", |b| {
        b.iter(|| {
            scratch.clear();
            let out = request_with(&prefix, |e| e.write_byte_seq(black_box(&data)), std::mem::take(&mut scratch));
            scratch = out;
            black_box(scratch.len())
        })
    });
    let msg = request_with(&prefix, |e| e.write_byte_seq(&data), BytesMut::new()).freeze();
    g.bench_function("decode request (zero-copy Bytes)", |b| {
        b.iter(|| {
            let m = Request::decode(msg.slice(14..)).unwrap();
            let mut d = m.params_decoder();
            black_box(Bytes::decode(&mut d).unwrap().len())
        })
    });
    g.bench_function("decode request (copy into Vec<u8>)", |b| {
        b.iter(|| {
            let m = Request::decode(msg.slice(14..)).unwrap();
            let mut d = m.params_decoder();
            black_box(Vec::<u8>::decode(&mut d).unwrap().len())
        })
    });
    g.finish();

    let mut g = c.benchmark_group("50000 {int,int,double}");
    let structs: Vec<Fixed> = (0..50_000).map(|k| Fixed { i: k, j: -k, d: k as f64 * 0.5 }).collect();
    g.throughput(Throughput::Bytes(50_000 * 16));
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "sendFixedSeq", OperationMode::Normal);
    let mut scratch = BytesMut::with_capacity(900_000);
    g.bench_function("encode request (bulk)", |b| {
        b.iter(|| {
            scratch.clear();
            let out = request_with(&prefix, |e| black_box(&structs).encode(e), std::mem::take(&mut scratch));
            scratch = out;
            black_box(scratch.len())
        })
    });
    g.bench_function("encode request (member by member)", |b| {
        b.iter(|| {
            scratch.clear();
            let out = request_with(
                &prefix,
                |e| {
                    e.write_size(structs.len());
                    for s in black_box(&structs) {
                        s.encode(e);
                    }
                },
                std::mem::take(&mut scratch),
            );
            scratch = out;
            black_box(scratch.len())
        })
    });
    let msg = request_with(&prefix, |e| structs.encode(e), BytesMut::new()).freeze();
    g.bench_function("decode request (bulk)", |b| {
        b.iter(|| {
            let m = Request::decode(msg.slice(14..)).unwrap();
            let mut d = m.params_decoder();
            black_box(Vec::<Fixed>::decode(&mut d).unwrap().len())
        })
    });
    g.bench_function("decode request (member by member)", |b| {
        b.iter(|| {
            let m = Request::decode(msg.slice(14..)).unwrap();
            let mut d = m.params_decoder();
            let n = d.read_seq_len(16).unwrap();
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(Fixed::decode(&mut d).unwrap());
            }
            black_box(v.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
