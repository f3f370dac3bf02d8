//! What the registry's servants share ([`Shared`]): the configuration, the database, the
//! client adapter and the registry's own proxies, the round-robin turns of replica groups,
//! the open sessions; with how an adapter id resolves and how a user's password is checked.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::encoding::EndpointData;
use floe::{Communicator, Connection, Error, Identity, ObjectAdapter, ObjectPrx, Proxy};
use floe_service::crypt::{CryptError, CryptPasswords};

use crate::config::{Config, LoadBalancing};
use crate::database::{Database, ObjectEntry};
use crate::deploy::{decode_info, Deployment};
use crate::slice;
use crate::slice::ice_grid::PermissionDeniedException;

/// A `PermissionDeniedException` with `reason`.
pub(crate) fn permission_denied(reason: &str) -> Error {
    Error::user(PermissionDeniedException { reason: reason.to_string() })
}

/// One open session (admin or client), as the reaper sees it.
pub(crate) struct SessionRecord {
    /// The identities of the session object and, for admin sessions, its admin object.
    pub(crate) identities: Vec<Identity>,
    /// The objects the session opened since (its file iterators), removed with it.
    pub(crate) objects: Mutex<Vec<Identity>>,
    /// The connection the session was created on.
    pub(crate) connection: Option<Connection>,
    /// When the client last showed signs of life (a call on the session or its objects).
    pub(crate) last: Mutex<Instant>,
}

impl SessionRecord {
    pub(crate) fn touch(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }
}

/// A deployment built by an application change, and the stored applications (name →
/// encoded `ApplicationInfo`) it was built from.
pub(crate) type OfferedDeployment = (BTreeMap<String, Vec<u8>>, Arc<Deployment>);

/// What the servants share.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) db: Database,
    pub(crate) communicator: Communicator,
    /// The adapter of `IceGrid.Registry.Client.Endpoints`.
    pub(crate) client: ObjectAdapter,
    /// `IceGrid.Registry.Client.PublishedEndpoints`, parsed.
    pub(crate) client_published: Option<Vec<EndpointData>>,
    /// `<InstanceName>/Locator`, `…/LocatorRegistry`, `…/Query` and `…/Registry`.
    pub(crate) locator: ObjectPrx,
    pub(crate) locator_registry: ObjectPrx,
    pub(crate) query: ObjectPrx,
    pub(crate) registry: ObjectPrx,
    /// The next turn of each round-robin replica group.
    pub(crate) round_robin: Mutex<HashMap<String, usize>>,
    /// `IceGrid.Registry.CryptPasswords` and `AdminCryptPasswords`, read at start.
    pub(crate) crypt_passwords: Option<CryptPasswords>,
    pub(crate) admin_crypt_passwords: Option<CryptPasswords>,
    /// Open sessions, by the string form of their identity.
    pub(crate) sessions: Mutex<HashMap<String, Arc<SessionRecord>>>,
    /// What the stored applications deploy, with the generation of the applications it was
    /// built from.
    pub(crate) deployed: Mutex<(u64, Arc<Deployment>)>,
    /// The admin sessions' observers.
    pub(crate) observers: crate::watchers::Observers,
    /// Counts application changes, as observers and `startUpdate` see them.
    pub(crate) serial: std::sync::atomic::AtomicI32,
    /// The adapter of `IceGrid.Registry.Internal.Endpoints`: nodes' sessions.
    pub(crate) internal: ObjectAdapter,
    /// `<InstanceName>/InternalRegistry-<ReplicaName>` and the node observer.
    pub(crate) internal_registry: ObjectPrx,
    pub(crate) node_observer: ObjectPrx,
    /// The nodes with a session and the servers loaded on them.
    pub(crate) nodes: crate::node_table::Nodes,
    /// A deployment built by an application change, with the applications it was built
    /// from: taken by [`Shared::deployment`] when the store holds them.
    pub(crate) offered: Mutex<Option<OfferedDeployment>>,
    /// What client sessions have allocated.
    pub(crate) allocations: crate::allocation::Allocations,
}

