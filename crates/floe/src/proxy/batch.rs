//! [`BatchWriter`]: queues batched oneway requests synchronously, without a future, a lock or
//! a per-call encapsulation of the target — the fast path for high-rate batching.

use crate::encoding::{Encode, Encoder, EncodingVersion};
use crate::error::Result;
use std::collections::VecDeque;

use bytes::BytesMut;

use crate::protocol::{BatchBuilder, OperationMode};

use super::ObjectPrx;

/// Queues batched oneway requests for one proxy's target in buffers of its own, and sends
/// them with [`BatchWriter::flush`].
///
/// Queuing is a plain function call that does no I/O: the request head (identity, facet,
/// operation, mode, context and, for operations without parameters, the whole encapsulation)
/// is encoded once per operation and copied afterwards, so a request without parameters costs
/// one copy of a few bytes. Generated proxies wrap it with one typed method per
/// oneway-capable operation (`FooPrx::batch_writer()` returns a `FooBatch`).
///
/// Requests are packed into batch messages of at most `Ice.BatchAutoFlushSize` bytes (which
/// a peer with the same `Ice.MessageSizeMax` accepts); once a message is full the next one
/// starts, and [`BatchWriter::needs_flush`] turns true. Unlike a batch-oneway proxy, the
/// writer never flushes by itself: [`BatchWriter::flush`] sends every full message and the
/// one being filled, in order, so the caller decides when to pay for the I/O — as often as
/// `needs_flush` says to keep memory flat, or once after queuing many messages' worth.
/// Requests still queued when the writer is dropped move to the proxy's own batch queue,
/// where [`ObjectPrx::ice_flush_batch_requests`] sends them; nothing queued is lost.
///
/// The context is taken when the writer is made (the proxy's context merged over the
/// communicator's implicit context), as is the encoding.
pub struct BatchWriter {
    proxy: ObjectPrx,
    builder: BatchBuilder,
    /// Full messages waiting for `flush`, with their request counts.
    full: VecDeque<(BytesMut, usize)>,
    /// Number of requests in `full`.
    full_requests: usize,
    context: Vec<u8>,
    encoding: EncodingVersion,
    /// The communicator's default class format (`Ice.Default.SlicedFormat`).
    format: crate::encoding::FormatType,
    heads: Vec<Head>,
    last: usize,
    auto_flush_size: usize,
}

/// The encoded head of one operation's requests.
struct Head {
    operation: String,
    mode: OperationMode,
    /// Target, operation, mode, context, then an empty encapsulation (6 bytes).
    bytes: Vec<u8>,
}

/// `a == b`, inlined for the short names operations have (a call to `memcmp` would cost more
/// than queuing the rest of a request does).
#[inline]
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

impl std::fmt::Debug for BatchWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchWriter")
            .field("proxy", &self.proxy)
            .field("queued", &self.len())
            .field("full_messages", &self.full.len())
            .finish()
    }
}

impl BatchWriter {
    pub(super) fn new(proxy: ObjectPrx) -> Self {
        let ctx = proxy.context_for(None);
        let mut e = Encoder::new(EncodingVersion::V1_0);
        ctx.encode(&mut e);
        let context = e.as_slice().to_vec();
        let encoding = proxy.inner.reference.wire.encoding.compatible().unwrap_or(EncodingVersion::V1_1);
        let auto_flush_size = proxy.inner.instance.batch_auto_flush_size();
        let format = proxy.inner.instance.default_format();
        BatchWriter {
            proxy,
            builder: BatchBuilder::new(),
            full: VecDeque::new(),
            full_requests: 0,
            context,
            encoding,
            format,
            heads: Vec::new(),
            last: 0,
            auto_flush_size,
        }
    }

    /// The proxy the requests go to.
    pub fn proxy(&self) -> &ObjectPrx {
        &self.proxy
    }

    #[inline]
    fn head(&mut self, operation: &str, mode: OperationMode) -> usize {
        if let Some(h) = self.heads.get(self.last) {
            if h.mode == mode && same_name(&h.operation, operation) {
                return self.last;
            }
        }
        let i = match self.heads.iter().position(|h| h.mode == mode && h.operation == operation) {
            Some(i) => i,
            None => {
                let mut e = Encoder::new(EncodingVersion::V1_0);
                e.write_raw(&self.proxy.inner.target);
                e.write_str(operation);
                e.write_u8(mode as u8);
                e.write_raw(&self.context);
                e.write_empty_encapsulation(self.encoding);
                self.heads.push(Head { operation: operation.to_string(), mode, bytes: e.as_slice().to_vec() });
                self.heads.len() - 1
            }
        };
        self.last = i;
        i
    }

    /// Queues a request without parameters.
    #[inline]
    pub fn queue_empty(&mut self, operation: &str, mode: OperationMode) {
        let i = self.head(operation, mode);
        self.builder.push_request_bytes(&self.heads[i].bytes);
        self.seal_if_full();
    }

