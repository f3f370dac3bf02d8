//! Request and batch-request messages.

use bytes::{Bytes, BytesMut};
use compact_str::CompactString;

use super::header::{patch_size, CompressionStatus, Header, MessageType, HEADER_SIZE};
use super::ProtocolError;
use crate::encoding::{Context, Decode, Decoder, Encode, Encoder, EncodingVersion, Identity, RequestContext};

/// The `mode` byte of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum OperationMode {
    /// An ordinary operation.
    #[default]
    Normal = 0,
    /// `["nonmutating"]` (deprecated); built-in operations are sent with it.
    Nonmutating = 1,
    /// `idempotent`: may be retried.
    Idempotent = 2,
}

impl OperationMode {
    /// Maps the wire byte.
    pub fn from_u8(v: u8) -> Result<Self, ProtocolError> {
        Ok(match v {
            0 => OperationMode::Normal,
            1 => OperationMode::Nonmutating,
            2 => OperationMode::Idempotent,
            v => return Err(ProtocolError::InvalidOperationMode(v)),
        })
    }

    /// True when the operation may safely be sent again.
    pub fn is_idempotent(self) -> bool {
        self != OperationMode::Normal
    }
}

/// A decoded request (or one request of a batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The request id; 0 for oneway and batched requests.
    pub request_id: i32,
    /// Target identity.
    pub identity: Identity,
    /// Target facet ("" for the default facet).
    pub facet: CompactString,
    /// Operation name.
    pub operation: CompactString,
    /// Operation mode.
    pub mode: OperationMode,
    /// Request context.
    pub context: RequestContext,
    /// Encoding of the parameter encapsulation (the reply must use the same).
    pub encoding: EncodingVersion,
    /// The parameter encapsulation's body (after its 6-byte header).
    pub params: Bytes,
}

impl Request {
    /// Decodes the body of a request message (everything after the 14-byte header).
    pub fn decode(body: Bytes) -> Result<Request, ProtocolError> {
        // The usual request, read straight from the bytes: no decoder, and the parameters cut
        // out of the body without touching its reference count.
        if let Some((id, rest)) = body.split_first_chunk::<4>() {
            if let Some(usual) = UsualRequest::parse(rest) {
                if 4 + usual.end == body.len() {
                    let request_id = i32::from_le_bytes(*id);
                    let params_at = 4 + usual.params_at;
                    let mut params = body;
                    bytes::Buf::advance(&mut params, params_at);
                    return Ok(usual.into_request(request_id, params));
                }
            }
        }
        // Anything else (the fast path gives the same request wherever it applies, so it is
        // not tried again here).
        let mut dec = Decoder::new(body, EncodingVersion::V1_0);
        let request_id = dec.read_i32()?;
        let request = Self::decode_general(&mut dec, request_id)?;
        if !dec.is_empty() {
            return Err(ProtocolError::Decode(crate::encoding::DecodeError::Malformed(
                "data after the parameter encapsulation",
            )));
        }
        Ok(request)
    }

    /// Decodes a request field by field (after its id), with a typed error for whatever is
    /// malformed.
    #[inline]
    fn decode_general(dec: &mut Decoder, request_id: i32) -> Result<Request, ProtocolError> {
        let identity = Identity::decode(dec)?;
        let facet = CompactString::new(dec.read_facet_str()?);
        let operation = CompactString::new(dec.read_str()?);
        let mode = OperationMode::from_u8(dec.read_u8()?)?;
        let context = RequestContext::decode(dec)?;
        let (encoding, start, len) = dec.read_encapsulation_bounds()?;
        Ok(Request { request_id, identity, facet, operation, mode, context, encoding, params: dec.view(start, len) })
    }

    /// The usual request — identity and operation ASCII strings shorter than 255 bytes, the
    /// default facet, no context — decoded straight from the bytes, without the general
    /// decoder's per-field checks and errors. `None`, with nothing read, for any other request
    /// (or a malformed one): [`decode_general`](Self::decode_general) then decodes or rejects
    /// it field by field. Both give the same request for the same bytes. With the request
    /// comes the length of its target (identity, facet, operation and mode bytes).
    #[inline(always)]
    fn decode_usual(dec: &mut Decoder, request_id: i32) -> Option<(Request, usize)> {
        let usual = UsualRequest::parse(dec.unread())?;
        let base = dec.position();
        let (target_len, params_at, params_len, end) = (usual.target_len, usual.params_at, usual.params_len, usual.end);
        dec.consume(end);
        let params = dec.view(base + params_at, params_len);
        Some((usual.into_request(request_id, params), target_len))
    }