impl Shared {
    /// Whether the session with key `key` (its identity's string form) still exists.
    pub(crate) fn has_session(&self, key: &str) -> bool {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).contains_key(key)
    }

    /// A proxy for `id` on the client adapter, with its published endpoints.
    pub(crate) fn client_proxy(&self, id: Identity) -> ObjectPrx {
        let proxy = self.client.create_proxy(id);
        match &self.client_published {
            Some(eps) => proxy.ice_endpoints(eps.clone()),
            None => proxy,
        }
    }

    /// Serves `servant` as `id` on the client endpoints; returns its proxy, with the
    /// published endpoints when there are some.
    pub(crate) fn add_client_object(&self, servant: Arc<dyn floe::Dispatcher>, id: Identity) -> ObjectPrx {
        let proxy = self.client.add(servant, id);
        match &self.client_published {
            Some(eps) => proxy.ice_endpoints(eps.clone()),
            None => proxy,
        }
    }

    /// What the stored applications deploy (rebuilt when they have changed).
    pub(crate) fn deployment(&self) -> Arc<Deployment> {
        let generation = self.db.applications_generation();
        let mut cached = self.deployed.lock().unwrap_or_else(|e| e.into_inner());
        if cached.0 == generation {
            return cached.1.clone();
        }
        let (generation, apps) = self.db.applications();
        let offered = self.offered.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((_, deployment)) = offered.filter(|(offered, _)| *offered == apps) {
            *cached = (generation, deployment);
            return cached.1.clone();
        }
        let mut infos = std::collections::BTreeMap::new();
        for (name, bytes) in apps {
            match decode_info(&bytes) {
                Ok(info) => {
                    infos.insert(name, info);
                }
                Err(e) => {
                    tracing::error!(target: "floe_registry::deploy", "stored application `{name}' is unreadable: {e}")
                }
            }
        }
        let deployment = Deployment::build_skipping(&self.communicator, infos);
        *cached = (generation, Arc::new(deployment));
        cached.1.clone()
    }

    /// Offers what [`Shared::deployment`] returns once the stored applications are `apps`
    /// (built by the change that stores them).
    pub(crate) fn offer_deployment(&self, apps: BTreeMap<String, Vec<u8>>, deployment: Arc<Deployment>) {
        *self.offered.lock().unwrap_or_else(|e| e.into_inner()) = Some((apps, deployment));
    }

    /// The well-known object `id`: declared by an application, or registered.
    pub(crate) fn object(&self, id: &Identity) -> Option<ObjectEntry> {
        self.deployment().object(id).cloned().or_else(|| self.db.object(id))
    }

    /// Well-known objects of type `type_id`, declared or registered.
    pub(crate) fn objects_of_type(&self, type_id: &str) -> Vec<ObjectEntry> {
        let d = self.deployment();
        let mut all: Vec<ObjectEntry> = d.objects.values().filter(|e| e.type_id == type_id).cloned().collect();
        all.extend(self.db.objects_of_type(type_id));
        all
    }

    /// Well-known objects whose identity matches `pattern`, declared or registered.
    pub(crate) fn objects_matching(&self, pattern: &str) -> Vec<ObjectEntry> {
        let d = self.deployment();
        let mut all: Vec<ObjectEntry> =
            d.objects.iter().filter(|(k, _)| crate::database::matches(k, pattern)).map(|(_, e)| e.clone()).collect();
        all.extend(self.db.objects_matching(pattern));
        all
    }

    /// What `findAdapterById` answers: the adapter's proxy, or for a replica group a proxy
    /// with the endpoints of every member.
    pub(crate) fn adapter_proxy(&self, id: &str) -> Option<ObjectPrx> {
        if let Some(a) = self.db.adapter(id) {
            return Some(a.proxy);
        }
        let mut members = self.db.group_members(id);
        let first = members.first()?.1.proxy.clone();
        let deployed = self.deployment();
        let group = deployed.groups.get(id).map(|g| &g.config).or_else(|| self.config.replica_groups.get(id));
        if let Some(group) = group {
            self.order_members(id, group, &mut members, |(a, _)| a, |a| self.member_load(group, a));
            if group.n_replicas > 0 {
                members.truncate(group.n_replicas);
            }
        }
        let endpoints = members.iter().flat_map(|(_, a)| a.proxy.reference().wire.endpoints.clone()).collect();
        Some(first.ice_identity(Identity::new("dummy")).ice_facet("").ice_endpoints(endpoints))
    }

    /// The load that orders member `adapter` of an adaptive group: its node's load average
    /// (the group's sample) times the node's load factor (`1 / processors` unless the
    /// application sets one); 999.9 for members no node with a session runs.
    pub(crate) fn member_load(&self, group: &crate::config::ReplicaGroupConfig, adapter: &str) -> f32 {
        const UNKNOWN: f32 = 999.9;
        let d = self.deployment();
        let Some(server) = d.adapters.get(adapter).and_then(|a| d.servers.get(&a.server)) else { return UNKNOWN };
        let Some(session) = self.nodes.live(&server.node) else { return UNKNOWN };
        let load = session.load();
        let sample = match group.load_sample {
            5 => load.avg5,
            15 => load.avg15,
            _ => load.avg1,
        };
        if sample < 0.0 {
            return 1.0;
        }
        let declared = d
            .applications
            .get(&server.application)
            .and_then(|a| a.descriptor.nodes.get(&server.node))
            .and_then(|n| n.load_factor.trim().parse::<f32>().ok())
            .filter(|f| *f >= 0.0);
        let factor = declared.unwrap_or_else(|| {
            if session.info.os == "Windows" {
                1.0
            } else {
                1.0 / session.info.n_processors.max(1) as f32
            }
        });
        sample * factor
    }

    /// Orders the members of replica group `id` by its load-balancing policy: `random`
    /// shuffles, `round-robin` starts with the next member each time, `ordered` sorts by
    /// priority and `adaptive` by the load of the members' nodes (`load`, random among
    /// equals).
    pub(crate) fn order_members<T>(
        &self,
        id: &str,
        group: &crate::config::ReplicaGroupConfig,
        members: &mut [T],
        adapter: impl Fn(&T) -> &str,
        load: impl Fn(&str) -> f32,
    ) {
        match group.load_balancing {
            LoadBalancing::Undeclared => {}
            LoadBalancing::Random => fastrand::shuffle(members),
            LoadBalancing::Adaptive => {
                fastrand::shuffle(members);
                members.sort_by(|a, b| load(adapter(a)).total_cmp(&load(adapter(b))));
            }
            LoadBalancing::RoundRobin => {
                let mut turns = self.round_robin.lock().unwrap_or_else(|e| e.into_inner());
                let turn = turns.entry(id.to_string()).or_insert(0);
                let n = members.len().max(1);
                members.rotate_left(*turn % n);
                *turn = turn.wrapping_add(1);
            }
            LoadBalancing::Ordered => {
                members.sort_by_key(|m| group.priorities.get(adapter(m)).copied().unwrap_or(0));
            }
        }
    }

    /// Checks a user's credentials for a session (an admin session when `admin`).
    pub(crate) async fn verify(&self, admin: bool, user: &str, password: &str) -> floe::Result<()> {
        let (verifier, crypt, kind) = if admin {
            (&self.config.admin_permissions_verifier, &self.admin_crypt_passwords, "Admin")
        } else {
            (&self.config.permissions_verifier, &self.crypt_passwords, "")
        };
        if let Some(verifier) = verifier {
            let proxy = self
                .communicator
                .string_to_proxy(verifier)
                .map_err(|e| permission_denied(&format!("invalid permissions verifier proxy: {e}")))?;
            let null = Identity::with_category(&self.config.instance_name, "NullPermissionsVerifier");
            if proxy.ice_get_identity() == &null {
                return Ok(());
            }
            let proxy = slice::glacier2::PermissionsVerifierPrx::from_object(
                proxy.ice_locator(Some(&self.locator)).ice_invocation_timeout(Some(Duration::from_secs(10))),
            );
            return match proxy.check_permissions(user, password).await {
                Ok((true, _)) => Ok(()),
                Ok((false, reason)) => Err(permission_denied(&reason)),
                Err(e) => Err(permission_denied(&format!("the permissions verifier failed: {e}"))),
            };
        }
        if let Some(passwords) = crypt {
            // Hashed off the runtime's threads.
            return passwords.verify(user, password).await.map_err(|e| match e {
                CryptError::UnknownUser | CryptError::WrongPassword => {
                    permission_denied("unknown user id or wrong password")
                }
                e => permission_denied(&format!("the password check failed: {e}")),
            });
        }
        Err(permission_denied(&format!(
            "no permissions verifier is configured: set IceGrid.Registry.{kind}PermissionsVerifier or \
             IceGrid.Registry.{kind}CryptPasswords"
        )))
    }
}

/// This machine's host name.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
