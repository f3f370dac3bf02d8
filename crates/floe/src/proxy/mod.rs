//! Proxies: [`ObjectPrx`], the untyped proxy every generated proxy wraps, with the `ice_*`
//! factory methods, the built-in operations and the invocation paths (twoway, oneway,
//! batched oneway, batched twoway).
//!
//! This file holds `ObjectPrx` itself, [`Outcome`], the built-in operations and the [`Proxy`]
//! trait; `factories` holds the `ice_*` copies, `invoke` the invocation paths, `batch` the
//! [`BatchWriter`], `locate` where requests go (own endpoints, a locator's, a router's).

mod batch;
mod factories;
mod invoke;
mod locate;
/// What a proxy points at, and the proxy-string syntax (defined below the proxies, which the
/// communicator's instance also uses).
pub use crate::reference;

pub use batch::BatchWriter;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::connection::Connection;
use crate::encoding::{
    Context, Decode, Decoder, Encode, Encoder, EncodingVersion, Identity, InvocationMode, ProxyData,
};
use crate::error::{CallError, Error, Result};
use crate::instance::Instance;
use crate::protocol::{BatchBuilder, OperationMode, ReplyBody};
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
        ReplyBody::DispatchFailed { status, message } => Err(Error::Dispatch { status, message }),
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
}

/// The built-in operations every object has.
impl ObjectPrx {
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
