//! What a servant sees of a request ([`Current`], [`IncomingRequest`]), the replies it
//! builds ([`Response`]), and the traits servants implement: [`Dispatcher`] (generated servant
//! code, or a dynamic servant) and [`ServantLocator`].
//!
//! This layer sits above the connection (a request knows the connection it came on) and
//! below the object adapter: the adapter a request was dispatched by travels with it
//! type-erased, and `Current::adapter` is implemented in adapter.rs.

use std::any::Any;
use std::sync::Arc;

use bytes::Bytes;
use compact_str::CompactString;

use crate::connection::Connection;
use crate::encoding::{Decoder, Encoder, EncodingVersion, Identity, RequestContext, UserExceptionSlices, WireLayout};
use crate::error::Error;
use crate::instance::Instance;
use crate::protocol::reply::{finish_reply, start_reply, RequestFailed, DISPATCH_FAILED_MIN};
use crate::protocol::{OperationMode, Reply, ReplyBody, ReplyStatus, SEPARATE_TAIL_MIN};
pub(crate) use crate::response::future_slot;
pub use crate::response::{DispatchFuture, DispatchSlot, Response};

/// Where requests come from, shared by the requests that arrive on one connection (or
/// adapter, for datagrams): a request counts one reference to it instead of one to each part.
pub(crate) struct Origin {
    /// The connection the requests arrive on (none for datagrams).
    pub(crate) connection: Option<Connection>,
    /// The instance whose settings decoders take (proxies, value factories).
    pub(crate) instance: Option<Instance>,
    /// The object adapter that dispatches them, type-erased (it sits above this module; see
    /// `Current::adapter` in adapter.rs).
    pub(crate) adapter: Option<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("connection", &self.connection)
            .field("adapter", &self.adapter.is_some())
            .finish_non_exhaustive()
    }
}

/// Information about the request being dispatched.
#[derive(Debug, Clone)]
pub struct Current {
    /// The adapter and connection, see [`adapter`](Self::adapter) and
    /// [`connection`](Self::connection).
    origin: Option<Arc<Origin>>,
    /// Target identity.
    pub id: Identity,
    /// Target facet.
    pub facet: CompactString,
    /// Operation name.
    pub operation: CompactString,
    /// Operation mode as sent.
    pub mode: OperationMode,
    /// Request context (reads as a [`Context`](crate::Context)).
    pub ctx: RequestContext,
    /// Request id (0 for oneway and batched requests).
    pub request_id: i32,
    /// Encoding of the parameters (results are encoded the same way).
    pub encoding: EncodingVersion,
    /// The request came in a batch (see [`is_batched`](Self::is_batched)).
    batched: bool,
}

impl Current {
    /// A current for dispatching outside a connection (tests, collocated calls).
    pub fn new(id: Identity, operation: &str) -> Self {
        Current {
            origin: None,
            id,
            facet: CompactString::default(),
            operation: CompactString::new(operation),
            mode: OperationMode::Normal,
            ctx: RequestContext::new(),
            request_id: 1,
            encoding: EncodingVersion::V1_1,
            batched: false,
        }
    }

    /// True for a request that came in a batch (a batched oneway request, rather than a plain
    /// oneway one): a router, for instance, forwards such requests as a batch.
    pub fn is_batched(&self) -> bool {
        self.batched
    }

    /// Marks the request as one that came in a batch.
    pub(crate) fn mark_batched(&mut self) {
        self.batched = true;
    }

    /// Where the request came from (none outside a connection or adapter).
    #[inline]
    pub(crate) fn origin(&self) -> Option<&Origin> {
        self.origin.as_deref()
    }

    /// The connection the request arrived on (none for datagrams and outside a connection).
    #[inline]
    pub fn connection(&self) -> Option<&Connection> {
        self.origin.as_ref()?.connection.as_ref()
    }

    /// The format of the classes and exceptions of operations without format metadata: the
    /// communicator's `Ice.Default.SlicedFormat` (compact outside a communicator).
    pub fn default_format(&self) -> crate::encoding::FormatType {
        match self.origin().and_then(|o| o.instance.as_ref()) {
            Some(instance) => instance.default_format(),
            None => crate::encoding::FormatType::Compact,
        }
    }

