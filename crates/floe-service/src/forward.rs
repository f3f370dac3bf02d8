//! Forwarding a request, as it came, to another object: what IceGrid's registry and nodes do
//! with the requests for a server's admin object (`icegridadmin server properties` reaches
//! the server through its registry, then its node), and floe-router with its clients' and
//! servers' requests.

use floe::encoding::{Decoder, InvocationMode};
use floe::protocol::ReplyBody;
use floe::{Current, IncomingRequest, ObjectPrx, Outcome, Response};

/// Sends `request` to `target` (its operation, mode, context and parameters; twoway or oneway
/// as it came, in its encoding) and answers with what the target replied: its result or user
/// exception as encoded, or the local error of the call.
pub async fn forward(request: &IncomingRequest, target: ObjectPrx) -> Response {
    let c = &request.current;
    let mut target = target;
    if target.ice_get_encoding_version() != c.encoding {
        target = target.ice_encoding_version(c.encoding);
    }
    let mode = if c.is_oneway() { InvocationMode::Oneway } else { InvocationMode::Twoway };
    if target.mode() != mode {
        target = if c.is_oneway() { target.ice_oneway() } else { target.ice_twoway() };
    }
    let context = (!c.ctx.is_empty()).then(|| c.ctx.clone().into_context());
    send(c, &request.params, target, context.as_ref()).await
}

/// Sends the request `current` describes, with parameters `params` and `context`, to `target`
/// as it is (its facet, encoding and mode are the caller's), and answers with what came
/// back: the result or user exception as encoded (large ones without a copy), an empty reply
/// when nothing comes back (a oneway request), or the local error of the call. Both
/// [`forward`] and floe-router's forwarding end here.
pub async fn send(
    current: &Current,
    params: &floe::bytes::Bytes,
    target: ObjectPrx,
    context: Option<&floe::Context>,
) -> Response {
    match target.invoke_encoded(&current.operation, current.mode, context, params).await {
        Ok(None) => current.ok_empty(),
        Ok(Some(Outcome::Ok(d))) => reply(current, d, true),
        Ok(Some(Outcome::UserException(d))) => reply(current, d, false),
        Err(e) => {
            tracing::debug!(
                target: "floe_service::forward",
                "forwarding {} to {} failed: {e}",
                current.operation,
                floe::reference::identity_to_string(&current.id)
            );
            current.error(&e)
        }
    }
}

fn reply(c: &Current, d: Decoder, ok: bool) -> Response {
    let encoding = d.encoding();
    let payload = d.buffer().slice(d.position()..);
    c.reply_body(if ok { ReplyBody::Ok { encoding, payload } } else { ReplyBody::UserException { encoding, payload } })
}
