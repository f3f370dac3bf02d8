//! Request messages built by the caller (with [`encode_request`](crate::protocol::request::encode_request))
//! and sent on a connection as they are: one twoway request and its reply, several twoway
//! requests pipelined in one write with their replies, or a oneway request or batch. For
//! services that forward requests they already hold encoded, and for tools and tests.

use bytes::BytesMut;

use super::{Compress, Connection};
use crate::error::Result;
use crate::protocol::Reply;

impl Connection {
    /// Sends a complete twoway request message (its request id is set here) and waits for
    /// its reply. Dropping the future forgets the request.
    pub async fn invoke_message(&self, message: BytesMut, compress: Compress) -> Result<Reply> {
        self.invoke(message, compress).await
    }

    /// Sends complete twoway request messages pipelined, with one write (their request ids
    /// are set here), and waits for all their replies; returns them in request order, each
    /// with its own outcome. Fails as a whole only when the requests could not be sent.
    ///
    /// ```no_run
    /// # async fn f(connection: &floe::Connection) -> floe::Result<()> {
    /// use floe::connection::Compress;
    /// use floe::encoding::{Context, EncodingVersion, Identity};
    /// use floe::protocol::request::encode_request;
    /// use floe::protocol::{OperationMode, RequestPrefix};
    ///
    /// let id = Identity::new("echo");
    /// let prefix = RequestPrefix::new(&id, "", "echo", OperationMode::Normal);
    /// let messages = (0..10)
    ///     .map(|n| encode_request(1, &prefix, &Context::new(), EncodingVersion::V1_1, |e| e.write_i32(n)))
    ///     .collect();
    /// for reply in connection.invoke_pipelined(messages, Compress::No).await? {
    ///     println!("{:?}", reply?.body);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn invoke_pipelined(&self, messages: Vec<BytesMut>, compress: Compress) -> Result<Vec<Result<Reply>>> {
        self.invoke_many(messages, compress).await
    }

    /// Sends a complete oneway request or batch message (request id 0).
    pub async fn send_oneway_message(&self, message: BytesMut, compress: Compress) -> Result<()> {
        self.send_oneway(message, compress).await
    }
}