    /// True when no reply will be sent.
    pub fn is_oneway(&self) -> bool {
        self.request_id == 0
    }

    /// A successful reply whose results `write` encodes.
    #[inline]
    pub fn ok(&self, write: impl FnOnce(&mut Encoder)) -> Response {
        if self.is_oneway() {
            return Response::none();
        }
        let mut enc = Encoder::with_buffer(crate::encoding::pool::take(256), EncodingVersion::V1_0);
        let start = start_reply(&mut enc, self.request_id, ReplyStatus::Ok, self.encoding);
        write(&mut enc);
        finish_reply(&mut enc, start);
        Response::message(enc.into_buffer())
    }

    /// A successful reply whose results end with the byte sequence `tail`: `write` encodes
    /// the results before it. A large `tail` (64 KB or more) is sent from its own buffer
    /// rather than copied into the reply.
    pub fn ok_with_tail(&self, write: impl FnOnce(&mut Encoder), tail: &Bytes) -> Response {
        if tail.len() < SEPARATE_TAIL_MIN {
            return self.ok(|e| {
                write(e);
                e.write_byte_seq(tail);
            });
        }
        self.ok_before_tail(write, tail.len(), || tail.clone())
    }

    /// A successful reply whose results end with a sequence of `count` elements sent from
    /// its own buffer: `write` encodes the results before it, and `tail` gives its encoded
    /// bytes (made only when there is a reply).
    fn ok_before_tail(&self, write: impl FnOnce(&mut Encoder), count: usize, tail: impl FnOnce() -> Bytes) -> Response {
        if self.is_oneway() {
            return Response::none();
        }
        let tail = tail();
        let mut enc = Encoder::with_buffer(crate::encoding::pool::take(256), EncodingVersion::V1_0);
        let start = start_reply(&mut enc, self.request_id, ReplyStatus::Ok, self.encoding);
        write(&mut enc);
        enc.write_size(count);
        crate::protocol::reply::finish_reply_before(&mut enc, start, tail.len());
        Response::message_with_tail(enc.into_buffer(), tail)
    }

    /// A successful reply whose results end with the sequence `items` of [`WireLayout`]
    /// values (numbers, or structs of them): `write` encodes the results before it. A large
    /// sequence (64 KB or more) is sent from the vector's own memory rather than copied into
    /// the reply.
    pub fn ok_with_seq_tail<T>(&self, write: impl FnOnce(&mut Encoder), items: Vec<T>) -> Response
    where
        T: WireLayout + crate::encoding::Encode + Send + 'static,
    {
        let len = std::mem::size_of_val(items.as_slice());
        if len < SEPARATE_TAIL_MIN || crate::encoding::wire_bytes(&items).is_none() {
            return self.ok(|e| {
                write(e);
                crate::encoding::encode_seq_bulk(&items, e);
            });
        }
        let count = items.len();
        self.ok_before_tail(write, count, || Bytes::from_owner(crate::encoding::WireVec(items)))
    }

    /// A successful reply with no results.
    #[inline]
    pub fn ok_empty(&self) -> Response {
        self.ok(|_| {})
    }

    /// A user-exception reply (status 1).
    pub fn user_exception<E: UserExceptionSlices + ?Sized>(
        &self,
        e: &E,
        format: crate::encoding::FormatType,
    ) -> Response {
        if self.is_oneway() {
            return Response::none();
        }
        let mut enc = Encoder::with_capacity(64, EncodingVersion::V1_0);
        let start = start_reply(&mut enc, self.request_id, ReplyStatus::UserException, self.encoding);
        enc.set_format(format);
        e.encode_exception(&mut enc);
        finish_reply(&mut enc, start);
        Response::message(enc.into_buffer())
    }

    fn failed(&self) -> RequestFailed {
        RequestFailed {
            identity: self.id.clone(),
            facet: self.facet.to_string(),
            operation: self.operation.to_string(),
        }
    }

