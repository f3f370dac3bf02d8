//! Proxies: [`ObjectPrx`], the untyped proxy every generated proxy wraps, with the `ice_*`
//! factory methods, the built-in operations and the invocation paths (twoway, oneway,
//! batched oneway, batched twoway).

mod batch;
mod locate;
/// What a proxy points at, and the proxy-string syntax (defined below the proxies, which the
/// communicator's instance also uses).
pub use crate::reference;

pub use batch::BatchWriter;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::connection::{Compress, Connection};
use crate::encoding::{
    Context, Decode, Decoder, Encode, Encoder, EncodingVersion, Identity, InvocationMode, ProxyData, WireLayout,
};
use crate::error::{CallError, Error, Result};
use crate::instance::Instance;
use crate::protocol::header::{patch_size, CompressionStatus, Header, MessageType};
use crate::protocol::{BatchBuilder, OperationMode, ReplyBody, SEPARATE_TAIL_MIN};
use crate::reference::Reference;

struct ProxyInner {
    instance: Instance,
    reference: Reference,
    /// Identity and facet, encoded once: every request copies them.
    target: Bytes,
    connection: Mutex<Option<Connection>>,
    fixed: Option<Connection>,
    batch: Arc<Mutex<BatchQueue>>,
}

/// Batched requests waiting for a flush, and the encoded heads (target, operation, mode) of
/// the operations batched so far, so that queuing a request copies one slice.
#[derive(Default)]
struct BatchQueue {
    builder: BatchBuilder,
    heads: Vec<(String, OperationMode, Vec<u8>)>,
    /// Complete batch messages, with their request counts, queued ahead of `builder`'s
    /// requests (left by dropped [`BatchWriter`]s).
    full: VecDeque<(BytesMut, usize)>,
}

impl BatchQueue {
    /// Every queued message, in queuing order, leaving the queue empty.
    fn take_all(&mut self) -> Vec<BytesMut> {
        let mut all: Vec<BytesMut> = self.full.drain(..).map(|(m, _)| m).collect();
        all.extend(self.builder.take());
        all
    }

    /// Number of queued requests.
    fn count(&self) -> usize {
        self.builder.count() + self.full.iter().map(|(_, n)| n).sum::<usize>()
    }

    fn head(&mut self, target: &[u8], operation: &str, mode: OperationMode) -> usize {
        if let Some(i) = self.heads.iter().position(|(op, m, _)| *m == mode && op == operation) {
            return i;
        }
        let mut e = Encoder::with_capacity(target.len() + operation.len() + 6, EncodingVersion::V1_0);
        e.write_raw(target);
        e.write_str(operation);
        e.write_u8(mode as u8);
        if self.heads.len() >= 16 {
            self.heads.remove(0);
        }
        self.heads.push((operation.to_string(), mode, e.into_buffer().to_vec()));
        self.heads.len() - 1
    }
}

/// An untyped proxy to an Ice object. Cheap to clone.
#[derive(Clone)]
pub struct ObjectPrx {
    inner: Arc<ProxyInner>,
}

impl std::fmt::Debug for ObjectPrx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObjectPrx({})", self.inner.reference)
    }
}

impl std::fmt::Display for ObjectPrx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.reference.fmt(f)
    }
}

impl PartialEq for ObjectPrx {
    fn eq(&self, other: &Self) -> bool {
        self.inner.reference == other.inner.reference
    }
}

/// The results of a successful twoway invocation, or the user exception it raised, as an
/// encapsulation ready to decode.
#[derive(Debug)]
pub enum Outcome {
    /// Reply status 0: the results.
    Ok(Decoder),
    /// Reply status 1: a user exception.
    UserException(Decoder),
}

impl Outcome {
    /// Decodes the results; a user exception (which the operation does not declare) becomes
    /// [`Error::UnknownUserException`].
    pub fn decode<R>(self, read: impl FnOnce(&mut Decoder) -> crate::encoding::Result<R>) -> Result<R> {
        match self {
            Outcome::Ok(mut d) => {
                let r = read(&mut d)?;
                finish_encapsulation(&mut d)?;
                Ok(r)
            }
            Outcome::UserException(mut d) => Err(Error::UnknownUserException(peek_exception_id(&mut d))),
        }
    }

    /// Decodes the results or one of the declared user exceptions, read by `read_exception`
    /// given the most-derived slice's type id (it returns `None` for a type it does not know,
    /// and the next slice is tried when the format allows skipping).
    pub fn decode_or_user<R, E>(
        self,
        read: impl FnOnce(&mut Decoder) -> crate::encoding::Result<R>,
        mut read_exception: impl FnMut(&str, &mut Decoder) -> Option<crate::encoding::Result<E>>,
    ) -> std::result::Result<R, CallError<E>> {
        match self {
            Outcome::Ok(mut d) => {
                let r = read(&mut d).map_err(Error::from)?;
                finish_encapsulation(&mut d)?;
                Ok(r)
            }
            Outcome::UserException(mut d) => {
                d.start_exception().map_err(Error::from)?;
                let mut most_derived: Option<String> = None;
                loop {
                    let header = d.start_exception_slice().map_err(Error::from)?;
                    most_derived.get_or_insert_with(|| header.type_id.clone());
                    if let Some(e) = read_exception(&header.type_id, &mut d) {
                        return Err(CallError::User(e.map_err(Error::from)?));
                    }
                    if header.is_last || d.skip_exception_slice(&header).is_err() {
                        return Err(CallError::Local(Error::UnknownUserException(most_derived.unwrap_or_default())));
                    }
                }
            }
        }
    }
}

