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
    /// Ice 3.8: the request's parameters did not unmarshal (a message string follows).
    InvalidData = 8,
    /// Ice 3.8: the caller may not access the target (a message string follows).
    Unauthorized = 9,
    /// Ice 3.8: the server or servant lacks a feature the request needs (a message string
    /// follows).
    NotSupported = 10,
}

/// The first reply status that Ice 3.8 sends with a message string and 3.7 does not know;
/// every status from here to 255 is read as [`ReplyBody::DispatchFailed`].
pub const DISPATCH_FAILED_MIN: u8 = 8;

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
            8 => ReplyStatus::InvalidData,
            9 => ReplyStatus::Unauthorized,
            10 => ReplyStatus::NotSupported,
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
    /// A status of [`DISPATCH_FAILED_MIN`] or above, as Ice 3.8 sends them (InvalidData,
    /// Unauthorized, NotSupported, or any other up to 255), with its message.
    DispatchFailed {
        /// The status byte.
        status: u8,
        /// What the server says went wrong.
        message: String,
    },
}

impl ReplyBody {
    /// The status byte for this body.
    pub fn status_byte(&self) -> u8 {
        match self {
            ReplyBody::Ok { .. } => ReplyStatus::Ok as u8,
            ReplyBody::UserException { .. } => ReplyStatus::UserException as u8,
            ReplyBody::ObjectNotExist(_) => ReplyStatus::ObjectNotExist as u8,
            ReplyBody::FacetNotExist(_) => ReplyStatus::FacetNotExist as u8,
            ReplyBody::OperationNotExist(_) => ReplyStatus::OperationNotExist as u8,
            ReplyBody::UnknownLocalException(_) => ReplyStatus::UnknownLocalException as u8,
            ReplyBody::UnknownUserException(_) => ReplyStatus::UnknownUserException as u8,
            ReplyBody::UnknownException(_) => ReplyStatus::UnknownException as u8,
            ReplyBody::DispatchFailed { status, .. } => *status,
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
        if let Some(reply) = Self::decode_results(&body) {
            return Ok(reply.complete(body));
        }
        Self::decode_general(body)
    }

    /// Decodes a reply field by field, with a typed error for whatever is malformed.
    fn decode_general(body: Bytes) -> Result<Reply, ProtocolError> {
        let mut dec = Decoder::new(body, EncodingVersion::V1_0);
        let request_id = dec.read_i32()?;
        let body = match dec.read_u8()? {
            status @ (0 | 1) => {
                let (encoding, payload) = dec.read_encapsulation()?;
                if status == 0 {
                    ReplyBody::Ok { encoding, payload }
                } else {
                    ReplyBody::UserException { encoding, payload }
                }
            }
            status @ 2..=4 => {
                let failed = RequestFailed {
                    identity: Identity::decode(&mut dec)?,
                    facet: dec.read_facet()?,
                    operation: dec.read_string()?,
                };
                match status {
                    2 => ReplyBody::ObjectNotExist(failed),
                    3 => ReplyBody::FacetNotExist(failed),
                    _ => ReplyBody::OperationNotExist(failed),
                }
            }
            5 => ReplyBody::UnknownLocalException(dec.read_string()?),
            6 => ReplyBody::UnknownUserException(dec.read_string()?),
            7 => ReplyBody::UnknownException(dec.read_string()?),
            status => ReplyBody::DispatchFailed { status, message: dec.read_string()? },
        };
        if !dec.is_empty() {
            return Err(ProtocolError::Decode(crate::encoding::DecodeError::Malformed("data after the reply body")));
        }
        Ok(Reply { request_id, body })
    }

    /// The usual reply — results or a user exception in an encapsulation that ends the
    /// message — read straight from the bytes, without a decoder; `None` for any other reply
    /// (or a malformed one), which [`decode`](Self::decode) then reads field by field. Both
    /// give the same reply for the same bytes.
    #[inline(always)]
    fn decode_results(body: &[u8]) -> Option<ResultsReply> {
        let (id, rest) = body.split_first_chunk::<4>()?;
        let (&status, rest) = rest.split_first()?;
        let (size, rest) = rest.split_first_chunk::<4>()?;
        let (&[major, minor], _) = rest.split_first_chunk::<2>()?;
        let size = i32::from_le_bytes(*size);
        // The encapsulation (its size counts its own 6-byte header) must end the message.
        if size < 6 || size as usize != body.len() - 5 {
            return None;
        }
        let user_exception = match status {
            0 => false,
            1 => true,
            _ => return None,
        };
        Some(ResultsReply {
            request_id: i32::from_le_bytes(*id),
            user_exception,
            encoding: EncodingVersion { major, minor },
        })
    }

    /// Encodes this reply as a complete message.
    pub fn encode(&self) -> BytesMut {
        let mut enc = Encoder::with_capacity(32, EncodingVersion::V1_0);
        enc.write_raw(&Header::bytes(MessageType::Reply, CompressionStatus::NotCompressed, 0));
        enc.write_i32(self.request_id);
        enc.write_u8(self.body.status_byte());
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
            | ReplyBody::UnknownException(s)
            | ReplyBody::DispatchFailed { message: s, .. } => enc.write_str(s),
        }
        let mut buf = enc.into_buffer();
        let size = buf.len();
        patch_size(&mut buf, size);
        buf
    }
}