    /// The reply for what a servant returned as an error: a user exception gets status 1 in
    /// `format`, anything else is reported as by [`Current::error`].
    pub fn servant_error(&self, e: &Error, format: crate::encoding::FormatType) -> Response {
        match e {
            Error::UserException(u) => self.user_exception(&**u, format),
            other => self.error(other),
        }
    }

    /// Checks the mode a request was sent with against the operation's declared mode, as Ice
    /// does: an ordinary operation needs mode 0, an idempotent (or nonmutating) one accepts 1
    /// or 2. A mismatch is reported as a marshal error (status 5). Then checks the parameters'
    /// encoding as [`check_encoding`](Self::check_encoding) does: generated dispatchers call
    /// this before they read the parameters, as Ice checks both.
    #[inline]
    pub fn check_mode(&self, declared: OperationMode) -> Result<(), Response> {
        let ok = match declared {
            OperationMode::Normal => self.mode == OperationMode::Normal,
            _ => self.mode != OperationMode::Normal,
        };
        if !ok {
            return Err(self.mode_mismatch(declared));
        }
        self.check_encoding()
    }

    /// Checks that the parameters come in an encoding floe reads (1.0 or 1.1). Ice answers
    /// any other (1.2, 2.0…) with UnknownLocalException carrying UnsupportedEncodingException
    /// when an operation reads its parameters, and so does this reply. A dynamic servant that
    /// takes the encapsulation as it is (like Ice's Blobject) need not call it.
    #[inline]
    pub fn check_encoding(&self) -> Result<(), Response> {
        if self.encoding.major == 1 && self.encoding.minor <= 1 {
            Ok(())
        } else {
            Err(self.unsupported_encoding())
        }
    }

    /// The reply to a request whose parameters use an encoding floe does not support: an
    /// `UnknownLocalException` that names both Ice 3.7's exception and Ice 3.8's, so that the
    /// callers of either version recognise it.
    #[cold]
    fn unsupported_encoding(&self) -> Response {
        self.error(&Error::UnknownLocalException(format!(
            "::Ice::UnsupportedEncodingException (::Ice::MarshalException since Ice 3.8):\n\
             encoding error: unsupported encoding version: {}\n\
             (can only support encodings compatible with version 1.1) (operation {})",
            self.encoding, self.operation
        )))
    }

    #[cold]
    fn mode_mismatch(&self, declared: OperationMode) -> Response {
        self.error(&Error::UnknownLocalException(format!(
            "::Ice::MarshalException: operation mode mismatch for {}: sent {:?}, declared {:?}",
            self.operation, self.mode, declared
        )))
    }

    /// A reply reporting a local error: the request-failed errors keep their status (2–4),
    /// the unknown ones theirs (5–7), [`Error::Dispatch`] its own (8 and above, as Ice 3.8
    /// sends them), and anything else becomes UnknownLocalException.
    pub fn error(&self, e: &Error) -> Response {
        let body = match e {
            Error::ObjectNotExist { .. } => ReplyBody::ObjectNotExist(self.failed()),
            Error::FacetNotExist { .. } => ReplyBody::FacetNotExist(self.failed()),
            Error::OperationNotExist { .. } => ReplyBody::OperationNotExist(self.failed()),
            Error::UnknownUserException(s) => ReplyBody::UnknownUserException(s.clone()),
            Error::UnknownException(s) => ReplyBody::UnknownException(s.clone()),
            Error::UnknownLocalException(s) => ReplyBody::UnknownLocalException(s.clone()),
            Error::Dispatch { status, message } if *status >= DISPATCH_FAILED_MIN => {
                ReplyBody::DispatchFailed { status: *status, message: message.clone() }
            }
            other => ReplyBody::UnknownLocalException(format!(
                "{}: {other} (operation {})",
                other.ice_type_id(),
                self.operation
            )),
        };
        self.reply_body(body)
    }

    /// A reply with the given body.
    pub fn reply_body(&self, body: ReplyBody) -> Response {
        if self.is_oneway() {
            return Response::none();
        }
        Response::message(Reply { request_id: self.request_id, body }.encode())
    }