    /// A decoder over the parameters, set to their encapsulation's encoding.
    pub fn params_decoder(&self) -> Decoder {
        Decoder::new(self.params.clone(), self.encoding)
    }

    /// True for a oneway (or batched) request, which gets no reply.
    pub fn is_oneway(&self) -> bool {
        self.request_id == 0
    }
}

/// The fields of a usual request (see [`Request::decode_usual`]) read from the bytes after its
/// id, and where its parts lie in them.
struct UsualRequest {
    name: CompactString,
    category: CompactString,
    operation: CompactString,
    mode: OperationMode,
    encoding: EncodingVersion,
    /// The length of the target (identity, facet, operation and mode bytes).
    target_len: usize,
    /// Where the parameters' encapsulation body starts, and how long it is.
    params_at: usize,
    params_len: usize,
    /// Where the request ends.
    end: usize,
}

impl UsualRequest {
    /// Reads a usual request from `bytes` (which may go on after it); `None` for any other.
    #[inline(always)]
    fn parse(bytes: &[u8]) -> Option<UsualRequest> {
        let mut at = 0;
        let name = short_ascii(bytes, &mut at)?;
        let category = short_ascii(bytes, &mut at)?;
        // The facet is a sequence of at most one string: empty for the default facet.
        if *bytes.get(at)? != 0 {
            return None;
        }
        at += 1;
        let operation = short_ascii(bytes, &mut at)?;
        let mode = OperationMode::from_u8(*bytes.get(at)?).ok()?;
        let target_len = at + 1;
        let (encoding, params_at, params_len, end) = empty_context_and_params(bytes, target_len)?;
        Some(UsualRequest { name, category, operation, mode, encoding, target_len, params_at, params_len, end })
    }

    /// The request, with `params` the body of its parameters' encapsulation.
    #[inline(always)]
    fn into_request(self, request_id: i32, params: Bytes) -> Request {
        let UsualRequest { name, category, operation, mode, encoding, .. } = self;
        Request {
            request_id,
            identity: Identity { name, category },
            facet: CompactString::default(),
            operation,
            mode,
            context: RequestContext::new(),
            encoding,
            params,
        }
    }
}

/// After a request's target at `at` in `bytes`: an empty context and the parameter
/// encapsulation, as the encapsulation's encoding, where its body starts and how long it is,
/// and where the request ends; `None` for anything else (or anything truncated).
#[inline(always)]
fn empty_context_and_params(bytes: &[u8], at: usize) -> Option<(EncodingVersion, usize, usize, usize)> {
    if *bytes.get(at)? != 0 {
        return None;
    }
    let at = at + 1;
    // The encapsulation: size (counting its 6-byte header), then encoding.
    let head = bytes.get(at..at + 6)?;
    let size = i32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if size < 6 || size as usize > bytes.len() - at {
        return None;
    }
    let encoding = EncodingVersion { major: head[4], minor: head[5] };
    Some((encoding, at + 6, size as usize - 6, at + size as usize))
}

/// Byte-string equality without a call to `memcmp` for the short strings requests are
/// made of (names, categories, facets, operations and whole request targets of up to 16
/// bytes): the empty string at once, 1 to 3 bytes in one pass without branching, 4 to 16
/// bytes with two overlapping word loads from each side.
#[inline(always)]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => {
            let mut diff = 0u8;
            for i in 0..n {
                diff |= a[i] ^ b[i];
            }
            diff == 0
        }
        4..=7 => {
            let word = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"));
            ((word(a, 0) ^ word(b, 0)) | (word(a, n - 4) ^ word(b, n - 4))) == 0
        }
        8..=16 => {
            let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
            ((word(a, 0) ^ word(b, 0)) | (word(a, n - 8) ^ word(b, n - 8))) == 0
        }
        _ => a == b,
    }
}

