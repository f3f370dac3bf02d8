//! What `icegridadmin … show` reads: the `IceGrid::FileIterator` objects that admin sessions
//! open on a server's `stdout`, `stderr` and logs, a node's `stdout` and `stderr` (each read
//! from its node's `FileReader`), and the registry's own `stdout` and `stderr`; and the
//! registry's side of the server admin router (`<instance>-Server/<server id>`, what
//! `Admin::getServerAdmin` returns), which forwards requests to the server's node.

use std::path::PathBuf;
use std::sync::Arc;

use floe::{CallError, Current, DispatchFuture, DispatchSlot, Dispatcher, Error, Identity, IncomingRequest, Proxy};

use crate::nodes::{lock, require, servers, timed, NODE_CALL_TIMEOUT};
use crate::shared::{SessionRecord, Shared};
use crate::slice::ice::StringSeq;
use crate::slice::ice_grid::{
    FileIterator, FileIteratorPrx, FileIteratorServer, FileNotAvailableException, FileReaderGetOffsetFromEndError,
    FileReaderPrx, FileReaderReadError, RegistryNotExistException,
};

fn unavailable(reason: impl Into<String>) -> Error {
    Error::user(FileNotAvailableException { reason: reason.into() })
}

/// Room kept in a message for its header and the reply's other fields.
const MESSAGE_ROOM: i32 = 256;

/// Where an iterator reads from.
enum Source {
    /// A node's `FileReader` (the node itself or one of its servers), and the file's name
    /// there (`stdout`, `stderr`, `#<log path>`).
    Remote(FileReaderPrx, String),
    /// A file of this registry.
    Local(PathBuf),
}

impl Source {
    async fn offset_from_end(&self, lines: i32) -> floe::Result<i64> {
        match self {
            Source::Remote(reader, name) => match reader.get_offset_from_end(name, lines).await {
                Ok(offset) => Ok(offset),
                Err(CallError::User(FileReaderGetOffsetFromEndError::FileNotAvailableException(e))) => {
                    Err(Error::user(e))
                }
                Err(CallError::Local(e)) => Err(unavailable(e.to_string())),
            },
            Source::Local(path) => floe_service::files::offset_from_end(path.clone(), lines).await.map_err(unavailable),
        }
    }

    async fn read(&self, pos: i64, size: i32) -> floe::Result<(bool, i64, StringSeq)> {
        match self {
            Source::Remote(reader, name) => match reader.read(name, pos, size).await {
                Ok(read) => Ok(read),
                Err(CallError::User(FileReaderReadError::FileNotAvailableException(e))) => Err(Error::user(e)),
                Err(CallError::Local(e)) => Err(unavailable(e.to_string())),
            },
            Source::Local(path) => floe_service::files::read(path.clone(), pos, size).await.map_err(unavailable),
        }
    }
}

/// One open `FileIterator`.
struct FileIteratorI {
    shared: Arc<Shared>,
    record: Arc<SessionRecord>,
    source: Source,
    /// Where the next read starts.
    offset: tokio::sync::Mutex<i64>,
    /// The largest read that fits in a reply.
    max_read: i32,
}

impl FileIterator for FileIteratorI {
    async fn read(&self, size: i32, _: &Current) -> floe::Result<(bool, StringSeq)> {
        self.record.touch();
        let mut offset = self.offset.lock().await;
        let (eof, next, lines) = self.source.read(*offset, size.min(self.max_read)).await?;
        *offset = next;
        Ok((eof, lines))
    }

    async fn destroy(&self, current: &Current) -> floe::Result<()> {
        lock(&self.record.objects).retain(|id| *id != current.id);
        self.shared.client.remove(&current.id);
        Ok(())
    }
}

