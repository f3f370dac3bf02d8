//! Forwarding: the default servants of the client adapter (a client's requests to the
//! proxies in its routing table) and of the server adapter (servers' callbacks over the
//! client's connection), with the `_fwd` options and the session's queues.

use std::sync::Arc;

use floe::encoding::{EncodingVersion, InvocationMode};
use floe::protocol::reply::RequestFailed;
use floe::protocol::ReplyBody;
use floe::reference::{identity_to_string, Reference};
use floe::{Context, Current, DispatchFuture, DispatchSlot, Dispatcher, Error, IncomingRequest, ObjectPrx, Response};
use tracing::debug;

use crate::outbox::{Outbox, Pending};
use crate::sessions::Session;
use crate::state::RouterCore;

/// letter in turn, the last mode letter winning — `t` twoway, `o` oneway, `d` datagram, `O`
/// batch oneway and `D` batch datagram (buffered; oneway and datagram unbuffered), `s` a
/// secure connection, `z` compression. Other letters are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FwdOptions {
    /// The invocation mode asked for, if any.
    pub mode: Option<InvocationMode>,
    /// Forward over a secure endpoint only.
    pub secure: bool,
    /// Compress the forwarded request.
    pub compress: bool,
}

impl FwdOptions {
    /// Reads a `_fwd` value; `buffered` says whether the batch modes are available.
    pub fn parse(value: &str, buffered: bool) -> FwdOptions {
        let mut options = FwdOptions::default();
        for letter in value.chars() {
            match letter {
                't' => options.mode = Some(InvocationMode::Twoway),
                'o' => options.mode = Some(InvocationMode::Oneway),
                'd' => options.mode = Some(InvocationMode::Datagram),
                'O' if buffered => options.mode = Some(InvocationMode::BatchOneway),
                'O' => options.mode = Some(InvocationMode::Oneway),
                'D' if buffered => options.mode = Some(InvocationMode::BatchDatagram),
                'D' => options.mode = Some(InvocationMode::Datagram),
                's' => options.secure = true,
                'z' => options.compress = true,
                // Glacier2 warns; a debug line here, so that a client cannot flood the log.
                other => debug!(target: "floe::router", "unknown forward option `{other}'"),
            }
        }
        options
    }

    /// `target` with the endpoint options asked for.
    fn apply(&self, mut target: ObjectPrx) -> ObjectPrx {
        if self.secure {
            target = target.ice_secure(true);
        }
        if self.compress {
            target = target.ice_compress(true);
        }
        target
    }
}

/// The `_fwd` options of a request, if it has a `_fwd` context.
fn fwd_options(current: &Current, buffered: bool) -> Option<FwdOptions> {
    current.ctx.get("_fwd").map(|v| FwdOptions::parse(v.as_str(), buffered))
}

/// The mode a request is forwarded in (twoway, oneway or datagram), as the client sent it
/// unless `_fwd` says otherwise.
fn forward_mode(current: &Current, fwd: Option<&FwdOptions>) -> InvocationMode {
    match fwd.and_then(|f| f.mode) {
        Some(mode) => mode,
        None if current.is_oneway() => InvocationMode::Oneway,
        None => InvocationMode::Twoway,
    }
}

/// `target` as `current` asks for it: its facet, encoding and invocation `mode`.
fn prepared(current: &Current, target: ObjectPrx, encoding: EncodingVersion, mode: InvocationMode) -> ObjectPrx {
    // Each derived proxy is a new proxy (and looks its connection up again): derive only what
    // differs from the routing table's proxy, which is usually nothing for twoway requests.
    let mut target = target;
    if target.ice_get_facet() != current.facet.as_str() {
        target = target.ice_facet(&current.facet);
    }
    if target.ice_get_encoding_version() != encoding {
        target = target.ice_encoding_version(encoding);
    }
    if target.mode() != mode {
        target = match mode {
            InvocationMode::Twoway => target.ice_twoway(),
            InvocationMode::Oneway => target.ice_oneway(),
            InvocationMode::BatchOneway => target.ice_batch_oneway(),
            InvocationMode::Datagram => target.ice_datagram(),
            InvocationMode::BatchDatagram => target.ice_batch_datagram(),
        };
    }
    target
}

