//! The registry's records: what a registered adapter and a well-known object are, the
//! changes the state goes through ([`Op`]), and the encoding of their stored (redb) and
//! shared (etcd) form.

use floe::encoding::{Decode, Decoder, Encode, Encoder, EncodingVersion};
use floe::{Communicator, Identity, ObjectPrx};

/// An adapter registered by a server (`setAdapterDirectProxy`).
#[derive(Debug, Clone)]
pub struct AdapterEntry {
    /// The adapter's (dummy) direct proxy, carrying its endpoints.
    pub proxy: ObjectPrx,
    /// The replica group it belongs to ("" for none).
    pub replica_group: String,
}

/// A well-known object.
#[derive(Debug, Clone)]
pub struct ObjectEntry {
    /// Its proxy.
    pub proxy: ObjectPrx,
    /// Its most-derived Slice type id.
    pub type_id: String,
}

/// One change to the registry's state, as the tables apply it.
#[derive(Debug, Clone)]
pub enum Op {
    /// Registers an adapter (or changes its endpoints or replica group).
    PutAdapter(String, AdapterEntry),
    /// Unregisters an adapter.
    RemoveAdapter(String),
    /// Unregisters an adapter if its record (see [`record`]) is still this one: it has not
    /// registered again meanwhile.
    RemoveAdapterIf(String, Vec<u8>),
    /// Adds or replaces a well-known object (key: the identity's string form).
    PutObject(String, ObjectEntry),
    /// Removes a well-known object.
    RemoveObject(String),
    /// Adds or replaces a deployed application (its encoded `IceGrid::ApplicationInfo`).
    PutApplication(String, Vec<u8>),
    /// Removes a deployed application.
    RemoveApplication(String),
}

/// Encoding used for stored records.
pub(crate) const ENCODING: EncodingVersion = EncodingVersion { major: 1, minor: 1 };

/// A stored record: a proxy and a text (an adapter's replica group, an object's type).
pub(crate) fn record(proxy: &ObjectPrx, text: &str) -> Vec<u8> {
    let mut enc = Encoder::new(ENCODING);
    ObjectPrx::encode_nullable(Some(proxy), &mut enc);
    text.encode(&mut enc);
    enc.into_bytes().to_vec()
}

/// Reads a record written by [`record`].
pub(crate) fn read_record(communicator: &Communicator, bytes: &[u8]) -> Option<(ObjectPrx, String)> {
    let mut dec = Decoder::from_slice(bytes, ENCODING);
    let proxy = ObjectPrx::decode(communicator, &mut dec).ok()??;
    let text = String::decode(&mut dec).ok()?;
    Some((proxy, text))
}

pub(crate) fn identity_key(id: &Identity) -> Vec<u8> {
    let mut enc = Encoder::new(ENCODING);
    id.encode(&mut enc);
    enc.into_bytes().to_vec()
}

/// The identity's string form (`category/name`, with Ice's escapes).
pub fn identity_string(id: &Identity) -> String {
    floe::reference::identity_to_string(id)
}