/// Opens an iterator on `source` for an admin session, at the last `lines` lines (all of
/// the file when `lines` is negative). The file must exist.
async fn open(
    shared: &Arc<Shared>,
    record: &Arc<SessionRecord>,
    source: Source,
    lines: i32,
) -> floe::Result<Option<FileIteratorPrx>> {
    record.touch();
    let offset = source.offset_from_end(lines).await?;
    let kb = shared.communicator.properties().get_int("Ice.MessageSizeMax", 1024).unwrap_or(1024);
    // `Ice.MessageSizeMax` 0 (or less): no limit.
    let max_read = match kb {
        kb if kb <= 0 => i32::MAX,
        kb => i32::try_from(kb.saturating_mul(1024)).unwrap_or(i32::MAX).saturating_sub(MESSAGE_ROOM).max(6),
    };
    let id = Identity::with_category(&shared.config.instance_name, uuid::Uuid::new_v4().to_string().to_uppercase());
    let iterator = FileIteratorI {
        shared: shared.clone(),
        record: record.clone(),
        source,
        offset: tokio::sync::Mutex::new(offset),
        max_read,
    };
    lock(&record.objects).push(id.clone());
    let proxy = shared.add_client_object(FileIteratorServer::new(iterator), id);
    Ok(Some(FileIteratorPrx::from_object(proxy)))
}

/// `openServerStdOut`, `openServerStdErr` (`filename` "stdout" or "stderr") and
/// `openServerLog` (`#<path>`): read through the server's node.
pub(crate) async fn open_server_file(
    shared: &Arc<Shared>,
    record: &Arc<SessionRecord>,
    id: &str,
    filename: String,
    lines: i32,
) -> floe::Result<Option<FileIteratorPrx>> {
    let loaded = servers::ensure(shared, id).await?;
    let reader = FileReaderPrx::from_object(timed(&loaded.server, NODE_CALL_TIMEOUT).as_object().clone());
    open(shared, record, Source::Remote(reader, filename), lines).await
}

/// `openNodeStdOut` and `openNodeStdErr`: read through the node.
pub(crate) async fn open_node_file(
    shared: &Arc<Shared>,
    record: &Arc<SessionRecord>,
    name: &str,
    filename: &str,
    lines: i32,
) -> floe::Result<Option<FileIteratorPrx>> {
    let session = require(shared, name)?;
    let reader = FileReaderPrx::from_object(timed(&session.node, NODE_CALL_TIMEOUT).as_object().clone());
    open(shared, record, Source::Remote(reader, filename.to_string()), lines).await
}

/// `openRegistryStdOut` and `openRegistryStdErr` (`filename` "stdout" or "stderr"): this
/// registry's `Ice.StdOut` or `Ice.StdErr`.
pub(crate) async fn open_registry_file(
    shared: &Arc<Shared>,
    record: &Arc<SessionRecord>,
    name: &str,
    filename: &str,
    lines: i32,
) -> floe::Result<Option<FileIteratorPrx>> {
    if name != shared.config.replica_name {
        return Err(Error::user(RegistryNotExistException { name: name.to_string() }));
    }
    let path = crate::nodes::session::file_path(shared, filename)?;
    open(shared, record, Source::Local(PathBuf::from(path)), lines).await
}

/// The category of the registry's server admin router.
pub(crate) fn server_admin_category(shared: &Shared) -> String {
    format!("{}-Server", shared.config.instance_name)
}

/// The category of the nodes' server admin routers.
fn node_router_category(shared: &Shared) -> String {
    format!("{}-NodeServerAdminRouter", shared.config.instance_name)
}

/// The default servant of [`server_admin_category`] on the client adapter: a request for
/// `<instance>-Server/<id>` goes to server `id`'s node (`<instance>-NodeServerAdminRouter/<id>`,
/// with the request's facet), which forwards it to the server's admin object.
pub(crate) struct ServerAdminRouter(pub(crate) Arc<Shared>);

impl Dispatcher for ServerAdminRouter {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let shared = self.0.clone();
        DispatchSlot::new().put(async move {
            let c = &request.current;
            let loaded = match servers::ensure(&shared, &c.id.name).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::debug!(target: "floe_registry::admin", server = %c.id.name, "no admin route: {e}");
                    return c.object_not_exist();
                }
            };
            let target = loaded
                .server
                .as_object()
                .ice_identity(Identity::with_category(node_router_category(&shared), c.id.name.clone()))
                .ice_facet(&c.facet);
            floe_service::forward::forward(&request, target).await
        })
    }
}
