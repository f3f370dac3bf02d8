//! Helpers shared by the integration tests: the captured Ice 3.7 vectors and hand-written
//! encoders for the types of tests/interop/Test.ice.
#![allow(dead_code, missing_docs, unreachable_pub)]

use bytes::Bytes;
use floe::encoding::{Decode, DecodeError, Decoder, Encode, Encoder, UserExceptionSlices, WireLayout};

/// One labelled exchange of the capture: messages in order, `true` for client to server.
pub struct Exchange {
    pub label: String,
    pub messages: Vec<(bool, Bytes)>,
}

impl Exchange {
    pub fn requests(&self) -> impl Iterator<Item = &Bytes> {
        self.messages.iter().filter(|(c2s, _)| *c2s).map(|(_, m)| m)
    }
    pub fn replies(&self) -> impl Iterator<Item = &Bytes> {
        self.messages.iter().filter(|(c2s, _)| !*c2s).map(|(_, m)| m)
    }
}

pub fn load_vectors() -> Vec<Exchange> {
    // FLOE_VECTORS points at a fresh capture (scripts/test makes one from the installed Ice).
    let path = std::env::var("FLOE_VECTORS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/ice37.txt").to_string());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out: Vec<Exchange> = Vec::new();
    for line in text.lines() {
        if let Some(label) = line.strip_prefix("## ") {
            out.push(Exchange { label: label.to_string(), messages: Vec::new() });
        } else if let Some(hex) = line.strip_prefix("> ") {
            out.last_mut().unwrap().messages.push((true, Bytes::from(hex::decode(hex).unwrap())));
        } else if let Some(hex) = line.strip_prefix("< ") {
            out.last_mut().unwrap().messages.push((false, Bytes::from(hex::decode(hex).unwrap())));
        }
    }
    out
}

pub fn exchange<'a>(all: &'a [Exchange], label: &str) -> &'a Exchange {
    all.iter().find(|e| e.label == label).unwrap_or_else(|| panic!("no vector labelled {label}"))
}

// ---- the types of Test.ice, written by hand

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Color {
    Red = 0,
    Green = 5,
    Blue = 6,
}

impl Encode for Color {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_enum(*self as i32, 6);
    }
}

