//! What every floe service needs besides its own domain logic: the binary scaffolding
//! ([`cli`]), property helpers ([`props`]), crypt(3) password files checked off the
//! runtime ([`crypt`]), a redb database written with group commit ([`store`]) and an etcd
//! kit ([`etcd`]), line reads of log files for IceGrid's `FileReader` ([`files`]) and
//! request forwarding for admin routers ([`forward`]). See the crate's README.

pub mod cli;
pub mod crypt;
pub mod etcd;
pub mod files;
pub mod forward;
pub mod props;
pub mod store;
