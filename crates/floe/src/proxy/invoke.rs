//! The invocation paths of [`ObjectPrx`]: getting a connection, encoding a request, twoway,
//! oneway and datagram sends with retries, batched oneway queuing and flushing, batched
//! twoway calls.

use bytes::{Bytes, BytesMut};

use super::{locate, outcome_of, retryable, write_request_head, BatchWriter, ObjectPrx, Outcome};
use crate::connection::{Compress, Connection};
use crate::encoding::{Context, Encode, Encoder, EncodingVersion, InvocationMode, WireLayout};
use crate::error::{Error, Result};
use crate::protocol::header::{patch_size, CompressionStatus, Header, MessageType};
use crate::protocol::{OperationMode, ReplyBody, SEPARATE_TAIL_MIN};

/// How many times one call adds its proxy to the router again after the router said its
/// routing table lacks it (Ice retries without a bound).
const ROUTER_READDS_MAX: u32 = 3;

impl ObjectPrx {
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
    pub(super) async fn connect_first(&self, endpoints: &[crate::encoding::EndpointData]) -> Result<Connection> {
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

    pub(super) fn context_for<'a>(&'a self, explicit: Option<&'a Context>) -> std::borrow::Cow<'a, Context> {
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
        let metrics = self.inner.instance.metrics();
        if !metrics.active() {
            return self.invoke_unobserved(operation, mode, context, write, tail).await;
        }
        let start = metrics.invocation_begin();
        let result = self.invoke_unobserved(operation, mode, context, write, tail).await;
        if let Some(start) = start {
            let outcome = match &result {
                Ok(Some(Outcome::UserException(_))) => "user_exception",
                Ok(_) => "ok",
                Err(e) => e.ice_type_id().rsplit("::").next().unwrap_or("error"),
            };
            let invocation = match self.inner.reference.wire.mode {
                InvocationMode::Twoway => "twoway",
                InvocationMode::Oneway | InvocationMode::BatchOneway => "oneway",
                InvocationMode::Datagram | InvocationMode::BatchDatagram => "datagram",
            };
            metrics.invocation_end(start, operation, invocation, outcome);
        }
        result
    }

    /// [`invoke_unbatched`](Self::invoke_unbatched) without counting it.
    async fn invoke_unobserved(
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
    pub(super) async fn send_with_retry(
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
        let mut readded = 0;
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
                // A router whose routing table lacks this proxy (evicted, or added in a session
                // that ended) answers `ice_add_proxy`: as Ice does, add the proxy again and
                // retry, a bounded number of times.
                Ok(Some(ReplyBody::ObjectNotExist(ref f)))
                    if f.operation == "ice_add_proxy"
                        && readded < ROUTER_READDS_MAX
                        && self.inner.fixed.is_none()
                        && self.forget_routing() =>
                {
                    readded += 1;
                    *self.inner.connection.lock().expect("proxy connection") = None;
                    tracing::debug!(target: "floe::router", "{self}: not in the router's routing table, adding it again");
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