    /// The ObjectNotExist reply for this request.
    pub fn object_not_exist(&self) -> Response {
        self.reply_body(ReplyBody::ObjectNotExist(self.failed()))
    }

    /// The FacetNotExist reply for this request.
    pub fn facet_not_exist(&self) -> Response {
        self.reply_body(ReplyBody::FacetNotExist(self.failed()))
    }

    /// The OperationNotExist reply for this request.
    pub fn operation_not_exist(&self) -> Response {
        self.reply_body(ReplyBody::OperationNotExist(self.failed()))
    }

    /// The error for an operation this servant does not implement.
    pub fn operation_not_exist_error(&self) -> Error {
        Error::OperationNotExist {
            identity: self.id.clone(),
            facet: self.facet.to_string(),
            operation: self.operation.to_string(),
        }
    }
}

/// A dispatched request: its [`Current`] and parameter encapsulation body.
#[derive(Debug, Clone)]
pub struct IncomingRequest {
    /// Information about the request.
    pub current: Current,
    /// The parameter encapsulation's body.
    pub params: Bytes,
}

impl IncomingRequest {
    /// The request `request`, decoded from a message that came through `origin`.
    #[inline]
    pub(crate) fn from_request(origin: Arc<Origin>, request: crate::protocol::Request) -> Self {
        let crate::protocol::Request { request_id, identity, facet, operation, mode, context, encoding, params } =
            request;
        let current = Current {
            origin: Some(origin),
            id: identity,
            facet,
            operation,
            mode,
            ctx: context,
            request_id,
            encoding,
            batched: false,
        };
        IncomingRequest { current, params }
    }

    /// A decoder over the parameters (proxies in them belong to the adapter's communicator).
    pub fn decoder(&self) -> Decoder {
        self.decoder_over(self.params.clone())
    }

    /// A decoder over `params` with this request's encoding and its communicator's settings.
    fn decoder_over(&self, params: Bytes) -> Decoder {
        match self.current.origin().and_then(|o| o.instance.as_ref()) {
            Some(instance) => instance.decoder(params, self.current.encoding),
            None => Decoder::new(params, self.current.encoding),
        }
    }

    /// A decoder over parameters that hold no proxies and no class instances: it carries
    /// nothing of the communicator, so it costs less to make than [`decoder`](Self::decoder).
    /// A proxy decoded with it is a typed error (a proxy needs its communicator), and classes
    /// would miss the communicator's value factories and `Ice.AcceptClassCycles`. Generated
    /// dispatchers use it where the parameter types allow.
    pub fn plain_decoder(&self) -> Decoder {
        Decoder::new(self.params.clone(), self.current.encoding)
    }

    /// Like [`decoder`](Self::decoder), taking the parameters out of the request (they are
    /// left empty): for a dispatcher that reads them once, this saves counting one more
    /// reference to the message's buffer.
    pub(crate) fn take_decoder(&mut self) -> Decoder {
        let params = std::mem::take(&mut self.params);
        self.decoder_over(params)
    }

    /// Like [`plain_decoder`](Self::plain_decoder), taking the parameters out of the request
    /// (they are left empty). Generated dispatchers use it.
    #[inline]
    pub(crate) fn take_plain_decoder(&mut self) -> Decoder {
        Decoder::new(std::mem::take(&mut self.params), self.current.encoding)
    }

    /// Checks that the parameters were read completely (unknown optionals are skipped): for
    /// hand-written dispatchers, after they decoded what they expect.
    pub fn finish_params(dec: &mut Decoder) -> crate::encoding::Result<()> {
        if !dec.encoding().is_1_0() {
            dec.skip_remaining_optionals()?;
        }
        if !dec.is_empty() {
            return Err(crate::encoding::DecodeError::EncapsulationNotConsumed { extra: dec.remaining() });
        }
        Ok(())
    }
}