/// An ASCII string of fewer than 255 bytes (one size byte) at `at` in `bytes`, after which
/// `at` is moved; `None` for anything else.
#[inline(always)]
fn short_ascii(bytes: &[u8], at: &mut usize) -> Option<CompactString> {
    let n = *bytes.get(*at)? as usize;
    if n == 255 {
        return None;
    }
    let text = bytes.get(*at + 1..*at + 1 + n)?;
    if !text.is_ascii() {
        return None;
    }
    *at += 1 + n;
    // SAFETY: ASCII is valid UTF-8.
    Some(CompactString::new(unsafe { std::str::from_utf8_unchecked(text) }))
}

/// The requests of a batch, decoded one at a time (a batch of a megabyte holds tens of
/// thousands of requests; materialising them all at once would multiply its size).
pub struct BatchRequests {
    dec: Decoder,
    left: i32,
    /// The target of the last request decoded by the usual path, to decode the next ones
    /// that repeat it byte for byte without decoding its strings again.
    last: Option<LastTarget>,
    /// True when the request last returned has the same target as the one before it.
    repeated: bool,
}

/// A request target (identity, facet, operation, mode) as it was decoded, and where its
/// bytes are in the batch body.
struct LastTarget {
    at: usize,
    len: usize,
    identity: Identity,
    operation: CompactString,
    mode: OperationMode,
}

impl BatchRequests {
    /// Reads the count of a batch body and checks it against the bytes that follow.
    pub fn new(body: Bytes) -> Result<Self, ProtocolError> {
        let mut dec = Decoder::new(body, EncodingVersion::V1_0);
        let count = dec.read_i32()?;
        // Every request takes at least 12 bytes (identity 2, facet 1, operation 1, mode 1,
        // context 1, encapsulation 6).
        if count < 0 || count as usize > dec.remaining() / 12 {
            return Err(ProtocolError::InvalidBatchCount(count));
        }
        Ok(BatchRequests { dec, left: count, last: None, repeated: false })
    }

    /// True when the request last returned went to the same identity and facet, with the
    /// same operation and mode, as the request before it (as their bytes say; false when
    /// that was not checked).
    #[inline]
    pub fn repeats_target(&self) -> bool {
        self.repeated
    }

    /// The next request when its target repeats the last usual request's byte for byte and
    /// it has no context: the target's strings are cloned instead of decoded. `None`, with
    /// nothing read, otherwise.
    #[inline(always)]
    fn decode_repeat(&mut self) -> Option<Request> {
        let last = self.last.as_ref()?;
        let pos = self.dec.position();
        // The body up to where the decoder may read (`position` counts from its start).
        let body = &self.dec.buffer()[..pos + self.dec.remaining()];
        let target = body.get(pos..pos + last.len)?;
        if !same_bytes(target, &body[last.at..last.at + last.len]) {
            return None;
        }
        let (encoding, params_at, params_len, end) = empty_context_and_params(&body[pos..], last.len)?;
        let request = Request {
            request_id: 0,
            identity: last.identity.clone(),
            facet: CompactString::default(),
            operation: last.operation.clone(),
            mode: last.mode,
            context: RequestContext::new(),
            encoding,
            params: self.dec.view(pos + params_at, params_len),
        };
        self.dec.consume(end);
        Some(request)
    }

    /// The next request, decoded in full.
    #[inline]
    fn decode_next(&mut self) -> Result<Request, ProtocolError> {
        let at = self.dec.position();
        if let Some((request, len)) = Request::decode_usual(&mut self.dec, 0) {
            let (identity, operation, mode) = (request.identity.clone(), request.operation.clone(), request.mode);
            self.last = Some(LastTarget { at, len, identity, operation, mode });
            return Ok(request);
        }
        self.last = None;
        Request::decode_general(&mut self.dec, 0)
    }
}

impl Iterator for BatchRequests {
    type Item = Result<Request, ProtocolError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            if !self.dec.is_empty() {
                self.dec.skip(self.dec.remaining()).ok();
                return Some(Err(ProtocolError::Decode(crate::encoding::DecodeError::Malformed(
                    "data after the last request of a batch",
                ))));
            }
            return None;
        }
        self.left -= 1;
        if let Some(request) = self.decode_repeat() {
            self.repeated = true;
            return Some(Ok(request));
        }
        self.repeated = false;
        let r = self.decode_next();
        if r.is_err() {
            self.left = 0;
            self.dec.skip(self.dec.remaining()).ok();
        }
        Some(r)
    }
}

/// Decodes the body of a batch request into its requests.
pub fn decode_batch(body: Bytes) -> Result<Vec<Request>, ProtocolError> {
    BatchRequests::new(body)?.collect()
}