fn peek_exception_id(d: &mut Decoder) -> String {
    if d.start_exception().is_err() {
        return String::new();
    }
    d.start_exception_slice().map(|h| h.type_id).unwrap_or_default()
}

fn finish_encapsulation(d: &mut Decoder) -> Result<()> {
    if !d.encoding().is_1_0() {
        d.skip_remaining_optionals()?;
    }
    if !d.is_empty() {
        return Err(Error::Marshal(crate::encoding::DecodeError::EncapsulationNotConsumed { extra: d.remaining() }));
    }
    Ok(())
}

fn outcome_of(reply: ReplyBody, instance: &Instance) -> Result<Outcome> {
    let decoder = |payload, encoding| instance.decoder(payload, encoding);
    match reply {
        ReplyBody::Ok { encoding, payload } => Ok(Outcome::Ok(decoder(payload, encoding))),
        ReplyBody::UserException { encoding, payload } => Ok(Outcome::UserException(decoder(payload, encoding))),
        ReplyBody::ObjectNotExist(f) => {
            Err(Error::ObjectNotExist { identity: f.identity, facet: f.facet, operation: f.operation })
        }
        ReplyBody::FacetNotExist(f) => {
            Err(Error::FacetNotExist { identity: f.identity, facet: f.facet, operation: f.operation })
        }
        ReplyBody::OperationNotExist(f) => {
            Err(Error::OperationNotExist { identity: f.identity, facet: f.facet, operation: f.operation })
        }
        ReplyBody::UnknownLocalException(s) => Err(Error::UnknownLocalException(s)),
        ReplyBody::UnknownUserException(s) => Err(Error::UnknownUserException(s)),
        ReplyBody::UnknownException(s) => Err(Error::UnknownException(s)),
    }
}

fn encode_target(r: &Reference) -> Bytes {
    let mut e = Encoder::with_capacity(
        r.wire.identity.name.len() + r.wire.identity.category.len() + r.wire.facet.len() + 4,
        EncodingVersion::V1_0,
    );
    r.wire.identity.encode(&mut e);
    e.write_facet(&r.wire.facet);
    e.into_bytes()
}

/// Writes the part of a request after the request id: target, operation, mode, context.
#[inline]
fn write_request_head(e: &mut Encoder, target: &[u8], operation: &str, mode: OperationMode, context: &Context) {
    e.write_raw(target);
    e.write_str(operation);
    e.write_u8(mode as u8);
    if context.is_empty() {
        e.write_u8(0);
    } else {
        context.encode(e);
    }
}

impl ObjectPrx {
    /// A proxy for a reference, made by `instance`.
    pub(crate) fn new(instance: Instance, reference: Reference) -> Self {
        Self::build(instance, reference, None, Arc::new(Mutex::new(BatchQueue::default())))
    }

    fn build(
        instance: Instance,
        reference: Reference,
        fixed: Option<Connection>,
        batch: Arc<Mutex<BatchQueue>>,
    ) -> Self {
        let target = encode_target(&reference);
        ObjectPrx {
            inner: Arc::new(ProxyInner { instance, reference, target, connection: Mutex::new(None), fixed, batch }),
        }
    }

    /// Writes a proxy (or the null proxy).
    pub fn encode_nullable(proxy: Option<&ObjectPrx>, enc: &mut Encoder) {
        match proxy {
            Some(p) => p.inner.reference.wire.encode(enc),
            None => ProxyData::encode_nullable(None, enc),
        }
    }

    fn derive(&self, f: impl FnOnce(&mut Reference)) -> Self {
        let mut r = self.inner.reference.clone();
        f(&mut r);
        // Batch queues follow the proxy only while the mode stays a batch mode.
        Self::build(
            self.inner.instance.clone(),
            r,
            self.inner.fixed.clone(),
            Arc::new(Mutex::new(BatchQueue::default())),
        )
    }

    /// Reads a proxy (or the null proxy) made by `instance` from a decoder.
    pub(crate) fn decode_for(instance: &Instance, dec: &mut Decoder) -> crate::encoding::Result<Option<Self>> {
        let defaults = instance.parse_defaults();
        Ok(ProxyData::decode_nullable(dec)?
            .map(|d| ObjectPrx::new(instance.clone(), Reference::from_wire(d, defaults))))
    }

    /// The instance that made the proxy.
    pub(crate) fn instance(&self) -> &Instance {
        &self.inner.instance
    }

    /// Everything the proxy knows about its target.
    pub fn reference(&self) -> &Reference {
        &self.inner.reference
    }

    /// Target identity.
    pub fn ice_get_identity(&self) -> &Identity {
        &self.inner.reference.wire.identity
    }

    /// Target facet.
    pub fn ice_get_facet(&self) -> &str {
        &self.inner.reference.wire.facet
    }

    /// Encoding used for parameters.
    pub fn ice_get_encoding_version(&self) -> EncodingVersion {
        self.inner.reference.wire.encoding
    }

    /// The invocation mode.
    pub fn mode(&self) -> InvocationMode {
        self.inner.reference.wire.mode
    }