/// Something that can dispatch requests: a servant wrapped by generated code, or a
/// hand-written dynamic servant (like Ice's Blobject).
pub trait Dispatcher: Send + Sync + 'static {
    /// Dispatches one request. The returned future runs on the connection's task until it
    /// first waits; if it waits, it continues as a task of its own so the connection keeps
    /// reading.
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture;
}

impl<F> Dispatcher for F
where
    F: Fn(IncomingRequest) -> DispatchFuture + Send + Sync + 'static,
{
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        self(request)
    }
}

/// Anything a servant locator wants to hand from `locate` to `finished` (Ice's cookie).
pub type LocatorCookie = Box<dyn std::any::Any + Send + Sync>;

/// What a servant locator found: the servant, and a cookie for `finished`.
pub type Located = (Arc<dyn Dispatcher>, Option<LocatorCookie>);

/// Locates servants for identities that have none registered (Ice's ServantLocator).
///
/// Only `locate` is required. `try_locate` is the full form: it may fail (the error becomes
/// the reply, user exceptions included) and may return a cookie, which `finished` gets after
/// the servant has dispatched; an error from `finished` replaces the servant's reply.
pub trait ServantLocator: Send + Sync + 'static {
    /// Returns the servant for this request, or `None` for ObjectNotExist.
    fn locate(&self, current: &Current) -> Option<Arc<dyn Dispatcher>>;

    /// Ice's `locate`: the servant and a cookie, `Ok(None)` for ObjectNotExist, or the error
    /// to answer with. By default, [`locate`](Self::locate) without a cookie.
    fn try_locate(&self, current: &Current) -> Result<Option<Located>, Error> {
        Ok(self.locate(current).map(|s| (s, None)))
    }

    /// Called once the servant located by `try_locate` has dispatched the request; an error
    /// replaces its reply. Does nothing by default.
    fn finished(&self, current: &Current, cookie: Option<LocatorCookie>) -> Result<(), Error> {
        let _ = (current, cookie);
        Ok(())
    }

    /// Called when the locator is removed or its adapter deactivated.
    fn deactivate(&self, category: &str) {
        let _ = category;
    }
}

/// Answers the four built-in operations (`ice_ping`, `ice_isA`, `ice_id`, `ice_ids`) for a
/// servant whose type ids are `ids` (sorted, `::Ice::Object` included) and most derived
/// type `most_derived`. Returns `None` for any other operation.
pub(crate) fn dispatch_builtin(request: &IncomingRequest, ids: &[&str], most_derived: &str) -> Option<Response> {
    let c = &request.current;
    let builtin = matches!(c.operation.as_str(), "ice_ping" | "ice_isA" | "ice_id" | "ice_ids");
    if !builtin {
        return None;
    }
    // As for any operation, Ice checks the parameters' encoding when it reads them.
    if let Err(r) = c.check_encoding() {
        return Some(r);
    }
    // The operations without parameters read an empty encapsulation: under 1.0 it must be
    // empty; under 1.1 what it holds (optionals a newer peer added) is skipped.
    let no_params = || -> Result<(), Response> {
        if c.encoding.is_1_0() && !request.params.is_empty() {
            let e = crate::encoding::DecodeError::EncapsulationNotConsumed { extra: request.params.len() };
            return Err(c.error(&Error::Marshal(e)));
        }
        Ok(())
    };
    Some(match c.operation.as_str() {
        "ice_ping" => no_params().map_or_else(|r| r, |()| c.ok_empty()),
        "ice_isA" => {
            let mut d = request.decoder();
            let id = d.read_string().and_then(|id| IncomingRequest::finish_params(&mut d).map(|()| id));
            match id {
                Ok(id) => {
                    let yes = ids.contains(&id.as_str());
                    c.ok(|e| e.write_bool(yes))
                }
                Err(e) => c.error(&Error::Marshal(e)),
            }
        }
        "ice_id" => no_params().map_or_else(|r| r, |()| c.ok(|e| e.write_str(most_derived))),
        _ => no_params().map_or_else(
            |r| r,
            |()| {
                c.ok(|e| {
                    e.write_size(ids.len());
                    for id in ids {
                        e.write_str(id);
                    }
                })
            },
        ),
    })
}
