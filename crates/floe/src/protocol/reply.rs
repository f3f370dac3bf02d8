//! Reply messages.

use bytes::{Bytes, BytesMut};

use super::header::{patch_size, CompressionStatus, Header, MessageType};
use super::ProtocolError;
use crate::encoding::{Decode, Decoder, Encode, Encoder, EncodingVersion, Identity};

/// The status byte of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReplyStatus {
    /// Success; an encapsulation with the results follows.
    Ok = 0,
    /// A user exception; an encapsulation with the exception follows.
    UserException = 1,
    /// No servant for the identity.
    ObjectNotExist = 2,
    /// No servant for the facet.
    FacetNotExist = 3,
    /// The servant has no such operation.
    OperationNotExist = 4,
    /// The servant raised a local Ice exception.
    UnknownLocalException = 5,
    /// The servant raised a user exception it may not raise.
    UnknownUserException = 6,
    /// The servant failed in some other way.
    UnknownException = 7,
}

impl ReplyStatus {
    /// Maps the wire byte.
    pub fn from_u8(v: u8) -> Result<Self, ProtocolError> {
        Ok(match v {
            0 => ReplyStatus::Ok,
            1 => ReplyStatus::UserException,
            2 => ReplyStatus::ObjectNotExist,
            3 => ReplyStatus::FacetNotExist,
            4 => ReplyStatus::OperationNotExist,
            5 => ReplyStatus::UnknownLocalException,
            6 => ReplyStatus::UnknownUserException,
            7 => ReplyStatus::UnknownException,
            v => return Err(ProtocolError::UnknownReplyStatus(v)),
        })
    }
}

/// Identity, facet and operation of a request that failed (reply statuses 2–4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestFailed {
    /// The target identity.
    pub identity: Identity,
    /// The target facet.
    pub facet: String,
    /// The operation.
    pub operation: String,
}

/// What a reply carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// Status 0: the encapsulated results.
    Ok {
        /// Encoding of the encapsulation.
        encoding: EncodingVersion,
        /// Its body.
        payload: Bytes,
    },
    /// Status 1: the encapsulated user exception.
    UserException {
        /// Encoding of the encapsulation.
        encoding: EncodingVersion,
        /// Its body.
        payload: Bytes,
    },
    /// Status 2.
    ObjectNotExist(RequestFailed),
    /// Status 3.
    FacetNotExist(RequestFailed),
    /// Status 4.
    OperationNotExist(RequestFailed),
    /// Status 5.
    UnknownLocalException(String),
    /// Status 6.
    UnknownUserException(String),
    /// Status 7.
    UnknownException(String),
}

impl ReplyBody {
    /// The status byte for this body.
    pub fn status(&self) -> ReplyStatus {
        match self {
            ReplyBody::Ok { .. } => ReplyStatus::Ok,
            ReplyBody::UserException { .. } => ReplyStatus::UserException,
            ReplyBody::ObjectNotExist(_) => ReplyStatus::ObjectNotExist,
            ReplyBody::FacetNotExist(_) => ReplyStatus::FacetNotExist,
            ReplyBody::OperationNotExist(_) => ReplyStatus::OperationNotExist,
            ReplyBody::UnknownLocalException(_) => ReplyStatus::UnknownLocalException,
            ReplyBody::UnknownUserException(_) => ReplyStatus::UnknownUserException,
            ReplyBody::UnknownException(_) => ReplyStatus::UnknownException,
        }
    }
}

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The id of the request it answers.
    pub request_id: i32,
    /// What it carries.
    pub body: ReplyBody,
}

impl Reply {
    /// Decodes the body of a reply message (everything after the header).
    pub fn decode(body: Bytes) -> Result<Reply, ProtocolError> {
        let mut dec = Decoder::new(body, EncodingVersion::V1_0);
        let request_id = dec.read_i32()?;
        let status = ReplyStatus::from_u8(dec.read_u8()?)?;
        let body = match status {
            ReplyStatus::Ok | ReplyStatus::UserException => {
                let (encoding, payload) = dec.read_encapsulation()?;
                if status == ReplyStatus::Ok {
                    ReplyBody::Ok { encoding, payload }
                } else {
                    ReplyBody::UserException { encoding, payload }
                }
            }
            ReplyStatus::ObjectNotExist | ReplyStatus::FacetNotExist | ReplyStatus::OperationNotExist => {
                let failed = RequestFailed {
                    identity: Identity::decode(&mut dec)?,
                    facet: dec.read_facet()?,
                    operation: dec.read_string()?,
                };
                match status {
                    ReplyStatus::ObjectNotExist => ReplyBody::ObjectNotExist(failed),
                    ReplyStatus::FacetNotExist => ReplyBody::FacetNotExist(failed),
                    _ => ReplyBody::OperationNotExist(failed),
                }
            }
            ReplyStatus::UnknownLocalException => ReplyBody::UnknownLocalException(dec.read_string()?),
            ReplyStatus::UnknownUserException => ReplyBody::UnknownUserException(dec.read_string()?),
            ReplyStatus::UnknownException => ReplyBody::UnknownException(dec.read_string()?),
        };
        if !dec.is_empty() {
            return Err(ProtocolError::Decode(crate::encoding::DecodeError::Malformed("data after the reply body")));
        }
        Ok(Reply { request_id, body })
    }

    /// Encodes this reply as a complete message.
    pub fn encode(&self) -> BytesMut {
        let mut enc = Encoder::with_capacity(32, EncodingVersion::V1_0);
        enc.write_raw(&Header::bytes(MessageType::Reply, CompressionStatus::NotCompressed, 0));
        enc.write_i32(self.request_id);
        enc.write_u8(self.body.status() as u8);
        match &self.body {
            ReplyBody::Ok { encoding, payload } | ReplyBody::UserException { encoding, payload } => {
                enc.write_encapsulation(*encoding, payload);
            }
            ReplyBody::ObjectNotExist(f) | ReplyBody::FacetNotExist(f) | ReplyBody::OperationNotExist(f) => {
                f.identity.encode(&mut enc);
                enc.write_facet(&f.facet);
                enc.write_str(&f.operation);
            }
            ReplyBody::UnknownLocalException(s)
            | ReplyBody::UnknownUserException(s)
            | ReplyBody::UnknownException(s) => enc.write_str(s),
        }
        let mut buf = enc.into_buffer();
        let size = buf.len();
        patch_size(&mut buf, size);
        buf
    }
}

/// Starts a reply message with status `Ok` or `UserException` in `enc` and opens its
/// encapsulation; write the results and call [`finish_reply`] with the returned offset.
#[inline]
pub fn start_reply(enc: &mut Encoder, request_id: i32, status: ReplyStatus, encoding: EncodingVersion) -> usize {
    let start = enc.len();
    enc.write_raw(&Header::bytes(MessageType::Reply, CompressionStatus::NotCompressed, 0));
    enc.write_i32(request_id);
    enc.write_u8(status as u8);
    enc.start_encapsulation(encoding);
    start
}

/// Like [`finish_reply`], counting `extra` bytes sent right after the encoder's bytes (a
/// large trailing result written from its own buffer).
pub fn finish_reply_before(enc: &mut Encoder, start: usize, extra: usize) {
    enc.end_encapsulation_before(extra);
    let size = enc.len() - start + extra;
    patch_size(&mut enc.as_mut_slice()[start..], size);
}

/// Closes the results encapsulation and patches the message size.
#[inline]
pub fn finish_reply(enc: &mut Encoder, start: usize) {
    finish_reply_before(enc, start, 0);
}