    /// A twoway copy.
    pub fn ice_twoway(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::Twoway)
    }

    /// A oneway copy.
    pub fn ice_oneway(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::Oneway)
    }

    /// A batch-oneway copy (requests queue until [`ObjectPrx::ice_flush_batch_requests`]).
    pub fn ice_batch_oneway(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::BatchOneway)
    }

    /// A datagram copy: requests go as UDP datagrams to the proxy's `udp` endpoints, and
    /// nothing is answered.
    pub fn ice_datagram(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::Datagram)
    }

    /// A batch-datagram copy: requests queue until [`ObjectPrx::ice_flush_batch_requests`]
    /// sends them together in one datagram.
    pub fn ice_batch_datagram(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::BatchDatagram)
    }

    /// True for a datagram or batch-datagram proxy.
    pub fn ice_is_datagram(&self) -> bool {
        matches!(self.inner.reference.wire.mode, InvocationMode::Datagram | InvocationMode::BatchDatagram)
    }

    /// A copy that resolves through `locator` when it is indirect (`None`: no locator).
    pub fn ice_locator(&self, locator: Option<&ObjectPrx>) -> Self {
        let locator = locator.map(|l| Box::new(l.reference().clone()));
        self.derive(|r| r.locator = locator)
    }

    /// The locator that resolves this proxy, if any.
    pub fn ice_get_locator(&self) -> Option<ObjectPrx> {
        let r = self.inner.reference.locator.as_deref()?;
        Some(ObjectPrx::new(self.inner.instance.clone(), r.clone()))
    }

    /// A copy whose invocations all go through `router` (`None`: directly).
    pub fn ice_router(&self, router: Option<&ObjectPrx>) -> Self {
        let router = router.map(|l| Box::new(l.reference().clone()));
        self.derive(|r| r.router = router)
    }

    /// The router this proxy's invocations go through, if any.
    pub fn ice_get_router(&self) -> Option<ObjectPrx> {
        let r = self.inner.reference.router.as_deref()?;
        Some(ObjectPrx::new(self.inner.instance.clone(), r.clone()))
    }

    /// A copy whose locator answers stay cached `seconds` (−1: forever, 0: never cached).
    pub fn ice_locator_cache_timeout(&self, seconds: i32) -> Self {
        self.derive(|r| r.locator_cache_timeout = seconds.max(-1))
    }

    /// How long this proxy's locator answers stay cached, in seconds (−1: forever).
    pub fn ice_get_locator_cache_timeout(&self) -> i32 {
        self.inner.reference.locator_cache_timeout
    }

    /// A copy that tries its endpoints in this order.
    pub fn ice_endpoint_selection(&self, selection: crate::reference::EndpointSelection) -> Self {
        self.derive(|r| r.endpoint_selection = selection)
    }

    /// The order in which the proxy tries its endpoints.
    pub fn ice_get_endpoint_selection(&self) -> crate::reference::EndpointSelection {
        self.inner.reference.endpoint_selection
    }

    /// A copy that uses only secure endpoints (ssl, wss), or any.
    pub fn ice_secure(&self, secure: bool) -> Self {
        self.derive(|r| r.wire.secure = secure)
    }

    /// A copy that tries secure endpoints first (or last).
    pub fn ice_prefer_secure(&self, prefer: bool) -> Self {
        self.derive(|r| r.prefer_secure = prefer)
    }

    /// A copy with these endpoints (none: an indirect proxy); an `ice_timeout` given before
    /// applies to them.
    pub fn ice_endpoints(&self, mut endpoints: Vec<crate::encoding::EndpointData>) -> Self {
        self.derive(|r| {
            if let Some(t) = r.timeout {
                for ep in &mut endpoints {
                    locate::set_ip_timeout(ep, t);
                }
            }
            r.wire.endpoints = endpoints;
        })
    }

    /// A copy that is indirect through this adapter id (its endpoints are dropped).
    pub fn ice_adapter_id(&self, adapter_id: &str) -> Self {
        self.derive(|r| {
            r.wire.adapter_id = adapter_id.to_string();
            r.wire.endpoints.clear();
        })
    }

    /// A copy that compresses its requests (or not).
    pub fn ice_compress(&self, compress: bool) -> Self {
        self.derive(|r| r.compress = Some(compress))
    }

    /// A copy whose endpoints have this timeout (milliseconds; −1: infinite): its own
    /// endpoints, and, as for Ice, the endpoints a locator resolves for it when it is indirect.
    pub fn ice_timeout(&self, timeout_ms: i32) -> Self {
        self.derive(|r| {
            r.timeout = Some(timeout_ms);
            for ep in &mut r.wire.endpoints {
                locate::set_ip_timeout(ep, timeout_ms);
            }
        })
    }

    /// The timeout `ice_timeout` gave this proxy (milliseconds), or `None` if it was not
    /// called (Ice's `ice_getTimeout`).
    pub fn ice_get_timeout(&self) -> Option<i32> {
        self.inner.reference.timeout
    }

    /// A copy whose twoway invocations fail with [`Error::InvocationTimeout`] after `timeout`.
    pub fn ice_invocation_timeout(&self, timeout: Option<Duration>) -> Self {
        self.derive(|r| r.invocation_timeout = timeout)
    }

    /// A copy that sends `context` with every request.
    pub fn ice_context(&self, context: Context) -> Self {
        self.derive(|r| r.context = context)
    }

    /// A copy for another facet.
    pub fn ice_facet(&self, facet: &str) -> Self {
        self.derive(|r| r.wire.facet = facet.to_string())
    }

    /// A copy for another identity.
    pub fn ice_identity(&self, identity: Identity) -> Self {
        self.derive(|r| r.wire.identity = identity)
    }

    /// A copy that uses another encoding for parameters.
    pub fn ice_encoding_version(&self, encoding: EncodingVersion) -> Self {
        self.derive(|r| r.wire.encoding = encoding)
    }

    /// A copy bound to one connection (for callbacks over a bidirectional connection).
    pub fn ice_fixed(&self, connection: Connection) -> Self {
        Self::build(
            self.inner.instance.clone(),
            self.inner.reference.clone(),
            Some(connection),
            Arc::new(Mutex::new(BatchQueue::default())),
        )
    }

    /// The connection this proxy uses, establishing it if needed.
    pub async fn ice_get_connection(&self) -> Result<Connection> {
        if let Some(c) = self.established_connection()? {
            return Ok(c);
        }
        // Resolving and connecting make a future of several kilobytes: boxed, so that the
        // future of every call on an established connection (which awaits this one) stays
        // small and is not copied around whole.
        Box::pin(self.connect_now()).await
    }

    /// The proxy's fixed connection, or the open connection it uses already, if any; an error
    /// for a fixed connection that is closed.
    fn established_connection(&self) -> Result<Option<Connection>> {
        if let Some(c) = &self.inner.fixed {
            if c.is_closed() {
                return Err(Error::ConnectionLost("fixed connection is closed".into()));
            }
            return Ok(Some(c.clone()));
        }
        if let Some(c) = self.inner.connection.lock().expect("proxy connection").as_ref() {
            if !c.is_closed() {
                return Ok(Some(c.clone()));
            }
        }
        Ok(None)
    }

    /// Resolves the proxy's endpoints and connects (or reuses a connection to one of them),
    /// for a proxy without an open connection.
    async fn connect_now(&self) -> Result<Connection> {
        let (endpoints, how) = self.resolve_endpoints().await?;
        let connection = match self.connect_first(&endpoints).await {
            Err(e) if how == locate::Resolution::Cached => {
                // The cached endpoints may be stale: ask the locator again, once.
                tracing::debug!(target: "floe::locator", "cached endpoints of {} failed ({e}): resolving again", self);
                self.forget_resolution();
                let (endpoints, _) = self.resolve_endpoints().await?;
                self.connect_first(&endpoints).await?
            }
            other => other?,
        };
        self.attach_routed_adapter(&connection);
        *self.inner.connection.lock().expect("proxy connection") = Some(connection.clone());
        Ok(connection)
    }

    /// An open connection to any of `endpoints`, as Ice reuses one before it connects;
    /// otherwise a connection to the first of `endpoints` that connects.
    async fn connect_first(&self, endpoints: &[crate::encoding::EndpointData]) -> Result<Connection> {
        if let Some(c) = self.inner.instance.find_open_connection(endpoints) {
            return Ok(c);
        }
        let mut last = None;
        for ep in endpoints {
            match self.inner.instance.connect(ep).await {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::NoEndpoint(self.inner.reference.to_string())))
    }

    /// Sends a request message (a oneway request, or a batch) as one datagram to the first
    /// of the proxy's udp endpoints.
    async fn send_datagram(&self, msg: &[u8], tail: Option<&[u8]>) -> Result<()> {
        let (endpoints, _) = self.resolve_endpoints().await?;
        let endpoint = endpoints.first().ok_or_else(|| Error::NoEndpoint(format!("{self} has no udp endpoint")))?;
        let socket = self.inner.instance.datagram_socket(endpoint).await?;
        match tail {
            None => crate::transport::udp::send(&socket, msg).await,
            Some(tail) => {
                let mut whole = Vec::with_capacity(msg.len() + tail.len());
                whole.extend_from_slice(msg);
                whole.extend_from_slice(tail);
                crate::transport::udp::send(&socket, &whole).await
            }
        }
    }

    fn context_for<'a>(&'a self, explicit: Option<&'a Context>) -> std::borrow::Cow<'a, Context> {
        let r = &self.inner.reference;
        let comm = &self.inner.instance;
        if explicit.is_none() && r.context.is_empty() && !comm.has_implicit_context() {
            return std::borrow::Cow::Borrowed(&r.context);
        }
        if let Some(c) = explicit {
            if !comm.has_implicit_context() {
                return std::borrow::Cow::Borrowed(c);
            }
        }
        let mut ctx = comm.implicit_context();
        match explicit {
            Some(c) => ctx.extend(c.iter().map(|(k, v)| (k.clone(), v.clone()))),
            None => ctx.extend(r.context.iter().map(|(k, v)| (k.clone(), v.clone()))),
        }
        std::borrow::Cow::Owned(ctx)
    }

    fn compress(&self) -> Compress {
        let c = self.inner.instance.override_compress().unwrap_or_else(|| self.inner.reference.wants_compression());
        if c {
            Compress::Yes
        } else {
            Compress::No
        }
    }

    /// Encodes a request message. With a `tail_len`, the parameters end with that many bytes
    /// that `write` did not write (they are sent from their own buffer): the sizes count them.
    fn encode_request(
        &self,
        operation: &str,
        mode: OperationMode,
        context: &Context,
        write: impl FnOnce(&mut Encoder),
        tail_len: usize,
    ) -> BytesMut {
        let mut e = Encoder::with_buffer(crate::encoding::pool::take(256), EncodingVersion::V1_0);
        e.write_raw(&Header::bytes(MessageType::Request, CompressionStatus::NotCompressed, 0));
        e.write_i32(0);
        write_request_head(&mut e, &self.inner.target, operation, mode, context);
        e.start_encapsulation(self.inner.reference.wire.encoding.compatible().unwrap_or(EncodingVersion::V1_1));
        // Classes of operations without format metadata take the communicator's default.
        e.set_format(self.inner.instance.default_format());
        write(&mut e);
        e.end_encapsulation_before(tail_len);
        let mut buf = e.into_buffer();
        let size = buf.len() + tail_len;
        patch_size(&mut buf, size);
        buf
    }

    /// Like [`ObjectPrx::invoke`] for parameters that end with a byte sequence: `write`
    /// encodes the parameters before it, and a large `tail` (64 KB or more) is sent from its
    /// own buffer instead of being copied into the request. Batch proxies, compressed
    /// requests and small tails take the ordinary path; the bytes on the wire are the same.
    pub(crate) fn invoke_with_tail<'a>(
        &'a self,
        operation: &'a str,
        mode: OperationMode,
        context: Option<&'a Context>,
        write: impl FnOnce(&mut Encoder) + 'a,
        tail: &'a Bytes,
    ) -> impl std::future::Future<Output = Result<Option<Outcome>>> + 'a {
        self.invoke_with_raw_tail(operation, mode, context, write, tail.len(), tail)
    }

    /// Like [`ObjectPrx::invoke`] for parameters that end with a sequence of [`WireLayout`]
    /// values (numbers, or structs of them): `write` encodes the parameters before it, and a
    /// large sequence (64 KB or more) is sent from its own memory instead of being copied
    /// into the request.
    pub(crate) fn invoke_with_seq_tail<'a, T: WireLayout + Encode>(
        &'a self,
        operation: &'a str,
        mode: OperationMode,
        context: Option<&'a Context>,
        write: impl FnOnce(&mut Encoder) + 'a,
        tail: &'a [T],
    ) -> impl std::future::Future<Output = Result<Option<Outcome>>> + 'a {
        match crate::encoding::wire_bytes(tail) {
            Some(bytes) => futures_util::future::Either::Left(self.invoke_with_raw_tail(
                operation,
                mode,
                context,
                write,
                tail.len(),
                bytes,
            )),
            None => futures_util::future::Either::Right(self.invoke(operation, mode, context, move |e| {
                write(e);
                crate::encoding::encode_seq_bulk(tail, e);
            })),
        }
    }

    /// Invokes `operation` with parameters already encoded: `params` is the contents of a
    /// request's encapsulation, in this proxy's encoding, as a router or a bridge forwards it.
    /// Large parameters (64 KB or more) are sent from their own memory rather than copied into
    /// the request; otherwise this is [`invoke`](Self::invoke) writing `params` as they are.
    pub fn invoke_encoded<'a>(
        &'a self,
        operation: &'a str,
        mode: OperationMode,
        context: Option<&'a Context>,
        params: &'a Bytes,
    ) -> impl std::future::Future<Output = Result<Option<Outcome>>> + 'a {
        self.invoke_before_tail(operation, mode, context, |_| {}, params)
    }

    /// The common form of [`invoke_with_tail`](Self::invoke_with_tail) and
    /// [`invoke_with_seq_tail`](Self::invoke_with_seq_tail): `write` encodes the parameters
    /// before a sequence of `count` elements whose encoded bytes are `tail`.
    fn invoke_with_raw_tail<'a>(
        &'a self,
        operation: &'a str,
        mode: OperationMode,
        context: Option<&'a Context>,
        write: impl FnOnce(&mut Encoder) + 'a,
        count: usize,
        tail: &'a [u8],
    ) -> impl std::future::Future<Output = Result<Option<Outcome>>> + 'a {
        let write = move |e: &mut Encoder| {
            write(e);
            e.write_size(count);
        };
        self.invoke_before_tail(operation, mode, context, write, tail)
    }

    /// Invokes `operation` with the parameters `write` encodes followed by the bytes of
    /// `tail`, sent from their own memory when large (64 KB or more) and the request is neither
    /// batched nor compressed.
    fn invoke_before_tail<'a>(
        &'a self,
        operation: &'a str,
        mode: OperationMode,
        context: Option<&'a Context>,
        write: impl FnOnce(&mut Encoder) + 'a,
        tail: &'a [u8],
    ) -> impl std::future::Future<Output = Result<Option<Outcome>>> + 'a {
        let separate = tail.len() >= SEPARATE_TAIL_MIN
            && !self.inner.reference.wire.mode.is_batch()
            && self.compress() == Compress::No;
        if !separate {
            return futures_util::future::Either::Left(self.invoke(operation, mode, context, move |e| {
                write(e);
                e.write_raw(tail);
            }));
        }
        futures_util::future::Either::Right(crate::response::Recycling::new(crate::response::boxed_in(
            crate::response::future_slot(),
            self.invoke_unbatched(operation, mode, context, write, Some(tail)),
        )))
    }

    /// Invokes `operation` with parameters written by `write`. For a twoway proxy, waits for
    /// the reply and returns its [`Outcome`]; for oneway returns `None` once the request is
    /// written; for batch oneway returns `None` once the request is queued (queuing does no
    /// I/O unless the batch reached `Ice.BatchAutoFlushSize`).
    pub fn invoke<'a>(
        &'a self,
        operation: &'a str,
        mode: OperationMode,
        context: Option<&'a Context>,
        write: impl FnOnce(&mut Encoder) + 'a,
    ) -> impl std::future::Future<Output = Result<Option<Outcome>>> + 'a {
        if self.inner.reference.wire.mode.is_batch() {
            // As Ice does, a proxy whose encoding floe cannot speak (another major version)
            // fails before anything is queued.
            let unsupported = self.inner.reference.wire.encoding.compatible().err();
            let due = if unsupported.is_none() { self.queue_batch(operation, mode, context, write) } else { None };
            // The flush future is boxed so that queuing stays a small, ready future.
            let flush = due.map(|msgs| Box::pin(self.send_batches(msgs)));
            return futures_util::future::Either::Left(async move {
                if let Some(e) = unsupported {
                    return Err(e.into());
                }
                if let Some(f) = flush {
                    f.await?;
                }
                Ok(None)
            });
        }
        // Boxed: the twoway path's future is large, and moving it on every call (batched ones
        // included) would cost more than the allocation does next to a round trip. The block
        // of a completed call serves the next call on the thread.
        futures_util::future::Either::Right(crate::response::Recycling::new(crate::response::boxed_in(
            crate::response::future_slot(),
            self.invoke_unbatched(operation, mode, context, write, None),
        )))
    }

    async fn invoke_unbatched(
        &self,
        operation: &str,
        mode: OperationMode,
        context: Option<&Context>,
        write: impl FnOnce(&mut Encoder),
        tail: Option<&[u8]>,
    ) -> Result<Option<Outcome>> {
        // Ice's UnsupportedEncodingException: nothing is sent with an encoding of another
        // major version.
        self.inner.reference.wire.encoding.compatible()?;
        let ctx = self.context_for(context);
        match self.inner.reference.wire.mode {
            InvocationMode::Oneway
            | InvocationMode::BatchOneway
            | InvocationMode::Datagram
            | InvocationMode::BatchDatagram => {
                let msg = self.encode_request(operation, mode, &ctx, write, tail.map_or(0, <[u8]>::len));
                self.send_with_retry(msg, tail, mode, false).await.map(|_| None)
            }
            InvocationMode::Twoway => {
                let msg = self.encode_request(operation, mode, &ctx, write, tail.map_or(0, <[u8]>::len));
                // Each arm makes its own future, so that the usual one is built in place
                // rather than moved (the future is large).
                let reply = match self.inner.reference.invocation_timeout {
                    Some(t) => tokio::time::timeout(t, self.send_with_retry(msg, tail, mode, true))
                        .await
                        .map_err(|_| Error::InvocationTimeout(t))??,
                    None => self.send_with_retry(msg, tail, mode, true).await?,
                };
                let body = reply.ok_or_else(|| Error::ConnectionLost("no reply".into()))?;
                outcome_of(body, &self.inner.instance).map(Some)
            }
        }
    }

    /// Sends a request message (followed by `tail`, when given), retrying as the proxy allows.
    async fn send_with_retry(
        &self,
        mut msg: BytesMut,
        tail: Option<&[u8]>,
        mode: OperationMode,
        twoway: bool,
    ) -> Result<Option<ReplyBody>> {
        if self.ice_is_datagram() && self.inner.fixed.is_none() {
            let sent = self.send_datagram(&msg, tail).await;
            crate::encoding::pool::give(msg);
            return sent.map(|_| None);
        }
        let retries = if self.inner.fixed.is_some() { 0 } else { self.inner.instance.retries() };
        let compress = self.compress();
        let mut attempt = 0;
        let mut relocated = false;
        loop {
            let result = async {
                let conn = self.ice_get_connection().await?;
                if twoway {
                    conn.invoke_parts(&mut msg, tail, compress).await.map(|r| Some(r.body))
                } else {
                    conn.send_oneway_parts(&mut msg, tail, compress).await.map(|_| None)
                }
            }
            .await;
            match result {
                Err(e) if attempt < retries && retryable(&e, mode) => {
                    attempt += 1;
                    *self.inner.connection.lock().expect("proxy connection") = None;
                    tracing::debug!(target: "floe::retry", "retrying after {e}");
                }
                // An indirect proxy's object is not where the locator cache said: as Ice
                // does, forget the cached answer and try once more with a fresh one.
                Ok(Some(ReplyBody::ObjectNotExist(_)))
                    if !relocated
                        && self.inner.fixed.is_none()
                        && self.inner.reference.is_indirect()
                        && self.inner.reference.locator.is_some()
                        && self.inner.reference.router.is_none() =>
                {
                    relocated = true;
                    self.forget_resolution();
                    *self.inner.connection.lock().expect("proxy connection") = None;
                    tracing::debug!(target: "floe::locator", "{self}: object not found at the cached endpoints, resolving again");
                }
                other => {
                    crate::encoding::pool::give(msg);
                    return other;
                }
            }
        }
    }

    /// Queues a request; when the queue reached the auto-flush size, returns the messages to
    /// send: the requests before this one (see [`BatchBuilder::take_full`]), after any full
    /// messages a dropped [`BatchWriter`] left.
    fn queue_batch(
        &self,
        operation: &str,
        mode: OperationMode,
        context: Option<&Context>,
        write: impl FnOnce(&mut Encoder),
    ) -> Option<Vec<BytesMut>> {
        let ctx = self.context_for(context);
        let encoding = self.inner.reference.wire.encoding.compatible().unwrap_or(EncodingVersion::V1_1);
        let mut q = self.inner.batch.lock().expect("batch");
        let q = &mut *q;
        let head = q.head(&self.inner.target, operation, mode);
        let enc = q.builder.start_request_raw();
        enc.write_raw(&q.heads[head].2);
        if ctx.is_empty() {
            enc.write_u8(0);
        } else {
            ctx.encode(enc);
        }
        enc.start_encapsulation(encoding);
        enc.set_format(self.inner.instance.default_format());
        write(enc);
        q.builder.finish_request();
        let full = q.builder.take_full(self.inner.instance.batch_auto_flush_size())?;
        let mut due: Vec<BytesMut> = q.full.drain(..).map(|(m, _)| m).collect();
        due.push(full);
        Some(due)
    }

    /// A [`BatchWriter`] for this proxy's target: queues batched oneway requests without
    /// futures or locks, for high request rates; [`BatchWriter::flush`] sends them.
    pub fn batch_writer(&self) -> BatchWriter {
        BatchWriter::new(self.clone())
    }

    /// Number of batched requests waiting to be flushed.
    pub fn batch_request_count(&self) -> usize {
        self.inner.batch.lock().expect("batch").count()
    }

    /// Sends the queued batch requests (in one message, unless they were queued through a
    /// [`BatchWriter`] that filled several).
    pub async fn ice_flush_batch_requests(&self) -> Result<()> {
        let msgs = self.inner.batch.lock().expect("batch").take_all();
        self.send_batches(msgs).await
    }

    /// Sends batch messages in order; a failure drops the messages after the one that failed.
    pub(crate) async fn send_batches(&self, msgs: Vec<BytesMut>) -> Result<()> {
        for msg in msgs {
            self.send_with_retry(msg, None, OperationMode::Normal, false).await?;
        }
        Ok(())
    }

    /// Sends many twoway requests with one write and waits for all their replies (batched
    /// twoway, which Ice lacks). `requests` yields the parameters of each call to `operation`;
    /// the outcomes come back in the same order.
    pub async fn invoke_batch_twoway<I, F>(
        &self,
        operation: &str,
        mode: OperationMode,
        requests: I,
    ) -> Result<Vec<Result<Outcome>>>
    where
        I: IntoIterator<Item = F>,
        F: FnOnce(&mut Encoder),
    {
        self.inner.reference.wire.encoding.compatible()?;
        let conn = self.ice_get_connection().await?;
        let ctx = self.context_for(None);
        let mut msgs = Vec::new();
        for write in requests {
            msgs.push(self.encode_request(operation, mode, &ctx, write, 0));
        }
        let replies = conn.invoke_many(msgs, self.compress()).await?;
        Ok(replies.into_iter().map(|r| r.and_then(|r| outcome_of(r.body, &self.inner.instance))).collect())
    }

    // ---- built-in operations

    /// `ice_ping`: checks that the object exists.
    pub async fn ice_ping(&self) -> Result<()> {
        self.invoke("ice_ping", OperationMode::Nonmutating, None, |_| {})
            .await?
            .map(|o| o.decode(|_| Ok(())))
            .transpose()?;
        Ok(())
    }

    /// `ice_isA`: whether the object implements the interface `type_id`.
    pub async fn ice_is_a(&self, type_id: &str) -> Result<bool> {
        self.twoway_only("ice_isA")?;
        let o = self.invoke("ice_isA", OperationMode::Nonmutating, None, |e| e.write_str(type_id)).await?;
        o.ok_or_else(|| Error::TwowayOnly("ice_isA".into()))?.decode(bool::decode)
    }

    /// `ice_id`: the most derived interface of the object.
    pub async fn ice_id(&self) -> Result<String> {
        self.twoway_only("ice_id")?;
        let o = self.invoke("ice_id", OperationMode::Nonmutating, None, |_| {}).await?;
        o.ok_or_else(|| Error::TwowayOnly("ice_id".into()))?.decode(String::decode)
    }

    /// `ice_ids`: every interface of the object, sorted.
    pub async fn ice_ids(&self) -> Result<Vec<String>> {
        self.twoway_only("ice_ids")?;
        let o = self.invoke("ice_ids", OperationMode::Nonmutating, None, |_| {}).await?;
        o.ok_or_else(|| Error::TwowayOnly("ice_ids".into()))?.decode(Vec::<String>::decode)
    }

    /// Fails unless the proxy is twoway (for operations that return values).
    pub fn twoway_only(&self, operation: &str) -> Result<()> {
        if self.inner.reference.wire.mode != InvocationMode::Twoway {
            return Err(Error::TwowayOnly(operation.to_string()));
        }
        Ok(())
    }

    /// `checkedCast`: `Some(self)` if the object implements `type_id` (`None` if not, or if
    /// the facet does not exist).
    pub async fn checked_cast(&self, type_id: &str) -> Result<Option<ObjectPrx>> {
        match self.ice_twoway().ice_is_a(type_id).await {
            Ok(true) => Ok(Some(self.clone())),
            Ok(false) | Err(Error::FacetNotExist { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn retryable(e: &Error, mode: OperationMode) -> bool {
    e.is_retryable_for_any_operation() || (mode.is_idempotent() && matches!(e, Error::ConnectionLost(_)))
}

/// A typed proxy: generated proxies wrap an [`ObjectPrx`] and implement this trait, which
/// gives them the `ice_*` factory methods returning their own type.
pub trait Proxy: Clone + Send + Sync + Sized + 'static {
    /// The Slice type id of the interface, e.g. `::Interop::Tester`.
    const TYPE_ID: &'static str;

    /// Wraps an untyped proxy without checking its type.
    fn from_object(proxy: ObjectPrx) -> Self;

    /// The untyped proxy.
    fn as_object(&self) -> &ObjectPrx;

    /// Wraps an untyped proxy without checking (Ice's `uncheckedCast`).
    fn unchecked_cast(proxy: &impl Proxy) -> Self {
        Self::from_object(proxy.as_object().clone())
    }

    /// Asks the object whether it implements this interface (Ice's `checkedCast`).
    fn checked_cast(proxy: &impl Proxy) -> impl std::future::Future<Output = Result<Option<Self>>> + Send {
        let p = proxy.as_object().clone();
        async move { Ok(p.checked_cast(Self::TYPE_ID).await?.map(Self::from_object)) }
    }

    /// `ice_ping`: checks that the object exists.
    fn ice_ping(&self) -> impl std::future::Future<Output = Result<()>> + Send + '_ {
        self.as_object().ice_ping()
    }

    /// `ice_isA`: whether the object implements the interface `type_id`.
    fn ice_is_a<'a>(&'a self, type_id: &'a str) -> impl std::future::Future<Output = Result<bool>> + Send + 'a {
        self.as_object().ice_is_a(type_id)
    }

    /// `ice_id`: the most derived interface of the object.
    fn ice_id(&self) -> impl std::future::Future<Output = Result<String>> + Send + '_ {
        self.as_object().ice_id()
    }

    /// `ice_ids`: every interface of the object, sorted.
    fn ice_ids(&self) -> impl std::future::Future<Output = Result<Vec<String>>> + Send + '_ {
        self.as_object().ice_ids()
    }

    /// The connection the proxy uses, established if needed.
    fn ice_get_connection(&self) -> impl std::future::Future<Output = Result<Connection>> + Send + '_ {
        self.as_object().ice_get_connection()
    }

    /// Sends the batched requests queued on this proxy.
    fn ice_flush_batch_requests(&self) -> impl std::future::Future<Output = Result<()>> + Send + '_ {
        self.as_object().ice_flush_batch_requests()
    }

    /// Number of batched requests waiting to be flushed.
    fn batch_request_count(&self) -> usize {
        self.as_object().batch_request_count()
    }

    /// Target identity.
    fn ice_get_identity(&self) -> &Identity {
        self.as_object().ice_get_identity()
    }

    /// Target facet.
    fn ice_get_facet(&self) -> &str {
        self.as_object().ice_get_facet()
    }

    /// A oneway copy.
    fn ice_oneway(&self) -> Self {
        Self::from_object(self.as_object().ice_oneway())
    }

    /// A datagram copy (oneway requests sent over a `udp` endpoint).
    fn ice_datagram(&self) -> Self {
        Self::from_object(self.as_object().ice_datagram())
    }

    /// A copy whose endpoints have this timeout (milliseconds; −1: infinite).
    fn ice_timeout(&self, timeout_ms: i32) -> Self {
        Self::from_object(self.as_object().ice_timeout(timeout_ms))
    }

    /// A twoway copy.
    fn ice_twoway(&self) -> Self {
        Self::from_object(self.as_object().ice_twoway())
    }

    /// A batch-oneway copy.
    fn ice_batch_oneway(&self) -> Self {
        Self::from_object(self.as_object().ice_batch_oneway())
    }

    /// A copy that compresses requests (or not).
    fn ice_compress(&self, compress: bool) -> Self {
        Self::from_object(self.as_object().ice_compress(compress))
    }

    /// A copy with a per-proxy context.
    fn ice_context(&self, context: Context) -> Self {
        Self::from_object(self.as_object().ice_context(context))
    }

    /// A copy for another facet.
    fn ice_facet(&self, facet: &str) -> Self {
        Self::from_object(self.as_object().ice_facet(facet))
    }

    /// A copy for another identity.
    fn ice_identity(&self, identity: Identity) -> Self {
        Self::from_object(self.as_object().ice_identity(identity))
    }

    /// A copy using another encoding.
    fn ice_encoding_version(&self, encoding: EncodingVersion) -> Self {
        Self::from_object(self.as_object().ice_encoding_version(encoding))
    }

    /// A copy with an invocation timeout.
    fn ice_invocation_timeout(&self, timeout: Option<Duration>) -> Self {
        Self::from_object(self.as_object().ice_invocation_timeout(timeout))
    }

    /// A copy bound to one connection.
    fn ice_fixed(&self, connection: Connection) -> Self {
        Self::from_object(self.as_object().ice_fixed(connection))
    }
}

