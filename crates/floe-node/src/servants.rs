//! The node's objects for the registry: `<instance>/Node-<name>` (an `IceGrid::Node`) and
//! one `<instance>-Server/<id>` (an `IceGrid::Server`) per loaded server.

use std::sync::Arc;

use floe::{Current, Error};
use floe_icegrid::ice::{ProcessPrx, StringSeq};
use floe_icegrid::ice_grid::{
    AdapterPrxDict, BadSignalException, DeploymentException, FileReader, InternalDistributionDescriptor,
    InternalRegistryPrx, InternalRegistryPrxSeq, InternalServerDescriptor, LoadInfo, Node, PatcherFeedbackPrx,
    ReplicaObserver, Server, ServerPrx, ServerState,
};

use crate::files;
use crate::node::NodeShared;
use crate::platform;
use crate::server::{gone, start_error, stop_error, ServerEntry};

/// `<instance>/Node-<name>`.
pub struct NodeServant(pub Arc<NodeShared>);

fn descriptor(svr: Option<floe::Class<InternalServerDescriptor>>) -> floe::Result<InternalServerDescriptor> {
    match svr {
        Some(d) => Ok(d.read().clone()),
        None => Err(Error::user(DeploymentException { reason: "no server descriptor".into() })),
    }
}

impl NodeServant {
    async fn load(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        restart: bool,
    ) -> floe::Result<(Option<ServerPrx>, AdapterPrxDict, i32, i32)> {
        let desc = descriptor(svr)?;
        tracing::debug!(target: "floe_node::server", server = %desc.id, revision = desc.revision, "loadServer");
        match self.0.load_server(desc, restart).await {
            Ok((proxy, adapters, at, dt)) => Ok((Some(proxy), adapters, at, dt)),
            Err(reason) => Err(Error::user(DeploymentException { reason })),
        }
    }
}

impl Node for NodeServant {
    async fn load_server(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        _replica_name: String,
        _current: &Current,
    ) -> floe::Result<(Option<ServerPrx>, AdapterPrxDict, i32, i32)> {
        self.load(svr, true).await
    }

    async fn load_server_without_restart(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        _replica_name: String,
        _current: &Current,
    ) -> floe::Result<(Option<ServerPrx>, AdapterPrxDict, i32, i32)> {
        self.load(svr, false).await
    }

    async fn destroy_server(&self, name: String, _: String, _: i32, _: String, _: &Current) -> floe::Result<()> {
        self.0.destroy_server(&name).await;
        Ok(())
    }

    async fn destroy_server_without_restart(
        &self,
        name: String,
        _: String,
        _: i32,
        _: String,
        _: &Current,
    ) -> floe::Result<()> {
        self.0.destroy_server(&name).await;
        Ok(())
    }

    async fn patch(
        &self,
        feedback: Option<PatcherFeedbackPrx>,
        _application: String,
        _server: String,
        _app_distrib: Option<floe::Class<InternalDistributionDescriptor>>,
        _shutdown: bool,
        _current: &Current,
    ) -> floe::Result<()> {
        // IcePatch2 distributions are not supported: say so to the caller's feedback object.
        if let Some(f) = feedback {
            let _ = f.failed("floe-node does not patch IcePatch2 distributions").await;
        }
        Ok(())
    }

    async fn register_with_replica(&self, _replica: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        // One registry (the one of Ice.Default.Locator) holds the node's session.
        Ok(())
    }

    async fn get_name(&self, _: &Current) -> floe::Result<String> {
        Ok(self.0.config.name.clone())
    }

    async fn get_hostname(&self, _: &Current) -> floe::Result<String> {
        Ok(platform::node_info(&self.0.config.name, "").hostname)
    }

    async fn get_load(&self, _: &Current) -> floe::Result<LoadInfo> {
        Ok(platform::load())
    }

    async fn get_processor_socket_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(platform::processor_sockets())
    }

    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        tracing::info!(target: "floe_node", "shutdown requested by the registry");
        self.0.communicator.shutdown();
        Ok(())
    }
}

impl FileReader for NodeServant {
    async fn get_offset_from_end(&self, filename: String, lines: i32, _: &Current) -> floe::Result<i64> {
        files::offset_from_end(&files::node_file(&self.0.communicator, &filename)?, lines)
    }

    async fn read(&self, filename: String, pos: i64, size: i32, _: &Current) -> floe::Result<(bool, i64, StringSeq)> {
        files::read(&files::node_file(&self.0.communicator, &filename)?, pos, size)
    }
}

impl ReplicaObserver for NodeServant {
    async fn replica_init(&self, _replicas: InternalRegistryPrxSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn replica_added(&self, _replica: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn replica_removed(&self, _replica: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        Ok(())
    }
}

/// `<instance>-Server/<id>`.
pub struct ServerServant(pub Arc<ServerEntry>);

impl ServerServant {
    fn live(&self, current: &Current) -> floe::Result<&Arc<ServerEntry>> {
        match self.0.state() {
            ServerState::Destroyed => Err(gone(current)),
            _ => Ok(&self.0),
        }
    }
}

impl Server for ServerServant {
    async fn start(&self, current: &Current) -> floe::Result<()> {
        let s = self.live(current)?;
        s.start().await.map_err(|r| start_error(&s.id, r))
    }

    async fn stop(&self, current: &Current) -> floe::Result<()> {
        let s = self.live(current)?;
        s.stop().await.map_err(|r| stop_error(&s.id, r))
    }

    async fn check_update(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        no_restart: bool,
        current: &Current,
    ) -> floe::Result<bool> {
        let s = self.live(current)?;
        let desc = descriptor(svr)?;
        let changed = crate::descriptor::updated(&s.descriptor(), &desc, false);
        if no_restart && s.state() != ServerState::Inactive && crate::descriptor::updated(&s.descriptor(), &desc, true)
        {
            return Err(Error::user(DeploymentException {
                reason: format!("update requires server `{}' to be stopped", s.id),
            }));
        }
        Ok(changed)
    }

    async fn set_enabled(&self, enable: bool, current: &Current) -> floe::Result<()> {
        self.live(current)?.set_enabled(enable);
        Ok(())
    }

    async fn is_enabled(&self, current: &Current) -> floe::Result<bool> {
        Ok(self.live(current)?.is_enabled())
    }

    async fn send_signal(&self, signal: String, current: &Current) -> floe::Result<()> {
        self.live(current)?.signal(&signal).map_err(|reason| Error::user(BadSignalException { reason }))
    }

    async fn write_message(&self, message: String, fd: i32, current: &Current) -> floe::Result<()> {
        let s = self.live(current)?;
        // As IceGrid does: through the server's `Process` object, when it has one.
        match s.process() {
            Some(p) => p.write_message(&message, fd).await,
            None => Ok(()),
        }
    }

    async fn get_state(&self, _: &Current) -> floe::Result<ServerState> {
        Ok(self.0.state())
    }

    async fn get_pid(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.0.pid().map_or(0, |p| i32::try_from(p).unwrap_or(0)))
    }

    async fn set_process(&self, proc: Option<ProcessPrx>, current: &Current) -> floe::Result<()> {
        self.live(current)?.set_process(proc);
        Ok(())
    }
}

impl FileReader for ServerServant {
    async fn get_offset_from_end(&self, filename: String, lines: i32, _: &Current) -> floe::Result<i64> {
        files::offset_from_end(&files::server_file(&self.0, &filename)?, lines)
    }

    async fn read(&self, filename: String, pos: i64, size: i32, _: &Current) -> floe::Result<(bool, i64, StringSeq)> {
        files::read(&files::server_file(&self.0, &filename)?, pos, size)
    }
}
