//! What a dispatch produces, below the connection that writes it: the encoded reply
//! ([`Response`]), the future a dispatcher returns ([`DispatchFuture`]), and the reuse of a
//! completed dispatch or invocation future's memory by the next one on the same thread.

use std::future::Future;
use std::pin::Pin;

use bytes::{Bytes, BytesMut};

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

    /// A reply made of an encoded message whose sizes count `tail`, written right after it
    /// from its own buffer.
    pub(crate) fn message_with_tail(message: BytesMut, tail: Bytes) -> Self {
        Response { message: Some(message), tail: Some(tail) }
    }

    /// True when there is no reply to send.
    pub fn is_none(&self) -> bool {
        self.message.is_none()
    }

    /// The reply status and the size of the reply's encapsulation (with its header, 0 when
    /// the status has none), when there is a reply.
    pub(crate) fn reply_summary(&self) -> Option<(u8, i64)> {
        let message = self.message.as_ref()?;
        let status = *message.get(18)?;
        let total = message.len() + self.tail.as_ref().map_or(0, |t| t.len());
        let size = if status <= 1 { total.saturating_sub(19) as i64 } else { 0 };
        Some((status, size))
    }

    /// The encoded message and the trailing bytes sent after it, if any.
    pub fn into_parts(self) -> Option<(BytesMut, Option<Bytes>)> {
        self.message.map(|m| (m, self.tail))
    }
}

/// The future a dispatch returns.
pub type DispatchFuture = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// Memory for the future of one dispatch, taken before the future is made, so that the
/// future is built in place instead of being moved into a box of its own: a servant's
/// [`dispatch`](crate::Dispatcher::dispatch) returns
/// `DispatchSlot::new().put(async move { … })`. The memory is the block of a dispatch that
/// completed at once on this thread when it has the future's layout, or a new allocation,
/// so that a connection dispatching a burst of requests to one servant allocates once.
///
/// ```
/// use floe::{DispatchFuture, DispatchSlot, Dispatcher, IncomingRequest};
///
/// struct Hello;
///
/// impl Dispatcher for Hello {
///     fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
///         DispatchSlot::new().put(async move { request.current.ok(|e| e.write_str("hello")) })
///     }
/// }
/// ```
pub struct DispatchSlot<F>(Box<std::mem::MaybeUninit<F>>);

impl<F> std::fmt::Debug for DispatchSlot<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchSlot").finish_non_exhaustive()
    }
}

impl<F: Future<Output = Response> + Send + 'static> DispatchSlot<F> {
    /// Memory for a dispatch future of type `F` (inferred from [`put`](Self::put)).
    #[inline]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        DispatchSlot(future_slot())
    }

    /// Wraps memory taken with [`future_slot`].
    #[inline(always)]
    pub(crate) fn from_box(slot: Box<std::mem::MaybeUninit<F>>) -> Self {
        DispatchSlot(slot)
    }

    /// The dispatch future: `future`, placed in this memory and pinned.
    #[inline(always)]
    pub fn put(self, future: F) -> DispatchFuture {
        future_in(self.0, future)
    }
}

/// `future` placed in `slot`, pinned: a dispatcher that gets the slot before making the
/// future (`future_in(future_slot(), async move { … })`) lets the compiler build it in place
/// instead of moving it into a new box. Generated dispatchers use it.
#[inline(always)]
pub(crate) fn future_in<F>(slot: Box<std::mem::MaybeUninit<F>>, future: F) -> DispatchFuture
where
    F: Future<Output = Response> + Send + 'static,
{
    let pinned: Pin<Box<F>> = boxed_in(slot, future);
    pinned
}

/// `future` in `slot`, pinned. Called as `boxed_in(Box::new_uninit(), make_future())` (or with
/// [`future_slot`]), the box is allocated before the future is made (arguments are evaluated
/// in order), so that the compiler can build the future in it rather than on the stack and
/// then copy it, whole, into a new box: dispatch and invocation futures hold every state of a
/// call and are hundreds of bytes.
#[inline(always)]
pub(crate) fn boxed_in<F: Future>(slot: Box<std::mem::MaybeUninit<F>>, future: F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(slot, future))
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

/// Drops a boxed future that has completed (a dispatch's, or an invocation's through
/// [`Recycling`]) and keeps its memory for the next [`future_slot`] on this thread.
pub(crate) fn recycle<T: ?Sized>(future: Pin<Box<T>>) {
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

/// A boxed future whose block, once the future has completed, is kept for the next
/// [`future_slot`] of its layout on the thread where it completed (see [`recycle`]). An
/// invocation future is made and completed once per call: a caller making call after call
/// reuses one block instead of allocating one per call. A future dropped before it completes
/// frees its block as usual.
pub(crate) struct Recycling<F: Future>(Option<Pin<Box<F>>>);

impl<F: Future> Recycling<F> {
    /// Wraps a future boxed with [`boxed_in`] (in a [`future_slot`]).
    #[inline]
    pub(crate) fn new(future: Pin<Box<F>>) -> Self {
        Recycling(Some(future))
    }
}

impl<F: Future> Future for Recycling<F> {
    type Output = F::Output;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let inner = self.0.as_mut().expect("a Recycling future polled after it completed");
        let output = std::task::ready!(inner.as_mut().poll(cx));
        if let Some(done) = self.0.take() {
            recycle(done);
        }
        std::task::Poll::Ready(output)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
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

    /// A `Recycling` future that holds `token` and a padding of 160 bytes until dropped,
    /// pending on its first poll and ready with 7 on its second; its block's address and
    /// layout.
    fn recycling(token: Arc<()>) -> (Recycling<impl Future<Output = u32>>, usize, std::alloc::Layout) {
        let mut polled = false;
        let future = std::future::poll_fn(move |cx: &mut TaskContext<'_>| {
            let _keep = (&token, [9u8; 160]);
            if polled {
                Poll::Ready(7)
            } else {
                polled = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        });
        let boxed = boxed_in(future_slot(), future);
        let block = (&*boxed as *const _ as *const u8) as usize;
        let layout = std::alloc::Layout::for_value(&*boxed);
        (Recycling::new(boxed), block, layout)
    }

    #[test]
    fn a_completed_recycling_future_drops_its_future_and_its_block_serves_the_next() {
        let mut cx = TaskContext::from_waker(Waker::noop());
        let token = Arc::new(());
        let (mut first, block, layout) = recycling(token.clone());
        assert!(Pin::new(&mut first).poll(&mut cx).is_pending());
        assert_eq!(Pin::new(&mut first).poll(&mut cx), Poll::Ready(7));
        assert_eq!(Arc::strong_count(&token), 1, "the completed future was dropped at once");
        drop(first);
        // A block of the same layout taken from the allocator meanwhile: had the first block
        // been freed, the allocator would hand it out here, and not to the next future.
        // SAFETY: the layout has a non-zero size; the block is freed below with it.
        let decoy = unsafe { std::alloc::alloc(layout) };
        assert!(!decoy.is_null());

        let (mut second, second_block, _) = recycling(token.clone());
        assert_eq!(second_block, block, "the completed future's block is reused");
        // Dropped before it completes: its future is dropped with it.
        assert!(Pin::new(&mut second).poll(&mut cx).is_pending());
        drop(second);
        assert_eq!(Arc::strong_count(&token), 1);
        // SAFETY: allocated above with `layout`.
        unsafe { std::alloc::dealloc(decoy, layout) };
    }
}