impl Proxy for ObjectPrx {
    const TYPE_ID: &'static str = "::Ice::Object";

    fn from_object(proxy: ObjectPrx) -> Self {
        proxy
    }

    fn as_object(&self) -> &ObjectPrx {
        self
    }
}

impl<P: Proxy> Encode for Option<P> {
    fn encode(&self, enc: &mut Encoder) {
        ObjectPrx::encode_nullable(self.as_ref().map(|p| p.as_object()), enc);
    }
}

impl<P: Proxy> Decode for Option<P> {
    const MIN_WIRE_SIZE: usize = 2;

    fn decode(dec: &mut Decoder) -> crate::encoding::Result<Self> {
        let data = ProxyData::decode_nullable(dec)?;
        let Some(data) = data else { return Ok(None) };
        let instance = dec
            .context()
            .and_then(Instance::from_decoder_context)
            .ok_or(crate::encoding::DecodeError::Malformed("a proxy can only be decoded with a communicator"))?;
        let reference = Reference::from_wire(data, instance.parse_defaults());
        Ok(Some(P::from_object(ObjectPrx::new(instance, reference))))
    }
}

#[cfg(test)]
mod future_size_tests {
    use super::ObjectPrx;
    use crate::instance::Instance;
    use crate::protocol::OperationMode;
    use crate::reference::Reference;

    /// Every call awaits these futures and each `.await` may copy them: resolving and
    /// connecting (several kilobytes) are boxed away from the path of a call on an open
    /// connection.
    #[test]
    fn the_futures_of_a_call_on_an_open_connection_stay_small() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let instance = Instance::new(crate::properties::Properties::new(), None).unwrap();
            let r = Reference::parse("a:tcp -h 127.0.0.1 -p 1", instance.parse_defaults()).unwrap();
            let p = ObjectPrx::new(instance, r);
            let get = p.ice_get_connection();
            let send = p.send_with_retry(bytes::BytesMut::new(), None, OperationMode::Normal, true);
            let invoke = p.invoke_unbatched("x", OperationMode::Normal, None, |_| {}, None);
            let sizes = (std::mem::size_of_val(&get), std::mem::size_of_val(&send), std::mem::size_of_val(&invoke));
            assert!(sizes.0 <= 64, "ice_get_connection's future: {} bytes", sizes.0);
            assert!(sizes.1 <= 1536, "send_with_retry's future: {} bytes", sizes.1);
            assert!(sizes.2 <= 2048, "invoke_unbatched's future: {} bytes", sizes.2);
            drop((get, send, invoke));
        });
    }
}