/// The invariant part of a request — identity, facet, operation and mode — encoded once per
/// proxy and operation, so that an invocation only copies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPrefix {
    bytes: Bytes,
    mode: OperationMode,
}

impl RequestPrefix {
    /// Encodes the prefix.
    pub fn new(identity: &Identity, facet: &str, operation: &str, mode: OperationMode) -> Self {
        let mut enc = Encoder::with_capacity(
            identity.name.len() + identity.category.len() + facet.len() + operation.len() + 8,
            EncodingVersion::V1_0,
        );
        identity.encode(&mut enc);
        enc.write_facet(facet);
        enc.write_str(operation);
        enc.write_u8(mode as u8);
        RequestPrefix { bytes: enc.into_bytes(), mode }
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The operation mode it was built with.
    pub fn mode(&self) -> OperationMode {
        self.mode
    }
}

/// Offset of the request id in a request message.
pub const REQUEST_ID_OFFSET: usize = HEADER_SIZE;

/// Starts a request message in `enc`: header, request id, prefix, context, and an open
/// parameter encapsulation of `encoding`. Write the parameters, then call
/// [`finish_request`] with the returned start offset.
#[inline]
pub fn start_request(
    enc: &mut Encoder,
    request_id: i32,
    prefix: &RequestPrefix,
    context: &Context,
    encoding: EncodingVersion,
) -> usize {
    let start = enc.len();
    enc.write_raw(&Header::bytes(MessageType::Request, CompressionStatus::NotCompressed, 0));
    enc.write_i32(request_id);
    enc.write_raw(prefix.as_bytes());
    if context.is_empty() {
        enc.write_u8(0);
    } else {
        context.encode(enc);
    }
    enc.start_encapsulation(encoding);
    start
}

/// Closes the parameter encapsulation and patches the message size.
#[inline]
pub fn finish_request(enc: &mut Encoder, start: usize) {
    enc.end_encapsulation();
    let size = enc.len() - start;
    patch_size(&mut enc.as_mut_slice()[start..], size);
}

/// Overwrites the request id of an encoded request message.
#[inline]
pub fn set_request_id(message: &mut [u8], request_id: i32) {
    message[REQUEST_ID_OFFSET..REQUEST_ID_OFFSET + 4].copy_from_slice(&request_id.to_le_bytes());
}

/// Encodes a complete request message in one call.
pub fn encode_request(
    request_id: i32,
    prefix: &RequestPrefix,
    context: &Context,
    encoding: EncodingVersion,
    params: impl FnOnce(&mut Encoder),
) -> BytesMut {
    let mut enc = Encoder::with_capacity(64, EncodingVersion::V1_0);
    let start = start_request(&mut enc, request_id, prefix, context, encoding);
    params(&mut enc);
    finish_request(&mut enc, start);
    enc.into_buffer()
}

/// Accumulates batched requests in one buffer; the header and count are patched when the
/// batch is taken, so adding a request costs a copy of the prefix plus its parameters.
#[derive(Debug)]
pub struct BatchBuilder {
    enc: Encoder,
    count: i32,
    /// Where the request being written starts, between `start_request*` and `finish_request`.
    pending: Option<usize>,
    /// Where the last complete request starts.
    last_start: usize,
}

/// Offset of the request count in a batch-request message.
const BATCH_COUNT_OFFSET: usize = HEADER_SIZE;

impl Default for BatchBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BatchBuilder {
    /// An empty batch.
    pub fn new() -> Self {
        let mut b = BatchBuilder { enc: Encoder::new(EncodingVersion::V1_0), count: 0, pending: None, last_start: 0 };
        b.reset();
        b
    }

    fn reset(&mut self) {
        self.enc.write_raw(&Header::bytes(MessageType::BatchRequest, CompressionStatus::NotCompressed, 0));
        self.enc.write_i32(0);
        self.count = 0;
        self.last_start = self.enc.len();
    }

    /// Number of requests queued.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// True when no request is queued.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size in bytes of the batch message if it were taken now.
    pub fn len(&self) -> usize {
        self.enc.len()
    }

