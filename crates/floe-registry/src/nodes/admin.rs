//! The node and server parts of `IceGrid::Admin`: what `icegridadmin node …` and
//! `server state/pid/start/stop/enable/disable/signal` do, through the nodes' sessions and
//! the `Server` proxies their nodes gave when the servers were loaded.

use floe::Proxy;

use super::servers::{call, Timeout};
use super::{require, timed, unreachable, NODE_CALL_TIMEOUT};
use crate::shared::Shared;
use crate::slice::ice_grid::{LoadInfo, NodeInfo, ServerState};

/// `getServerState`.
pub(crate) async fn server_state(shared: &Shared, id: &str) -> floe::Result<ServerState> {
    call(shared, id, None, |s| async move { s.get_state().await }).await
}

/// `getServerPid`.
pub(crate) async fn server_pid(shared: &Shared, id: &str) -> floe::Result<i32> {
    call(shared, id, None, |s| async move { s.get_pid().await }).await
}

/// `startServer`: returns once the server is active (or failed to start).
pub(crate) async fn start_server(shared: &Shared, id: &str) -> floe::Result<()> {
    call(shared, id, Some(Timeout::Activation), |s| async move { Ok(s.start().await?) }).await
}

/// `stopServer`: returns once the server is stopped.
pub(crate) async fn stop_server(shared: &Shared, id: &str) -> floe::Result<()> {
    call(shared, id, Some(Timeout::Deactivation), |s| async move { Ok(s.stop().await?) }).await
}

/// `enableServer`.
pub(crate) async fn enable_server(shared: &Shared, id: &str, enabled: bool) -> floe::Result<()> {
    call(shared, id, None, |s| async move { s.set_enabled(enabled).await }).await
}

/// `isServerEnabled`.
pub(crate) async fn is_server_enabled(shared: &Shared, id: &str) -> floe::Result<bool> {
    call(shared, id, None, |s| async move { s.is_enabled().await }).await
}

/// `sendSignal`.
pub(crate) async fn send_signal(shared: &Shared, id: &str, signal: &str) -> floe::Result<()> {
    call(shared, id, None, |s| async move { Ok(s.send_signal(signal).await?) }).await
}

/// `pingNode`: whether the node has a session and answers.
pub(crate) async fn ping_node(shared: &Shared, name: &str) -> floe::Result<bool> {
    match shared.nodes.live(name) {
        Some(s) => Ok(s.node().ice_ping().await.is_ok()),
        None => require(shared, name).map(|_| false).or_else(|e| {
            match shared.deployment().node_names().contains(&name.to_string()) {
                true => Ok(false),
                false => Err(e),
            }
        }),
    }
}

/// `getNodeInfo`.
pub(crate) fn node_info(shared: &Shared, name: &str) -> floe::Result<NodeInfo> {
    Ok(require(shared, name)?.node_info())
}

/// `getNodeHostname`.
pub(crate) fn node_hostname(shared: &Shared, name: &str) -> floe::Result<String> {
    Ok(require(shared, name)?.info.hostname.clone())
}

/// `getNodeLoad`: asked of the node.
pub(crate) async fn node_load(shared: &Shared, name: &str) -> floe::Result<LoadInfo> {
    let s = require(shared, name)?;
    s.node().get_load().await.map_err(|e| unreachable(name, e.to_string()))
}

/// `getNodeProcessorSocketCount`: asked of the node.
pub(crate) async fn node_socket_count(shared: &Shared, name: &str) -> floe::Result<i32> {
    let s = require(shared, name)?;
    s.node().get_processor_socket_count().await.map_err(|e| unreachable(name, e.to_string()))
}

/// `shutdownNode`.
pub(crate) async fn shutdown_node(shared: &Shared, name: &str) -> floe::Result<()> {
    let s = require(shared, name)?;
    timed(&s.node, NODE_CALL_TIMEOUT).shutdown().await.map_err(|e| unreachable(name, e.to_string()))
}

/// `getAllNodeNames`: the nodes applications declare and those with a session, sorted.
pub(crate) fn node_names(shared: &Shared) -> Vec<String> {
    let mut names = shared.deployment().node_names();
    names.extend(shared.nodes.names());
    names.sort();
    names.dedup();
    names
}