/// Forwards a request that is not batched, in `mode` (twoway, oneway or datagram), as
/// `buffered` says: buffered, a oneway (or datagram) request goes through the session's
/// queue (where a newer one with the same `_ovrd` value may replace it) and a twoway one
/// follows the requests queued before it; unbuffered, each request is forwarded in the order
/// it was read, a twoway one without waiting for its reply. A twoway request forwarded
/// without a reply (`_fwd`) gets an empty one, once queued (buffered) or sent (unbuffered).
async fn forward_in_order(
    outbox: &Outbox,
    buffered: bool,
    request: &IncomingRequest,
    target: ObjectPrx,
    context: Option<Context>,
    mode: InvocationMode,
) -> Response {
    let c = &request.current;
    let target = prepared(c, target, c.encoding, mode);
    let twoway = mode == InvocationMode::Twoway;
    if !buffered {
        return outbox.in_turn(!twoway, || forward(c, &request.params, target, context)).await;
    }
    if twoway {
        return outbox.twoway(|| forward(c, &request.params, target, context)).await;
    }
    let ovrd = c.ctx.get("_ovrd").filter(|v| !v.is_empty()).map(|v| (v.as_str().into(), target.to_string()));
    outbox
        .oneway(Pending {
            target,
            operation: c.operation.clone(),
            mode: c.mode,
            context,
            params: request.params.clone(),
            ovrd,
        })
        .await;
    c.ok_empty()
}

async fn forward(
    current: &Current,
    params: &floe::bytes::Bytes,
    target: ObjectPrx,
    context: Option<Context>,
) -> Response {
    floe_service::forward::send(current, params, target, context.as_ref()).await
}

/// The default servant of the client adapter: forwards a client's requests to the proxies it
/// added to its routing table.
pub(crate) struct ClientForwarder(pub(crate) Arc<RouterCore>);

impl Dispatcher for ClientForwarder {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let core = self.0.clone();
        // Built in its box (and in the block of a forward that completed at once, such as a
        // oneway's), not moved into a new one.
        DispatchSlot::new().put(async move {
            let c = &request.current;
            let Some(session) = c.connection().and_then(|conn| core.sessions.of_connection(conn)) else {
                // As Glacier2 does, the connection of a client without a session is closed:
                // that is how a client whose session a session manager destroyed learns of it.
                debug!(target: "floe::router", "request for {} without a session", identity_to_string(&c.id));
                if let Some(conn) = c.connection() {
                    conn.close_forcefully(Error::ConnectionLost("request without a Glacier2 session".into()));
                }
                return c.object_not_exist();
            };
            core.sessions.touch(&session);
            let Some(target) = session.route(&c.id) else {
                // As Glacier2 does: the operation `ice_add_proxy` tells the client that its
                // proxy is not in the session's routing table (evicted, or added in an earlier
                // session), so that Ice's client runtime adds it again and retries.
                return c.reply_body(ReplyBody::ObjectNotExist(RequestFailed {
                    identity: c.id.clone(),
                    facet: c.facet.to_string(),
                    operation: "ice_add_proxy".to_string(),
                }));
            };
            if !session.filters.accepts(&c.id, &target.reference().wire.adapter_id) {
                debug!(target: "floe::router", "request for {} refused by the filters", identity_to_string(&c.id));
                return c.object_not_exist();
            }
            let context = RouterCore::forward_context(c, &session, core.config.client_forward_context);
            let buffered = core.config.client_buffered;
            let fwd = fwd_options(c, buffered);
            let target = match &fwd {
                Some(f) => f.apply(target),
                None => target,
            };
            let mode = fwd.and_then(|f| f.mode);
            let batch = match mode {
                Some(m @ (InvocationMode::BatchOneway | InvocationMode::BatchDatagram)) => Some(m),
                // A batched request is forwarded in a batch, unless `_fwd` gives another mode
                // or, buffered, it has an `_ovrd` value: then it is queued as a oneway request,
                // where a newer one may replace it, as glacier2router queues it.
                None if c.is_batched() && !(buffered && c.ctx.get("_ovrd").is_some_and(|v| !v.is_empty())) => {
                    Some(InvocationMode::BatchOneway)
                }
                _ => None,
            };
            if let Some(batch) = batch {
                forward_batched(&session, &request, target, context, batch, fwd.unwrap_or_default()).await;
                return c.ok_empty();
            }
            // Any other request goes after the batched requests the client sent before it.
            session.flush_oneways().await;
            let mode = forward_mode(c, fwd.as_ref());
            forward_in_order(&session.client_outbox, buffered, &request, target, context, mode).await
        })
    }
}