    /// Starts a request: writes the prefix and context and opens the parameter encapsulation.
    /// Write the parameters into the returned encoder, then call [`BatchBuilder::finish_request`].
    #[inline]
    pub fn start_request(
        &mut self,
        prefix: &RequestPrefix,
        context: &Context,
        encoding: EncodingVersion,
    ) -> &mut Encoder {
        self.pending = Some(self.enc.len());
        self.enc.write_raw(prefix.as_bytes());
        if context.is_empty() {
            self.enc.write_u8(0);
        } else {
            context.encode(&mut self.enc);
        }
        self.enc.start_encapsulation(encoding);
        &mut self.enc
    }

    /// Starts a request whose head (target, operation, mode, context) the caller writes
    /// itself into the returned encoder, followed by the opened parameter encapsulation.
    /// Complete it with [`BatchBuilder::finish_request`].
    #[inline]
    pub fn start_request_raw(&mut self) -> &mut Encoder {
        self.pending = Some(self.enc.len());
        &mut self.enc
    }

    /// Completes the request started last.
    #[inline]
    pub fn finish_request(&mut self) {
        self.enc.end_encapsulation();
        if let Some(start) = self.pending.take() {
            self.last_start = start;
        }
        self.count += 1;
    }

    /// Appends one complete request (head, context and parameter encapsulation) already
    /// encoded.
    #[inline]
    pub fn push_request_bytes(&mut self, request: &[u8]) {
        self.last_start = self.enc.len();
        self.enc.write_raw(request);
        self.count += 1;
    }

    /// Moves every request of `other` to the end of this batch, leaving `other` empty.
    pub fn append(&mut self, other: &mut BatchBuilder) {
        if other.count == 0 {
            return;
        }
        let start = self.enc.len();
        self.enc.write_raw(&other.enc.as_slice()[BATCH_COUNT_OFFSET + 4..]);
        self.last_start = start + (other.last_start - (BATCH_COUNT_OFFSET + 4));
        self.count += other.count;
        other.enc = Encoder::new(EncodingVersion::V1_0);
        other.pending = None;
        other.reset();
    }

    /// Drops a request that was started but not finished (for instance because encoding its
    /// parameters failed).
    pub fn abort_request(&mut self) {
        if let Some(start) = self.pending.take() {
            let mut buf = std::mem::take(&mut self.enc).into_buffer();
            buf.truncate(start);
            self.enc = Encoder::with_buffer(buf, EncodingVersion::V1_0);
        }
    }

    /// Appends a request whose parameter encapsulation is already encoded.
    pub fn push_encoded(
        &mut self,
        prefix: &RequestPrefix,
        context: &Context,
        encoding: EncodingVersion,
        params: &[u8],
    ) {
        self.last_start = self.enc.len();
        self.enc.write_raw(prefix.as_bytes());
        context.encode(&mut self.enc);
        self.enc.write_encapsulation(encoding, params);
        self.count += 1;
    }

    /// Takes the batch message (patched header and count) and leaves the builder empty.
    /// Returns `None` when no request is queued.
    pub fn take(&mut self) -> Option<BytesMut> {
        if self.count == 0 {
            return None;
        }
        let count = self.count;
        let mut buf = std::mem::take(&mut self.enc).into_buffer();
        let size = buf.len();
        patch_size(&mut buf, size);
        buf[BATCH_COUNT_OFFSET..BATCH_COUNT_OFFSET + 4].copy_from_slice(&count.to_le_bytes());
        // Reuse the allocation when it is small; a large batch hands its buffer to the writer.
        self.enc = Encoder::with_capacity(size.min(64 * 1024), EncodingVersion::V1_0);
        self.reset();
        Some(buf)
    }