    /// Queues a request whose parameters `write` encodes.
    #[inline]
    pub fn queue(&mut self, operation: &str, mode: OperationMode, write: impl FnOnce(&mut Encoder)) {
        let i = self.head(operation, mode);
        let enc = self.builder.start_request_raw();
        // One copy of the head and the empty encapsulation's header, then the parameters.
        let head = &self.heads[i].bytes;
        let encapsulation = enc.len() + head.len() - 6;
        enc.write_raw(head);
        enc.resume_encapsulation(encapsulation, self.encoding);
        enc.set_format(self.format);
        write(enc);
        self.builder.finish_request();
        self.seal_if_full();
    }

    #[inline]
    fn seal_if_full(&mut self) {
        if self.builder.len() >= self.auto_flush_size {
            self.seal();
        }
    }

    #[cold]
    fn seal(&mut self) {
        let before = self.builder.count();
        if let Some(msg) = self.builder.take_full(self.auto_flush_size) {
            let n = before - self.builder.count();
            self.full.push_back((msg, n));
            self.full_requests += n;
        }
    }

    /// Number of requests queued.
    pub fn len(&self) -> usize {
        self.builder.count() + self.full_requests
    }

    /// True when no request is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True once the queued requests fill at least one message of `Ice.BatchAutoFlushSize`
    /// bytes: time to flush, unless the caller means to queue more first.
    #[inline]
    pub fn needs_flush(&self) -> bool {
        !self.full.is_empty()
    }

    /// Sends the queued requests: the full messages, then the one being filled (nothing when
    /// no request is queued). A failure drops the message that failed; the messages after it
    /// stay queued for the next flush.
    pub async fn flush(&mut self) -> Result<()> {
        let before = self.builder.count();
        if let Some(msg) = self.builder.take() {
            self.full.push_back((msg, before));
            self.full_requests += before;
        }
        while let Some((msg, n)) = self.full.pop_front() {
            self.full_requests -= n;
            self.proxy.send_with_retry(msg, None, OperationMode::Normal, false).await?;
        }
        Ok(())
    }
}

impl Drop for BatchWriter {
    fn drop(&mut self) {
        if self.is_empty() {
            return;
        }
        // A poisoned queue (a parameter writer panicked while queuing on the proxy) may hold
        // half a request: the proxy's batch is unusable then, and these requests are dropped
        // rather than queued after it.
        if let Ok(mut q) = self.proxy.inner.batch.lock() {
            // After the proxy's own requests, as whole messages: appended to the proxy's
            // batch, a full message's worth would make one message too large to send.
            let before = q.builder.count();
            if let Some(own) = q.builder.take() {
                q.full.push_back((own, before));
            }
            q.full.extend(self.full.drain(..));
            let mine = self.builder.count();
            if let Some(last) = self.builder.take() {
                q.full.push_back((last, mine));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::encoding::{Decoder, Identity};
    use crate::protocol::BatchRequests;
    use crate::{Communicator, Properties};

    use super::*;

    #[test]
    fn queued_requests_decode_as_a_batch_and_move_to_the_proxy_on_drop() {
        let communicator = Communicator::with_properties(Properties::new()).unwrap();
        let proxy = communicator.string_to_proxy("cat/obj -f fac:tcp -h 127.0.0.1 -p 1").unwrap();
        let proxy = proxy.ice_context([("k".to_string(), "v".to_string())].into_iter().collect());
        let mut w = proxy.batch_writer();
        w.queue_empty("ping", OperationMode::Idempotent);
        w.queue("add", OperationMode::Normal, |e| e.write_i32(7));
        w.queue_empty("ping", OperationMode::Idempotent);
        assert_eq!(w.len(), 3);
        let msg = w.builder.take().unwrap();
        let requests: Vec<_> =
            BatchRequests::new(msg.freeze().slice(14..)).unwrap().collect::<std::result::Result<_, _>>().unwrap();
        assert_eq!(requests.len(), 3);
        for r in &requests {
            assert_eq!(r.identity, Identity { name: "obj".into(), category: "cat".into() });
            assert_eq!(r.facet, "fac");
            assert_eq!(r.context.get("k").map(String::as_str), Some("v"));
            assert_eq!(r.request_id, 0);
        }
        assert_eq!((requests[0].operation.as_str(), requests[0].mode), ("ping", OperationMode::Idempotent));
        assert!(requests[0].params.is_empty());
        assert_eq!(requests[1].operation, "add");
        assert_eq!(Decoder::new(requests[1].params.clone(), requests[1].encoding).read_i32().unwrap(), 7);
        assert_eq!(requests[2].operation, "ping");

        w.queue_empty("ping", OperationMode::Normal);
        assert!(!w.needs_flush());
        drop(w);
        assert_eq!(proxy.batch_request_count(), 1);
        communicator.destroy_blocking();
    }
}