/// A reply's fields read by [`Reply::decode_results`], before its payload is cut out.
struct ResultsReply {
    request_id: i32,
    user_exception: bool,
    encoding: EncodingVersion,
}

impl ResultsReply {
    /// The reply, with the payload that follows the 11 bytes read out of `body` (moved past
    /// them, so no reference count changes).
    #[inline(always)]
    fn complete(self, mut body: Bytes) -> Reply {
        bytes::Buf::advance(&mut body, 11);
        let ResultsReply { request_id, user_exception, encoding } = self;
        let body = if user_exception {
            ReplyBody::UserException { encoding, payload: body }
        } else {
            ReplyBody::Ok { encoding, payload: body }
        };
        Reply { request_id, body }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The fast path's reply, if it takes the bytes.
    fn fast(body: &Bytes) -> Option<Reply> {
        Reply::decode_results(body).map(|r| r.complete(body.clone()))
    }

    #[test]
    fn results_and_user_exceptions_take_the_fast_path() {
        let ok = Reply {
            request_id: 7,
            body: ReplyBody::Ok { encoding: EncodingVersion::V1_1, payload: Bytes::from_static(b"xyz") },
        };
        let user = Reply {
            request_id: -3,
            body: ReplyBody::UserException { encoding: EncodingVersion::V1_0, payload: Bytes::new() },
        };
        for reply in [ok, user] {
            let body = reply.encode().freeze().slice(14..);
            assert_eq!(fast(&body).as_ref(), Some(&reply));
            assert_eq!(Reply::decode(body).unwrap(), reply);
        }
        // Anything else is left to the general path.
        let missing = Reply { request_id: 1, body: ReplyBody::UnknownException("boom".into()) };
        assert!(fast(&missing.encode().freeze().slice(14..)).is_none());
    }

    #[test]
    fn statuses_of_ice_38_read_and_write_with_their_message() {
        // Ice 3.8 sends InvalidData (8), Unauthorized (9), NotSupported (10) and any status
        // above as the status byte and a message string.
        for status in [8u8, 9, 10, 77, 255] {
            let mut body = vec![5, 0, 0, 0, status, 4];
            body.extend_from_slice(b"nope");
            let reply = Reply::decode(Bytes::from(body.clone())).unwrap();
            assert_eq!(reply.body, ReplyBody::DispatchFailed { status, message: "nope".into() });
            assert_eq!(reply.body.status_byte(), status);
            assert_eq!(&reply.encode()[14..], &body[..], "status {status} encodes as it decodes");
        }
        assert_eq!(ReplyStatus::from_u8(9).unwrap(), ReplyStatus::Unauthorized);
        assert_eq!(ReplyStatus::from_u8(11).unwrap_err(), ProtocolError::UnknownReplyStatus(11));
    }

    #[test]
    fn bad_encapsulation_sizes_are_left_to_the_general_path() {
        // Too small, past the end, and short of the end (bytes after the encapsulation).
        for (size, extra) in [(5i32, 0usize), (9, 0), (6, 1)] {
            let mut body = vec![1, 0, 0, 0, 0];
            body.extend_from_slice(&size.to_le_bytes());
            body.extend_from_slice(&[1, 1]);
            body.extend(std::iter::repeat_n(0, extra));
            let body = Bytes::from(body);
            assert!(fast(&body).is_none(), "size {size}, {extra} extra");
            assert!(Reply::decode(body).is_err(), "size {size}, {extra} extra");
        }
    }

    proptest! {
        /// Wherever the fast path takes a reply, the general path reads the same one.
        #[test]
        fn the_fast_path_agrees_with_the_general_one(
            id in any::<i32>(),
            status in 0u8..3,
            size_delta in -2i32..3,
            encoding in any::<[u8; 2]>(),
            payload in proptest::collection::vec(any::<u8>(), 0..20),
            tail in proptest::collection::vec(any::<u8>(), 0..3),
        ) {
            let mut body = id.to_le_bytes().to_vec();
            body.push(status);
            body.extend_from_slice(&(payload.len() as i32 + 6 + size_delta).to_le_bytes());
            body.extend_from_slice(&encoding);
            body.extend_from_slice(&payload);
            body.extend_from_slice(&tail);
            let body = Bytes::from(body);
            // The encapsulation ends the message when its size counts the tail as well.
            let usual = status < 2 && size_delta == tail.len() as i32 && payload.len() as i32 + size_delta >= 0;
            prop_assert_eq!(fast(&body).is_some(), usual);
            if let Some(reply) = fast(&body) {
                prop_assert_eq!(Reply::decode_general(body).ok(), Some(reply));
            }
        }

        #[test]
        fn arbitrary_bytes_read_alike_on_both_paths(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let body = Bytes::from(data);
            if let Some(reply) = fast(&body) {
                prop_assert_eq!(Reply::decode_general(body).ok(), Some(reply));
            }
        }
    }
}