impl Decode for Color {
    const MIN_WIRE_SIZE: usize = 1;
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        match dec.read_enum(6)? {
            0 => Ok(Color::Red),
            5 => Ok(Color::Green),
            6 => Ok(Color::Blue),
            value => Err(DecodeError::UnknownEnumerator { type_id: "::Interop::Color", value }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(C)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

unsafe impl WireLayout for Point {}

impl Encode for Point {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_i32(self.x);
        enc.write_i32(self.y);
    }
    fn encode_seq(items: &[Self], enc: &mut Encoder) {
        floe::encoding::encode_seq_bulk(items, enc);
    }
}

impl Decode for Point {
    const MIN_WIRE_SIZE: usize = 8;
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(Point { x: dec.read_i32()?, y: dec.read_i32()? })
    }
    fn decode_seq(dec: &mut Decoder) -> Result<Vec<Self>, DecodeError> {
        floe::encoding::decode_seq_bulk(dec)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[repr(C)]
pub struct Fixed {
    pub i: i32,
    pub j: i32,
    pub d: f64,
}

unsafe impl WireLayout for Fixed {}

impl Encode for Fixed {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_i32(self.i);
        enc.write_i32(self.j);
        enc.write_f64(self.d);
    }
    fn encode_seq(items: &[Self], enc: &mut Encoder) {
        floe::encoding::encode_seq_bulk(items, enc);
    }
}

impl Decode for Fixed {
    const MIN_WIRE_SIZE: usize = 16;
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(Fixed { i: dec.read_i32()?, j: dec.read_i32()?, d: dec.read_f64()? })
    }
    fn decode_seq(dec: &mut Decoder) -> Result<Vec<Self>, DecodeError> {
        floe::encoding::decode_seq_bulk(dec)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StringDouble {
    pub s: String,
    pub d: f64,
}

impl Encode for StringDouble {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_str(&self.s);
        enc.write_f64(self.d);
    }
}

impl Decode for StringDouble {
    const MIN_WIRE_SIZE: usize = 9;
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(StringDouble { s: dec.read_string()?, d: dec.read_f64()? })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mixed {
    pub b: bool,
    pub by: u8,
    pub sh: i16,
    pub i: i32,
    pub l: i64,
    pub f: f32,
    pub d: f64,
    pub s: String,
    pub c: Color,
    pub p: Point,
}

impl Encode for Mixed {
    fn encode(&self, enc: &mut Encoder) {
        self.b.encode(enc);
        self.by.encode(enc);
        self.sh.encode(enc);
        self.i.encode(enc);
        self.l.encode(enc);
        self.f.encode(enc);
        self.d.encode(enc);
        self.s.encode(enc);
        self.c.encode(enc);
        self.p.encode(enc);
    }
}

impl Decode for Mixed {
    const MIN_WIRE_SIZE: usize = 1 + 1 + 2 + 4 + 8 + 4 + 8 + 1 + 1 + 8;
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(Mixed {
            b: Decode::decode(dec)?,
            by: Decode::decode(dec)?,
            sh: Decode::decode(dec)?,
            i: Decode::decode(dec)?,
            l: Decode::decode(dec)?,
            f: Decode::decode(dec)?,
            d: Decode::decode(dec)?,
            s: Decode::decode(dec)?,
            c: Decode::decode(dec)?,
            p: Decode::decode(dec)?,
        })
    }
}

pub fn mixed1() -> Mixed {
    Mixed {
        b: true,
        by: 7,
        sh: -3,
        i: 100000,
        l: -9000000000,
        f: 0.25,
        d: -1.5,
        s: "mixed".into(),
        c: Color::Blue,
        p: Point { x: 3, y: 4 },
    }
}

pub fn mixed2() -> Mixed {
    Mixed {
        b: false,
        by: 255,
        sh: 32767,
        i: i32::MIN,
        l: i64::MAX,
        f: -0.0,
        d: 1e300,
        s: String::new(),
        c: Color::Red,
        p: Point { x: -1, y: 0 },
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BaseError {
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DerivedError {
    pub reason: String,
    pub code: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OtherError {
    pub values: Vec<i32>,
}

impl UserExceptionSlices for BaseError {
    fn type_id(&self) -> &'static str {
        "::Interop::BaseError"
    }
    fn encode_slices(&self, enc: &mut Encoder) {
        enc.start_exception_slice("::Interop::BaseError", true, false);
        enc.write_str(&self.reason);
        enc.end_exception_slice();
    }
    fn decode_body(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let reason = dec.read_string()?;
        dec.end_exception_slice()?;
        Ok(BaseError { reason })
    }
}

impl UserExceptionSlices for DerivedError {
    fn type_id(&self) -> &'static str {
        "::Interop::DerivedError"
    }
    fn encode_slices(&self, enc: &mut Encoder) {
        enc.start_exception_slice("::Interop::DerivedError", false, false);
        enc.write_i32(self.code);
        enc.end_exception_slice();
        BaseError { reason: self.reason.clone() }.encode_slices(enc);
    }
    fn decode_body(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let code = dec.read_i32()?;
        dec.end_exception_slice()?;
        let base = dec.start_exception_slice()?;
        if base.type_id != "::Interop::BaseError" {
            return Err(DecodeError::Malformed("unexpected base slice"));
        }
        let BaseError { reason } = BaseError::decode_body(dec)?;
        Ok(DerivedError { reason, code })
    }
}

impl UserExceptionSlices for OtherError {
    fn type_id(&self) -> &'static str {
        "::Interop::OtherError"
    }
    fn encode_slices(&self, enc: &mut Encoder) {
        enc.start_exception_slice("::Interop::OtherError", true, false);
        self.values.encode(enc);
        enc.end_exception_slice();
    }
    fn decode_body(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let values = Vec::<i32>::decode(dec)?;
        dec.end_exception_slice()?;
        Ok(OtherError { values })
    }
}