/// Queues a client's request with the other batched requests for the same target (and
/// `mode`, batch oneway or batch datagram), to be sent together once the requests read with
/// it are queued too, as a batch. `fwd` is the request's `_fwd` options (applied to
/// `target` already), which keep requests apart.
async fn forward_batched(
    session: &Arc<Session>,
    request: &IncomingRequest,
    target: ObjectPrx,
    context: Option<Context>,
    mode: InvocationMode,
    fwd: FwdOptions,
) {
    let c = &request.current;
    let key =
        format!("{target} -f {:?} -e {} {mode:?} s{} z{}", c.facet.as_str(), c.encoding, fwd.secure, fwd.compress);
    let batch = session.batch_proxy(key.clone(), || prepared(c, target, c.encoding, mode));
    if let Err(e) = batch.invoke(&c.operation, c.mode, context.as_ref(), |e| e.write_raw(&request.params)).await {
        debug!(target: "floe::router", "forwarding {} failed: {e}", c.operation);
    }
    if session.queued(&key) {
        let session = session.clone();
        tokio::spawn(async move { session.flush_oneways().await });
    }
}

/// The default servant of the server adapter: forwards callbacks to the client whose
/// category they are for, over that client's connection.
pub(crate) struct ServerForwarder(pub(crate) Arc<RouterCore>);

impl Dispatcher for ServerForwarder {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let core = self.0.clone();
        // Built in its box (and in the block of a forward that completed at once, such as a
        // oneway's), not moved into a new one.
        DispatchSlot::new().put(async move {
            let c = &request.current;
            let Some(session) = core.sessions.of_category(&c.id.category) else {
                return c.object_not_exist();
            };
            let reference = Reference::new(c.id.clone());
            let target =
                ObjectPrx::from_reference(core.communicator.clone(), reference).ice_fixed(session.connection.clone());
            let context = if core.config.server_forward_context { Some(c.ctx.clone().into_context()) } else { None };
            let context = context.filter(|ctx| !ctx.is_empty());
            let buffered = core.config.server_buffered;
            // `_fwd`: callbacks have no batches here, a batch mode is forwarded as oneway or
            // datagram.
            let fwd = fwd_options(c, buffered).map(|mut f| {
                f.mode = f.mode.map(|m| match m {
                    InvocationMode::BatchOneway => InvocationMode::Oneway,
                    InvocationMode::BatchDatagram => InvocationMode::Datagram,
                    m => m,
                });
                f
            });
            let target = match &fwd {
                Some(f) => f.apply(target),
                None => target,
            };
            let mode = forward_mode(c, fwd.as_ref());
            forward_in_order(&session.server_outbox, buffered, &request, target, context, mode).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fwd_letters_are_read_in_turn() {
        let parse = FwdOptions::parse;
        assert_eq!(parse("", true), FwdOptions::default());
        assert_eq!(parse("o", true).mode, Some(InvocationMode::Oneway));
        assert_eq!(parse("ot", true).mode, Some(InvocationMode::Twoway), "the last mode wins");
        assert_eq!(parse("O", true).mode, Some(InvocationMode::BatchOneway));
        assert_eq!(parse("O", false).mode, Some(InvocationMode::Oneway), "no batches unbuffered");
        assert_eq!(parse("D", true).mode, Some(InvocationMode::BatchDatagram));
        assert_eq!(parse("D", false).mode, Some(InvocationMode::Datagram));
        assert_eq!(parse("d", true).mode, Some(InvocationMode::Datagram));
        let f = parse("zsx?", true);
        assert_eq!((f.mode, f.secure, f.compress), (None, true, true), "unknown letters are ignored");
    }
}
