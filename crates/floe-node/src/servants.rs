//! The `Server` objects of the node for the registry: one `<instance>-Server/<id>` (an
//! `IceGrid::Server`) per loaded server.

use std::sync::Arc;

use floe::{Current, Error};
use floe_icegrid::ice::{ProcessPrx, StringSeq};
use floe_icegrid::ice_grid::{
    BadSignalException, DeploymentException, FileReader, InternalServerDescriptor, Server, ServerState,
};

use crate::files;
use crate::server::{gone, start_error, stop_error, ServerEntry};

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
        let desc = crate::descriptor::from_class(svr)?;
        let changed = crate::descriptor::updated(&s.descriptor(), &desc, false);
        if no_restart && s.descriptor().session_id != desc.session_id {
            return Err(Error::user(DeploymentException { reason: "server allocated by another session".into() }));
        }
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
        files::offset_from_end(files::server_file(&self.0, &filename)?, lines).await
    }

    async fn read(&self, filename: String, pos: i64, size: i32, _: &Current) -> floe::Result<(bool, i64, StringSeq)> {
        files::read(files::server_file(&self.0, &filename)?, pos, size).await
    }
}
