//! The `Dispatch` map of the IceMX metrics views: the attributes of a request an adapter
//! dispatches, and the wrapper that counts it while it runs (only when a view is enabled).

use std::sync::Arc;

use crate::connection::Connection;
use crate::dispatch::DispatchFuture;
use crate::metrics::{Attributes, Metrics, Observer, Outcome};

/// A request as the `Dispatch` map sees it.
pub(super) struct DispatchAttributes<'a> {
    pub(super) request: &'a crate::protocol::Request,
    pub(super) adapter: &'a str,
    pub(super) connection: Option<&'a Connection>,
}

impl Attributes for DispatchAttributes<'_> {
    fn attribute(&self, name: &str) -> Option<String> {
        let r = self.request;
        let identity = || crate::reference::identity_to_string(&r.identity);
        let local = || self.connection.and_then(Connection::local_address);
        let remote = || self.connection.and_then(Connection::remote_address);
        Some(match name {
            "parent" | "adapterName" => self.adapter.to_string(),
            "id" => format!("{} [{}]", identity(), r.operation),
            "operation" => r.operation.to_string(),
            "identity" => identity(),
            "facet" => r.facet.to_string(),
            "encodingVersion" => format!("{}.{}", r.encoding.major, r.encoding.minor),
            "mode" => if r.request_id == 0 { "oneway" } else { "twoway" }.to_string(),
            "requestId" => r.request_id.to_string(),
            "incoming" => "true".to_string(),
            "connectionId" => String::new(),
            "endpoint" | "endpointType" | "endpointIsDatagram" | "endpointIsSecure" | "endpointTimeout"
            | "endpointCompress" | "endpointHost" | "endpointPort" | "mcastHost" | "mcastPort" => {
                return self.endpoint_attribute(name)
            }
            "localHost" => local()?.ip().to_string(),
            "localPort" => local()?.port().to_string(),
            "remoteHost" => remote()?.ip().to_string(),
            "remotePort" => remote()?.port().to_string(),
            _ => {
                let key = name.strip_prefix("context.")?;
                r.context.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v.to_string())?
            }
        })
    }
}

impl DispatchAttributes<'_> {
    fn endpoint_attribute(&self, name: &str) -> Option<String> {
        let c = self.connection?;
        let local = c.local_address()?;
        Some(match name {
            "endpoint" => c.description().to_string(),
            "endpointType" => "1".to_string(),
            "endpointIsDatagram" | "endpointIsSecure" | "endpointCompress" => "false".to_string(),
            "endpointTimeout" => "-1".to_string(),
            "endpointHost" => local.ip().to_string(),
            "endpointPort" => local.port().to_string(),
            _ => return None,
        })
    }
}

/// A dispatch being counted: its observer and the size of its parameters.
pub(super) struct Observed(Observer, i64);

/// Starts counting a dispatch in the `Dispatch` maps of the enabled views.
pub(super) fn begin(metrics: &Metrics, attributes: &DispatchAttributes<'_>) -> Observed {
    let size = attributes.request.params.len() as i64 + 6;
    Observed(metrics.begin("Dispatch", attributes), size)
}

/// Wraps the dispatch's future so that its end is counted with what it replied.
pub(super) fn finish(metrics: Arc<Metrics>, observed: Observed, future: DispatchFuture) -> DispatchFuture {
    let Observed(observer, size) = observed;
    Box::pin(async move {
        let response = future.await;
        let mut outcome = Outcome { size, ..Outcome::default() };
        if let Some((status, reply_size)) = response.reply_summary() {
            match status {
                0 => outcome.reply_size = reply_size,
                1 => {
                    outcome.reply_size = reply_size;
                    outcome.user_exception = true;
                }
                2 => outcome.failure = Some("::Ice::ObjectNotExistException".into()),
                3 => outcome.failure = Some("::Ice::FacetNotExistException".into()),
                4 => outcome.failure = Some("::Ice::OperationNotExistException".into()),
                5 => outcome.failure = Some("::Ice::UnknownLocalException".into()),
                6 => outcome.failure = Some("::Ice::UnknownUserException".into()),
                _ => outcome.failure = Some("::Ice::UnknownException".into()),
            }
        }
        metrics.end(observer, outcome);
        response
    })
}
