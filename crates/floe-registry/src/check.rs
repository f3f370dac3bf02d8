//! Adapter checks (`Floe.Registry.AdapterCheck.Interval`): the registry pings every
//! registered adapter at that interval, and removes the registration of one that failed
//! `Floe.Registry.AdapterCheck.Failures` checks in a row, unless it registered again
//! meanwhile. Ice 3.7 servers register an adapter once, when they activate it, and never
//! renew that registration, so this is what makes the entries of a server that died without
//! unregistering (killed, its host gone) expire.
//!
//! An adapter is alive when anything answers the ping as an Ice peer would, an
//! `ObjectNotExistException` included (servers register the direct proxy of a `dummy`
//! object); it fails the check when it cannot be reached or does not answer within the
//! interval (at most 5 s).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use floe::{Error, ErrorKind, ObjectPrx};
use tokio::sync::Semaphore;

use crate::database::durable;
use crate::record::record;
use crate::shared::Shared;

/// Pings at most this many adapters at once.
const IN_FLIGHT: usize = 64;

/// Checks the adapters every `interval` until the registry is gone.
pub(crate) async fn run(shared: Weak<Shared>, interval: Duration, failures: u32) {
    // Adapter id → (the record that failed, checks failed in a row).
    let mut missed: HashMap<String, (Vec<u8>, u32)> = HashMap::new();
    let timeout = interval.clamp(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        tokio::time::sleep(interval).await;
        let Some(adapters) = shared.upgrade().map(|s| s.db.adapters()) else { return };
        let permits = Arc::new(Semaphore::new(IN_FLIGHT));
        let mut pings = tokio::task::JoinSet::new();
        for (id, entry) in adapters {
            let Ok(permit) = permits.clone().acquire_owned().await else { return };
            pings.spawn(async move {
                let alive = answers(&entry.proxy, timeout).await;
                drop(permit);
                (id, entry, alive)
            });
        }
        let mut checked = Vec::new();
        while let Some(r) = pings.join_next().await {
            if let Ok(r) = r {
                checked.push(r);
            }
        }
        let Some(s) = shared.upgrade() else { return };
        missed.retain(|id, _| checked.iter().any(|(c, _, _)| c == id));
        for (id, entry, alive) in checked {
            if alive {
                missed.remove(&id);
                continue;
            }
            let seen = record(&entry.proxy, &entry.replica_group);
            let m = missed.entry(id.clone()).or_insert_with(|| (seen.clone(), 0));
            if m.0 != seen {
                *m = (seen, 0);
            }
            m.1 += 1;
            if m.1 >= failures {
                missed.remove(&id);
                tracing::info!(target: "floe_registry::check", adapter = id, "unreachable for {failures} checks: unregistered");
                durable(s.db.remove_adapter_if(&id, &entry)).await;
            }
        }
    }
}

/// Whether something answers a ping at `proxy` within `timeout`.
async fn answers(proxy: &ObjectPrx, timeout: Duration) -> bool {
    let proxy = proxy.ice_invocation_timeout(Some(timeout));
    match tokio::time::timeout(timeout, proxy.ice_ping()).await {
        Err(_) => false,
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            e.kind() == ErrorKind::Unimplemented
                || matches!(
                    e,
                    Error::UserException(_)
                        | Error::UnknownException(_)
                        | Error::UnknownLocalException(_)
                        | Error::UnknownUserException(_)
                )
        }
    }
}