    /// Takes a full batch: once the queued requests reach `limit` bytes (header included),
    /// returns the message of every request but the last one, which stays queued as the first
    /// request of the next batch. Messages taken this way therefore stay under `limit` — what
    /// a peer's `Ice.MessageSizeMax` accepts when `limit` is `Ice.BatchAutoFlushSize` — unless
    /// one request alone reaches it, and then that request is taken on its own. Returns `None`
    /// while the batch is under `limit` or a request is being written.
    pub fn take_full(&mut self, limit: usize) -> Option<BytesMut> {
        if self.enc.len() < limit || self.pending.is_some() || self.count == 0 {
            return None;
        }
        if self.count == 1 {
            return self.take();
        }
        let count = self.count - 1;
        let last = self.last_start;
        let mut buf = std::mem::take(&mut self.enc).into_buffer();
        // The next batch is likely to fill up as this one did: room for it at once, in a
        // buffer a written message gave back when there is one.
        self.enc = Encoder::with_buffer(crate::encoding::pool::take(buf.len()), EncodingVersion::V1_0);
        self.reset();
        self.enc.write_raw(&buf[last..]);
        self.count = 1;
        buf.truncate(last);
        patch_size(&mut buf, last);
        buf[BATCH_COUNT_OFFSET..BATCH_COUNT_OFFSET + 4].copy_from_slice(&count.to_le_bytes());
        Some(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A string as Ice writes it, its size in one byte or, from 255 bytes on, in five.
    fn put_str(out: &mut Vec<u8>, s: &[u8]) {
        if s.len() < 255 {
            out.push(s.len() as u8);
        } else {
            out.push(255);
            out.extend_from_slice(&(s.len() as i32).to_le_bytes());
        }
        out.extend_from_slice(s);
    }

    /// Strings of every kind the fast path must tell apart: empty, short ASCII, non-ASCII
    /// (valid and invalid UTF-8) and 255 bytes or more.
    fn any_text() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(b'a'..=b'z', 0..12),
            1 => proptest::collection::vec(any::<u8>(), 0..6),
            1 => Just("é".as_bytes().to_vec()),
            1 => (255usize..300).prop_map(|n| vec![b'x'; n]),
        ]
    }

