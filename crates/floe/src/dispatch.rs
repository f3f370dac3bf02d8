//! What a servant sees of a request ([`Current`]), what it answers ([`Response`]), and the
//! [`Dispatcher`] trait that generated servant code implements.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use compact_str::CompactString;

use crate::adapter::ObjectAdapter;
use crate::connection::Connection;
use crate::encoding::{Decoder, Encoder, EncodingVersion, Identity, RequestContext, UserExceptionSlices, WireLayout};
use crate::error::Error;
use crate::protocol::reply::{finish_reply, start_reply, RequestFailed};
use crate::protocol::{OperationMode, Reply, ReplyBody, ReplyStatus, SEPARATE_TAIL_MIN};

/// The adapter and connection requests come through, shared by the requests that arrive on
/// one connection (or adapter, for datagrams): a request counts one reference to it instead
/// of one to each.
#[derive(Debug)]
pub(crate) struct Origin {
    pub(crate) adapter: Option<ObjectAdapter>,
    pub(crate) connection: Option<Connection>,
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
        }
    }

    /// The adapter that dispatches the request (none outside an adapter).
    #[inline]
    pub fn adapter(&self) -> Option<&ObjectAdapter> {
        self.origin.as_ref()?.adapter.as_ref()
    }

    /// The connection the request arrived on (none for datagrams and outside a connection).
    #[inline]
    pub fn connection(&self) -> Option<&Connection> {
        self.origin.as_ref()?.connection.as_ref()
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
        Response { message: Some(enc.into_buffer()), tail: Some(tail) }
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
    /// or 2. A mismatch is reported as a marshal error (status 5).
    #[inline]
    pub fn check_mode(&self, declared: OperationMode) -> Result<(), Response> {
        let ok = match declared {
            OperationMode::Normal => self.mode == OperationMode::Normal,
            _ => self.mode != OperationMode::Normal,
        };
        if ok {
            Ok(())
        } else {
            Err(self.mode_mismatch(declared))
        }
    }

    #[cold]
    fn mode_mismatch(&self, declared: OperationMode) -> Response {
        self.error(&Error::UnknownLocalException(format!(
            "::Ice::MarshalException: operation mode mismatch for {}: sent {:?}, declared {:?}",
            self.operation, self.mode, declared
        )))
    }

    /// A reply reporting a local error: the request-failed errors keep their status (2–4),
    /// the unknown ones theirs (5–7), and anything else becomes UnknownLocalException.
    pub fn error(&self, e: &Error) -> Response {
        let body = match e {
            Error::ObjectNotExist { .. } => ReplyBody::ObjectNotExist(self.failed()),
            Error::FacetNotExist { .. } => ReplyBody::FacetNotExist(self.failed()),
            Error::OperationNotExist { .. } => ReplyBody::OperationNotExist(self.failed()),
            Error::UnknownUserException(s) => ReplyBody::UnknownUserException(s.clone()),
            Error::UnknownException(s) => ReplyBody::UnknownException(s.clone()),
            Error::UnknownLocalException(s) => ReplyBody::UnknownLocalException(s.clone()),
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
        let current =
            Current { origin: Some(origin), id: identity, facet, operation, mode, ctx: context, request_id, encoding };
        IncomingRequest { current, params }
    }

    /// A decoder over the parameters (proxies in them belong to the adapter's communicator).
    pub fn decoder(&self) -> Decoder {
        self.decoder_over(self.params.clone())
    }

    /// A decoder over `params` with this request's encoding and its communicator's settings.
    fn decoder_over(&self, params: Bytes) -> Decoder {
        match self.current.adapter() {
            Some(adapter) => adapter.instance().decoder(params, self.current.encoding),
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

    /// Checks that the parameters were read completely (unknown optionals are skipped).
    pub(crate) fn finish_params(dec: &mut Decoder) -> crate::encoding::Result<()> {
        if !dec.encoding().is_1_0() {
            dec.skip_remaining_optionals()?;
        }
        if !dec.is_empty() {
            return Err(crate::encoding::DecodeError::EncapsulationNotConsumed { extra: dec.remaining() });
        }
        Ok(())
    }
}

/// The encoded reply message of a dispatch (none for oneway requests). A reply whose results
/// end with a large byte sequence keeps that sequence in its own buffer (`tail`): the message's
/// sizes count it, and it is written right after the rest.
#[derive(Debug, Clone, Default)]
pub struct Response {
    message: Option<BytesMut>,
    tail: Option<Bytes>,
}

impl Response {
    /// No reply (oneway).
    pub fn none() -> Self {
        Response::default()
    }

    /// A reply made of one encoded message.
    pub fn message(message: BytesMut) -> Self {
        Response { message: Some(message), tail: None }
    }

    /// True when there is no reply to send.
    pub fn is_none(&self) -> bool {
        self.message.is_none()
    }

    /// The encoded message and the trailing bytes sent after it, if any.
    pub fn into_parts(self) -> Option<(BytesMut, Option<Bytes>)> {
        self.message.map(|m| (m, self.tail))
    }
}

/// The future a dispatch returns.
pub type DispatchFuture = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// `future` placed in `slot`, pinned: a dispatcher that gets the slot before making the
/// future (`future_in(future_slot(), async move { … })`) lets the compiler build it in place
/// instead of moving it into a new box. Generated dispatchers use it.
#[inline(always)]
pub(crate) fn future_in<F>(slot: Box<std::mem::MaybeUninit<F>>, future: F) -> DispatchFuture
where
    F: Future<Output = Response> + Send + 'static,
{
    let boxed: Box<F> = Box::write(slot, future);
    Box::into_pin(boxed)
}

/// Memory for a dispatch future of type `F`: the block of a dispatch that completed at once
/// on this thread when it has `F`'s size and alignment, or a new allocation. A connection
/// that dispatches a burst of requests to one kind of servant thus allocates one block for
/// the burst instead of one per request (see [`future_in`]).
#[inline]
pub(crate) fn future_slot<F>() -> Box<std::mem::MaybeUninit<F>> {
    match spare_block::take(std::alloc::Layout::new::<F>()) {
        // SAFETY: the block was allocated by the global allocator with exactly the layout of
        // `F` (and so of `MaybeUninit<F>`), and nothing else refers to it.
        Some(block) => unsafe { Box::from_raw(block.as_ptr().cast::<std::mem::MaybeUninit<F>>()) },
        None => Box::new_uninit(),
    }
}

/// Drops a dispatch future that has completed and keeps its memory for the next
/// [`future_slot`] on this thread.
pub(crate) fn recycle(future: DispatchFuture) {
    // SAFETY: the future is dropped in place below before its memory is used again, as
    // pinning requires; it is not moved.
    let boxed = unsafe { Pin::into_inner_unchecked(future) };
    let layout = std::alloc::Layout::for_value(&*boxed);
    if layout.size() == 0 {
        return;
    }
    let raw = Box::into_raw(boxed);
    // The block is kept only once the future's drop has returned: if it panics, the block is
    // lost, never reused.
    // SAFETY: `raw` came from a live box and is dropped exactly once.
    unsafe { std::ptr::drop_in_place(raw) };
    // SAFETY: a box of a non-zero-sized value points to a block of the global allocator.
    spare_block::keep(unsafe { std::ptr::NonNull::new_unchecked(raw.cast::<u8>()) }, layout);
}

/// The one spare dispatch-future block a thread keeps (see [`future_slot`], [`recycle`]).
mod spare_block {
    use std::alloc::Layout;
    use std::cell::Cell;
    use std::ptr::NonNull;

    /// A block of the global allocator, owned, with the layout it was allocated with.
    struct Spare(Cell<Option<(NonNull<u8>, Layout)>>);

    impl Drop for Spare {
        fn drop(&mut self) {
            if let Some((block, layout)) = self.0.take() {
                // SAFETY: the block was allocated with `layout` and is owned by this spare.
                unsafe { std::alloc::dealloc(block.as_ptr(), layout) };
            }
        }
    }

    thread_local! {
        static SPARE: Spare = const { Spare(Cell::new(None)) };
    }

    /// The spare block if it has `layout`.
    #[inline]
    pub(super) fn take(layout: Layout) -> Option<NonNull<u8>> {
        SPARE
            .try_with(|spare| match spare.0.get() {
                Some((block, kept)) if kept == layout => {
                    spare.0.set(None);
                    Some(block)
                }
                _ => None,
            })
            .ok()
            .flatten()
    }

    /// Keeps `block` (allocated with `layout`, non-zero size) as the spare, freeing the one
    /// it replaces; frees it at once when the thread is ending.
    #[inline]
    pub(super) fn keep(block: NonNull<u8>, layout: Layout) {
        let old = SPARE.try_with(|spare| spare.0.replace(Some((block, layout)))).unwrap_or(Some((block, layout)));
        if let Some((old, old_layout)) = old {
            // SAFETY: the replaced block (or `block` itself, when the thread-local is gone)
            // was allocated with its layout and is owned here.
            unsafe { std::alloc::dealloc(old.as_ptr(), old_layout) };
        }
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
    match c.operation.as_str() {
        "ice_ping" => Some(c.ok_empty()),
        "ice_isA" => {
            let mut d = request.decoder();
            Some(match d.read_string() {
                Ok(id) => {
                    let yes = ids.contains(&id.as_str());
                    c.ok(|e| e.write_bool(yes))
                }
                Err(e) => c.error(&Error::Marshal(e)),
            })
        }
        "ice_id" => Some(c.ok(|e| e.write_str(most_derived))),
        "ice_ids" => Some(c.ok(|e| {
            e.write_size(ids.len());
            for id in ids {
                e.write_str(id);
            }
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Context as TaskContext, Poll, Waker};

    /// A dispatch future of a fixed, non-trivial size that holds `token` until dropped.
    fn holding(token: Arc<()>, padding: [u8; 96]) -> DispatchFuture {
        future_in(future_slot(), async move {
            let _keep = (&token, padding);
            Response::none()
        })
    }

    fn complete(fut: &mut DispatchFuture) {
        let mut cx = TaskContext::from_waker(Waker::noop());
        assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(_)));
    }

    fn address(fut: &DispatchFuture) -> usize {
        (&**fut as *const (dyn Future<Output = Response> + Send)).cast::<u8>() as usize
    }

    /// Completes and recycles `fut`; the address of its block.
    fn complete_and_recycle(mut fut: DispatchFuture) -> usize {
        complete(&mut fut);
        let block = address(&fut);
        recycle(fut);
        block
    }

    /// A dispatch future larger than [`holding`]'s, of one type whatever the call.
    fn large() -> DispatchFuture {
        future_in(future_slot(), async move {
            let _keep = [7u8; 400];
            Response::none()
        })
    }

    #[test]
    fn a_recycled_future_is_dropped_and_its_block_serves_the_next_of_its_layout() {
        let token = Arc::new(());
        let block = complete_and_recycle(holding(token.clone(), [1; 96]));
        assert_eq!(Arc::strong_count(&token), 1, "the recycled future was dropped");

        let second = holding(token.clone(), [2; 96]);
        assert_eq!(address(&second), block, "the spare block is reused");
        complete_and_recycle(second);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    #[test]
    fn a_future_of_another_layout_gets_its_own_block_and_replaces_the_spare() {
        let small_block = complete_and_recycle(holding(Arc::new(()), [0; 96]));
        let large_future = large();
        assert_ne!(address(&large_future), small_block, "a smaller block is not handed out");
        let large_block = complete_and_recycle(large_future);

        // The large block is now the spare: not handed out for a smaller layout, which it
        // would fit...
        let smaller: Box<std::mem::MaybeUninit<[u64; 8]>> = future_slot();
        assert_ne!(smaller.as_ptr().cast::<u8>() as usize, large_block, "the layout must match exactly");
        // ...but for its own.
        assert_eq!(address(&large()), large_block, "the last recycled block is the spare");
    }

    #[test]
    fn a_zero_sized_future_is_recycled_without_a_block() {
        struct Nothing;
        impl Future for Nothing {
            type Output = Response;
            fn poll(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<Response> {
                Poll::Ready(Response::none())
            }
        }
        assert_eq!(std::mem::size_of::<Nothing>(), 0);
        // A zero-sized future has no block: recycling it must neither keep nor free one (a
        // dangling pointer given to the allocator aborts, and Miri reports it).
        let before = complete_and_recycle(holding(Arc::new(()), [3; 96]));
        complete_and_recycle(future_in(future_slot(), Nothing));
        assert_eq!(address(&holding(Arc::new(()), [3; 96])), before, "the spare block is kept");
    }

    #[test]
    fn spare_blocks_of_other_threads_are_their_own() {
        let block = complete_and_recycle(holding(Arc::new(()), [4; 96]));
        let elsewhere = std::thread::spawn(move || {
            let there = holding(Arc::new(()), [5; 96]);
            let reused = address(&there) == block;
            drop(there);
            reused
        })
        .join()
        .expect("thread");
        assert!(!elsewhere, "another thread does not take this thread's spare block");
        let again = holding(Arc::new(()), [6; 96]);
        assert_eq!(address(&again), block);
    }
}
