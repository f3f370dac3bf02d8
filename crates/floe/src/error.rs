//! Local errors of the runtime, classified by how the caller should react.

use thiserror::Error;

use crate::encoding::{DecodeError, Identity, UserExceptionSlices};
use crate::protocol::ProtocolError;

/// How a caller should react to an [`enum@Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The connection is gone or could not be made; the request may be retried elsewhere.
    Disconnected,
    /// The peer or this process is out of some resource; retry later.
    Overloaded,
    /// The target does not exist or does not implement the operation.
    Unimplemented,
    /// Anything else: the call failed and retrying will not help.
    Failed,
}

/// A local (runtime) error, or one of the six system exceptions that travel in replies.
#[derive(Debug, Clone, Error)]
pub enum Error {
    /// Connecting failed (refused, unreachable, timed out while connecting).
    #[error("connection to {endpoint} failed: {reason}")]
    ConnectFailed {
        /// The endpoint tried.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The connection was lost while the request was outstanding or before it was sent.
    #[error("connection lost: {0}")]
    ConnectionLost(String),
    /// The peer closed the connection gracefully before the request was dispatched; always
    /// safe to retry.
    #[error("connection closed by peer")]
    CloseConnection,
    /// The invocation did not complete within its invocation timeout.
    #[error("invocation timed out after {0:?}")]
    InvocationTimeout(std::time::Duration),
    /// The invocation was cancelled by the caller.
    #[error("invocation cancelled")]
    InvocationCanceled,
    /// The server has no object with this identity (reply status 2).
    #[error("object does not exist: {identity:?} facet {facet:?} operation {operation}")]
    ObjectNotExist {
        /// Target identity.
        identity: Identity,
        /// Target facet.
        facet: String,
        /// Operation.
        operation: String,
    },
    /// The object exists but not this facet (reply status 3).
    #[error("facet does not exist: {identity:?} facet {facet:?} operation {operation}")]
    FacetNotExist {
        /// Target identity.
        identity: Identity,
        /// Target facet.
        facet: String,
        /// Operation.
        operation: String,
    },
    /// The object does not implement the operation (reply status 4).
    #[error("operation does not exist: {identity:?} facet {facet:?} operation {operation}")]
    OperationNotExist {
        /// Target identity.
        identity: Identity,
        /// Target facet.
        facet: String,
        /// Operation.
        operation: String,
    },
    /// The servant failed with a local exception (reply status 5).
    #[error("unknown local exception: {0}")]
    UnknownLocalException(String),
    /// The servant raised a user exception the operation does not declare (status 6, or status
    /// 1 with an exception the caller does not know).
    #[error("unknown user exception: {0}")]
    UnknownUserException(String),
    /// The servant failed in some other way (reply status 7).
    #[error("unknown exception: {0}")]
    UnknownException(String),
    /// The dispatch failed with a reply status of 8 or above, which Ice 3.8 servers send
    /// (8 InvalidData, 9 Unauthorized, 10 NotSupported, or another), with the server's message
    /// (Ice 3.8's `DispatchException`). A servant that returns it sends that status, which Ice
    /// 3.7 peers do not know.
    #[error("dispatch failed with reply status {status}: {message}")]
    Dispatch {
        /// The reply status, 8 or above.
        status: u8,
        /// The server's message.
        message: String,
    },
    /// A message broke the protocol. (A message larger than `Ice.MessageSizeMax` is
    /// [`Error::MemoryLimit`], Ice's `MemoryLimitException`.)
    #[error("protocol error: {0}")]
    Protocol(#[source] ProtocolError),
    /// Parameters or results did not decode.
    #[error("marshal error: {0}")]
    Marshal(#[from] DecodeError),
    /// A proxy or endpoint string does not parse.
    #[error("invalid proxy string {input:?}: {reason}")]
    ProxyParse {
        /// The string.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// A request or reply is larger than `Ice.MessageSizeMax`.
    #[error("message of {size} bytes exceeds Ice.MessageSizeMax ({max} bytes)")]
    MemoryLimit {
        /// Message size.
        size: usize,
        /// Limit.
        max: usize,
    },
    /// The proxy has no endpoint that this runtime can use.
    #[error("no usable endpoint: {0}")]
    NoEndpoint(String),
    /// The operation needs a twoway proxy.
    #[error("operation {0} returns values and needs a twoway proxy")]
    TwowayOnly(String),
    /// The communicator was destroyed.
    #[error("communicator destroyed")]
    CommunicatorDestroyed,
    /// An object adapter could not be created or activated.
    #[error("object adapter: {0}")]
    Adapter(String),
    /// A configuration property is invalid.
    #[error("invalid property {name}: {reason}")]
    Property {
        /// Property name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A servant raised a user exception (declared or not; Ice sends both as reply status 1,
    /// and the caller turns an undeclared one into UnknownUserException).
    #[error("user exception {}", .0.type_id())]
    UserException(std::sync::Arc<dyn UserExceptionSlices + Send + Sync>),
    /// An I/O error outside a connection (binding, reading a config file).
    #[error("I/O error: {0}")]
    Io(String),
    /// A blocking call (`Communicator::block_on`, a generated `_blocking` method) was made on
    /// a thread of a current-thread async runtime, which it could deadlock: call the async
    /// form and `.await` it, make the call from a thread of your own, or use a multi-thread
    /// runtime.
    #[error("blocking call on the thread of a current-thread async runtime: {0}")]
    BlockingInAsync(String),
    /// The locator knows no object adapter or object of that id, or the communicator has no
    /// admin facet of that name (Ice's `NotRegisteredException`).
    #[error("no {kind} with id `{id}` is registered")]
    NotRegistered {
        /// `object adapter`, `object` or `facet`.
        kind: String,
        /// The adapter id, the object's identity as a string, or the facet name.
        id: String,
    },
    /// A datagram request is larger than a UDP datagram can carry (Ice's
    /// `DatagramLimitException`).
    #[error("datagram of {size} bytes exceeds the limit of {max} bytes")]
    DatagramLimit {
        /// Message size.
        size: usize,
        /// Largest datagram this endpoint sends.
        max: usize,
    },
    /// An ssl or wss connection failed its security checks (Ice's `SecurityException`): the
    /// peer's certificate did not verify against `IceSSL.CAs`, did not match the host name
    /// under `IceSSL.CheckCertName`, had too long a chain (`IceSSL.VerifyDepthMax`), or was
    /// missing where `IceSSL.VerifyPeer=2` requires one; or the peer refused this side's
    /// certificate. The connection is closed, never used.
    #[error("security error: {0}")]
    Security(String),
    /// Something is already registered under that name (Ice's `AlreadyRegisteredException`),
    /// such as an admin facet.
    #[error("a {kind} with id `{id}` is already registered")]
    AlreadyRegistered {
        /// What kind of thing: `facet`…
        kind: String,
        /// Its name.
        id: String,
    },
    /// The communicator cannot do this in its configuration (Ice's `InitializationException`),
    /// such as creating the admin object when it is disabled or already created.
    #[error("initialization error: {0}")]
    Initialization(String),
}

impl Error {
    /// The type id of the Ice local exception this error corresponds to, as Ice names it in
    /// the text of an UnknownLocalException (`::Ice::MarshalException`…).
    pub fn ice_type_id(&self) -> &'static str {
        match self {
            Error::ConnectFailed { .. } => "::Ice::ConnectFailedException",
            Error::ConnectionLost(_) => "::Ice::ConnectionLostException",
            Error::Io(_) => "::Ice::SocketException",
            Error::CloseConnection => "::Ice::CloseConnectionException",
            Error::InvocationTimeout(_) => "::Ice::InvocationTimeoutException",
            Error::InvocationCanceled => "::Ice::InvocationCanceledException",
            Error::ObjectNotExist { .. } => "::Ice::ObjectNotExistException",
            Error::FacetNotExist { .. } => "::Ice::FacetNotExistException",
            Error::OperationNotExist { .. } => "::Ice::OperationNotExistException",
            Error::UnknownLocalException(_) => "::Ice::UnknownLocalException",
            Error::UnknownUserException(_) => "::Ice::UnknownUserException",
            Error::UnknownException(_) => "::Ice::UnknownException",
            Error::Dispatch { .. } => "::Ice::DispatchException",
            Error::Protocol(_) => "::Ice::ProtocolException",
            Error::Marshal(_) => "::Ice::MarshalException",
            Error::ProxyParse { .. } => "::Ice::ProxyParseException",
            Error::MemoryLimit { .. } => "::Ice::MemoryLimitException",
            Error::NoEndpoint(_) => "::Ice::NoEndpointException",
            Error::TwowayOnly(_) => "::Ice::TwowayOnlyException",
            Error::CommunicatorDestroyed => "::Ice::CommunicatorDestroyedException",
            Error::Adapter(_) => "::Ice::ObjectAdapterDeactivatedException",
            Error::Property { .. } => "::Ice::InitializationException",
            Error::UserException(_) => "::Ice::UserException",
            Error::BlockingInAsync(_) => "::Ice::InitializationException",
            Error::NotRegistered { .. } => "::Ice::NotRegisteredException",
            Error::DatagramLimit { .. } => "::Ice::DatagramLimitException",
            Error::Security(_) => "::Ice::SecurityException",
            Error::AlreadyRegistered { .. } => "::Ice::AlreadyRegisteredException",
            Error::Initialization(_) => "::Ice::InitializationException",
        }
    }

    /// How the caller should react.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ConnectFailed { .. } | Error::ConnectionLost(_) | Error::CloseConnection => ErrorKind::Disconnected,
            Error::MemoryLimit { .. } | Error::InvocationTimeout(_) => ErrorKind::Overloaded,
            Error::ObjectNotExist { .. } | Error::FacetNotExist { .. } | Error::OperationNotExist { .. } => {
                ErrorKind::Unimplemented
            }
            _ => ErrorKind::Failed,
        }
    }

    /// True when the request certainly was not dispatched, so any operation may be retried.
    pub fn is_retryable_for_any_operation(&self) -> bool {
        matches!(self, Error::ConnectFailed { .. } | Error::CloseConnection)
    }

    /// Wraps a user exception raised by a servant.
    pub fn user(e: impl UserExceptionSlices + Send + Sync + 'static) -> Error {
        Error::UserException(std::sync::Arc::new(e))
    }

    pub(crate) fn lost(e: impl std::fmt::Display) -> Error {
        Error::ConnectionLost(e.to_string())
    }
}

impl From<ProtocolError> for Error {
    /// A message over `Ice.MessageSizeMax` is a [`Error::MemoryLimit`], as Ice raises
    /// `MemoryLimitException` for it; any other protocol violation is [`Error::Protocol`].
    fn from(e: ProtocolError) -> Self {
        match e {
            ProtocolError::MessageTooLarge { size, max } => Error::MemoryLimit { size, max },
            e => Error::Protocol(e),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// The result of an invocation that declares no user exception.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error of an invocation whose operation declares user exceptions `E`.
#[derive(Debug, Clone, Error)]
pub enum CallError<E> {
    /// The servant raised one of the declared user exceptions.
    #[error("user exception: {0:?}")]
    User(E),
    /// A local error or system exception.
    #[error(transparent)]
    Local(#[from] Error),
}

/// A servant relaying a call's failure raises the same user exception (or local error):
/// `other.op().await?` inside a servant method.
impl<E: Into<Error>> From<CallError<E>> for Error {
    fn from(e: CallError<E>) -> Error {
        match e {
            CallError::User(e) => e.into(),
            CallError::Local(e) => e,
        }
    }
}

impl<E> CallError<E> {
    /// The user exception, if that is what this is.
    pub fn user(self) -> Option<E> {
        match self {
            CallError::User(e) => Some(e),
            CallError::Local(_) => None,
        }
    }
}