    prop_compose! {
        /// The body of a request after its id: mostly usual requests, with every field
        /// sometimes unusual or wrong, and sometimes cut short or followed by more bytes.
        fn request_body()(
            name in any_text(),
            category in any_text(),
            facets in proptest::collection::vec(any_text(), 0..3),
            operation in any_text(),
            mode in prop_oneof![4 => 0u8..3, 1 => any::<u8>()],
            context in proptest::collection::vec((any_text(), any_text()), 0..2),
            size_delta in prop_oneof![6 => Just(0i32), 1 => -10i32..10, 1 => Just(i32::MIN)],
            encoding in any::<[u8; 2]>(),
            params in proptest::collection::vec(any::<u8>(), 0..8),
            extra in proptest::collection::vec(any::<u8>(), 0..3),
            cut in prop_oneof![4 => Just(None), 1 => (0usize..64).prop_map(Some)],
        ) -> Vec<u8> {
            let mut out = Vec::new();
            put_str(&mut out, &name);
            put_str(&mut out, &category);
            out.push(facets.len() as u8);
            for f in &facets {
                put_str(&mut out, f);
            }
            put_str(&mut out, &operation);
            out.push(mode);
            out.push(context.len() as u8);
            for (k, v) in &context {
                put_str(&mut out, k);
                put_str(&mut out, v);
            }
            let size = (6 + params.len() as i32).wrapping_add(size_delta);
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&encoding);
            out.extend_from_slice(&params);
            out.extend_from_slice(&extra);
            if let Some(cut) = cut {
                out.truncate(cut.min(out.len()));
            }
            out
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The fast path either gives exactly what the general decoder gives, having read as
        /// much, or leaves the request to it without reading anything.
        #[test]
        fn the_fast_path_agrees_with_the_general_decoder(body in request_body()) {
            let body = Bytes::from(body);
            let mut general = Decoder::new(body.clone(), EncodingVersion::V1_0);
            let expected = Request::decode_general(&mut general, 7);
            let mut usual = Decoder::new(body, EncodingVersion::V1_0);
            match Request::decode_usual(&mut usual, 7) {
                Some((request, _)) => {
                    prop_assert_eq!(Ok(request), expected);
                    prop_assert_eq!(usual.position(), general.position());
                }
                None => prop_assert_eq!(usual.position(), 0),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// A whole request body decodes as the general decoder alone decodes it, whichever path
        /// reads it.
        #[test]
        fn a_request_decodes_as_the_general_decoder_reads_it(id in any::<i32>(), body in request_body()) {
            let mut whole = id.to_le_bytes().to_vec();
            whole.extend_from_slice(&body);
            let whole = Bytes::from(whole);
            let mut general = Decoder::new(whole.clone(), EncodingVersion::V1_0);
            let id = general.read_i32().expect("an id");
            let expected = Request::decode_general(&mut general, id).and_then(|r| {
                if general.is_empty() {
                    Ok(r)
                } else {
                    Err(ProtocolError::Decode(crate::encoding::DecodeError::Malformed(
                        "data after the parameter encapsulation",
                    )))
                }
            });
            prop_assert_eq!(Request::decode(whole), expected);
        }
    }

    /// A usual request's bytes after its id: identity `name` (no category), no facet,
    /// `operation`, `mode`, no context, and `params` in an encapsulation of encoding 1.1.
    fn usual_body(name: &[u8], operation: &[u8], mode: u8, params: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        put_str(&mut body, name);
        put_str(&mut body, b"");
        body.push(0);
        put_str(&mut body, operation);
        body.extend_from_slice(&[mode, 0]);
        body.extend_from_slice(&(params.len() as i32 + 6).to_le_bytes());
        body.extend_from_slice(&[1, 1]);
        body.extend_from_slice(params);
        body
    }

    #[test]
    fn a_usual_request_keeps_its_parameters_in_the_received_body() {
        let mut whole = 9i32.to_le_bytes().to_vec();
        whole.extend_from_slice(&usual_body(b"obj", b"op", 0, &[7, 8, 9]));
        let whole = Bytes::from(whole);
        let request = Request::decode(whole.clone()).unwrap();
        assert_eq!((request.request_id, request.identity.name.as_str(), request.operation.as_str()), (9, "obj", "op"));
        assert_eq!(&request.params[..], &[7, 8, 9]);
        assert_eq!(request.params.as_ptr(), whole[whole.len() - 3..].as_ptr(), "no copy of the parameters");
    }

    /// What a batch body decodes to, request by request with the general decoder only: the
    /// requests up to the first error, which ends it, then an error for bytes left over.
    fn decode_batch_generally(body: &Bytes) -> Vec<Result<Request, ProtocolError>> {
        let mut dec = Decoder::new(body.clone(), EncodingVersion::V1_0);
        let count = dec.read_i32().expect("a count");
        let mut out = Vec::new();
        for _ in 0..count {
            let r = Request::decode_general(&mut dec, 0);
            let failed = r.is_err();
            out.push(r);
            if failed {
                return out;
            }
        }
        if !dec.is_empty() {
            out.push(Err(ProtocolError::Decode(crate::encoding::DecodeError::Malformed(
                "data after the last request of a batch",
            ))));
        }
        out
    }

    /// A batch body of the requests `bodies[picks[i] % bodies.len()]`.
    fn batch_body(bodies: &[Vec<u8>], picks: &[usize]) -> Bytes {
        let mut out = (picks.len() as i32).to_le_bytes().to_vec();
        for &p in picks {
            out.extend_from_slice(&bodies[p % bodies.len()]);
        }
        Bytes::from(out)
    }

    /// The repeat flags of a batch's requests, with the requests themselves.
    fn decode_batch_with_flags(body: Bytes) -> Vec<(Result<Request, ProtocolError>, bool)> {
        let mut requests = BatchRequests::new(body).expect("a valid count");
        let mut out = Vec::new();
        while let Some(r) = requests.next() {
            out.push((r, requests.repeats_target()));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// A batch whose requests repeat a few targets (usual or not, well formed or not)
        /// decodes, repeats cloned or not, exactly as its requests decode one by one with the
        /// general decoder; a request flagged as repeating has its predecessor's target.
        #[test]
        fn batches_with_repeated_targets_decode_as_their_requests_do(
            bodies in proptest::collection::vec(request_body(), 1..4),
            picks in proptest::collection::vec(0usize..4, 1..12),
        ) {
            let body = batch_body(&bodies, &picks);
            let expected = decode_batch_generally(&body);
            if BatchRequests::new(body.clone()).is_err() {
                // Refused for a count that cannot fit: every request takes 12 bytes or more.
                prop_assert!(picks.len() > (body.len() - 4) / 12);
                return Ok(());
            }
            let got = decode_batch_with_flags(body);
            let requests: Vec<_> = got.iter().map(|(r, _)| r.clone()).collect();
            prop_assert_eq!(&requests, &expected);
            for pair in got.windows(2) {
                if let ((Ok(before), _), (Ok(after), true)) = (&pair[0], &pair[1]) {
                    prop_assert_eq!(
                        (&before.identity, &before.facet, &before.operation, before.mode),
                        (&after.identity, &after.facet, &after.operation, after.mode)
                    );
                }
            }
        }
    }

    /// A request for identity `name`, operation `op` in `mode`, with `context` and `params`.
    fn usual_request(name: &[u8], op: &[u8], mode: u8, context: &[(&[u8], &[u8])], params: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        put_str(&mut body, name);
        put_str(&mut body, b"");
        body.push(0);
        put_str(&mut body, op);
        body.push(mode);
        body.push(context.len() as u8);
        for (k, v) in context {
            put_str(&mut body, k);
            put_str(&mut body, v);
        }
        body.extend_from_slice(&(6 + params.len() as i32).to_le_bytes());
        body.extend_from_slice(&[1, 1]);
        body.extend_from_slice(params);
        body
    }

    #[test]
    fn repeated_targets_in_a_batch_are_flagged_and_keep_their_own_parameters() {
        let a1 = usual_request(b"perf", b"incr", 0, &[], &[1]);
        let a2 = usual_request(b"perf", b"incr", 0, &[], &[2, 2]);
        let a_ctx = usual_request(b"perf", b"incr", 0, &[(b"k", b"v")], &[]);
        let b = usual_request(b"perg", b"incr", 0, &[], &[]);
        let other_op = usual_request(b"perf", b"incs", 0, &[], &[]);
        let other_mode = usual_request(b"perf", b"incr", 2, &[], &[]);
        let bodies = [a1, a2, a_ctx, b, other_op, other_mode];
        let got = decode_batch_with_flags(batch_body(&bodies, &[0, 1, 1, 2, 0, 0, 3, 3, 0, 4, 0, 5, 0]));
        let flags: Vec<bool> = got.iter().map(|(_, f)| *f).collect();
        assert_eq!(flags, [false, true, true, false, false, true, false, true, false, false, false, false, false]);
        let requests: Vec<Request> = got.into_iter().map(|(r, _)| r.expect("a request")).collect();
        let params: Vec<&[u8]> = requests.iter().map(|r| &r.params[..]).collect();
        assert_eq!(params, [&[1u8][..], &[2, 2], &[2, 2], &[], &[1], &[1], &[], &[], &[1], &[], &[1], &[], &[1]]);
        assert_eq!(requests[3].context.get("k").map(String::as_str), Some("v"));
        assert!(requests[5].context.is_empty());
        assert_eq!(requests[6].identity, Identity::new("perg"));
        assert_eq!(requests[8].identity, Identity::new("perf"));
        assert_eq!(requests[9].operation, "incs");
        assert_eq!(requests[10].operation, "incr");
        assert_eq!(requests[11].mode, OperationMode::Idempotent);
        assert_eq!(requests[12].mode, OperationMode::Normal);
    }

    #[test]
    fn a_repeated_target_with_a_truncated_encapsulation_ends_the_batch_with_an_error() {
        let a = usual_request(b"perf", b"incr", 0, &[], &[1, 2, 3]);
        let mut body = batch_body(&[a], &[0, 0]).to_vec();
        body.truncate(body.len() - 2);
        let got = decode_batch_with_flags(Bytes::from(body));
        assert_eq!(got.len(), 2);
        assert!(got[0].0.is_ok());
        assert!(matches!(got[1].0, Err(ProtocolError::Decode(_))), "{:?}", got[1].0);
    }

    #[test]
    fn same_bytes_sees_a_difference_at_any_place_of_any_length() {
        for n in 0..40 {
            let a: Vec<u8> = (0..n as u8).collect();
            assert!(same_bytes(&a, &a.clone()));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x40;
                assert!(!same_bytes(&a, &b), "length {n}, byte {i}");
            }
            if n > 0 {
                assert!(!same_bytes(&a, &a[..n - 1]), "lengths {n} and {}", n - 1);
            }
        }
    }

    #[test]
    fn a_usual_request_takes_the_fast_path() {
        let body = usual_body(b"a", b"incr", 2, &[5, 6, 7]);
        let mut dec = Decoder::new(Bytes::from(body), EncodingVersion::V1_0);
        let (request, target_len) = Request::decode_usual(&mut dec, 0).expect("a usual request");
        assert_eq!(target_len, 10);
        assert_eq!(request.identity, Identity::new("a"));
        assert_eq!((request.operation.as_str(), request.mode), ("incr", OperationMode::Idempotent));
        assert_eq!((request.encoding, &request.params[..]), (EncodingVersion::V1_1, &[5u8, 6, 7][..]));
        assert!(dec.is_empty());
    }
}
