//! floe-registry's behaviour seen by floe clients (the generated proxies of Ice's own Slice):
//! the locator, locator registry and query objects answer as IceGrid's do, state survives a
//! restart, and bad input never kills the registry.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::*;
use floe::{Communicator, Identity, ObjectPrx, Properties, Proxy};
use floe_registry::slice::ice::{
    LocatorFindAdapterByIdError, LocatorFindObjectByIdError, LocatorPrx, LocatorRegistryPrx,
    LocatorRegistrySetAdapterDirectProxyError, LocatorRegistrySetServerProcessProxyError,
};
use floe_registry::slice::ice_grid::{self, AdminPrx, QueryPrx, RegistryPrx};

fn communicator(port: u16) -> Communicator {
    let props = Properties::new();
    props.set("Ice.Default.Locator", &locator(port));
    Communicator::with_properties(props).unwrap()
}

fn locator_prx(c: &Communicator, port: u16) -> LocatorPrx {
    LocatorPrx::from_object(c.string_to_proxy(&locator(port)).unwrap())
}

fn ice_grid_locator(c: &Communicator, port: u16) -> ice_grid::LocatorPrx {
    ice_grid::LocatorPrx::from_object(c.string_to_proxy(&locator(port)).unwrap())
}

async fn is_adapter_not_found(l: &LocatorPrx, id: &str) -> bool {
    matches!(
        l.find_adapter_by_id(id).await.map_err(|e| e.user()),
        Err(Some(LocatorFindAdapterByIdError::AdapterNotFoundException(_)))
    )
}

fn ports(p: &ObjectPrx) -> Vec<i32> {
    p.reference()
        .wire
        .endpoints
        .iter()
        .filter_map(|e| match e {
            floe::encoding::EndpointData::Tcp(ip) => Some(ip.port),
            _ => None,
        })
        .collect()
}

async fn admin(c: &Communicator, port: u16) -> AdminPrx {
    let registry = ice_grid_locator(c, port).get_local_registry().await.unwrap().unwrap();
    let session = registry.create_admin_session("admin", "secret").await.unwrap().unwrap();
    session.get_admin().await.unwrap().unwrap()
}

#[test]
fn locator_registry_and_query_answer_as_icegrid_does() {
    let data = TempDir::new("locator");
    let port = free_port();
    let _registry = registry(port, &data.0, &["--IceGrid.Registry.DynamicRegistration=1"]);
    let c = communicator(port);
    runtime().block_on(async {
        let locator = locator_prx(&c, port);
        assert!(locator.as_object().ice_is_a("::IceGrid::Locator").await.unwrap());
        assert!(is_adapter_not_found(&locator, "nope").await);
        let err = locator.find_object_by_id(&Identity::new("nobody")).await.unwrap_err();
        assert!(matches!(err.user(), Some(LocatorFindObjectByIdError::ObjectNotFoundException(_))));
        // Which floe's client reports as Ice does, NotRegisteredException.
        let err = c.string_to_proxy("nobody").unwrap().ice_ping().await.unwrap_err();
        assert!(matches!(&err, floe::Error::NotRegistered { kind, id } if kind == "object" && id == "nobody"), "{err}");
        let err = c.string_to_proxy("x @ nope").unwrap().ice_ping().await.unwrap_err();
        assert!(
            matches!(&err, floe::Error::NotRegistered { kind, id } if kind == "object adapter" && id == "nope"),
            "{err}"
        );

        // Register, move, unregister.
        let registry: LocatorRegistryPrx = locator.get_registry().await.unwrap().unwrap();
        let dummy = |p: u16| c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {p}")).unwrap();
        registry.set_adapter_direct_proxy("A", Some(&dummy(1234))).await.unwrap();
        assert_eq!(ports(&locator.find_adapter_by_id("A").await.unwrap().unwrap()), [1234]);
        registry.set_adapter_direct_proxy("A", Some(&dummy(1235))).await.unwrap();
        assert_eq!(ports(&locator.find_adapter_by_id("A").await.unwrap().unwrap()), [1235]);
        registry.set_adapter_direct_proxy("A", None).await.unwrap();
        assert!(is_adapter_not_found(&locator, "A").await);
        registry.set_adapter_direct_proxy("never-registered", None).await.unwrap();

        // Adapters with a replica group id form the group as they register.
        registry.set_replicated_adapter_direct_proxy("R1", "G", Some(&dummy(2001))).await.unwrap();
        registry.set_replicated_adapter_direct_proxy("R2", "G", Some(&dummy(2002))).await.unwrap();
        let group = locator.find_adapter_by_id("G").await.unwrap().unwrap();
        assert_eq!(ports(&group), [2001, 2002]);
        assert_eq!(ports(&locator.find_adapter_by_id("R1").await.unwrap().unwrap()), [2001]);
        let query: QueryPrx = ice_grid_locator(&c, port).get_local_query().await.unwrap().unwrap();
        let replicas = query.find_all_replicas(Some(&c.string_to_proxy("x @ G").unwrap())).await.unwrap();
        let ids: Vec<String> = replicas.iter().flatten().map(|p| p.reference().wire.adapter_id.clone()).collect();
        assert_eq!(ids, ["R1", "R2"]);
        assert!(query.find_all_replicas(Some(&c.string_to_proxy("x @ R1").unwrap())).await.unwrap().is_empty());
        registry.set_replicated_adapter_direct_proxy("R1", "G", None).await.unwrap();
        assert_eq!(ports(&locator.find_adapter_by_id("G").await.unwrap().unwrap()), [2002]);
        registry.set_replicated_adapter_direct_proxy("R2", "G", None).await.unwrap();
        assert!(is_adapter_not_found(&locator, "G").await);

        let err = registry.set_server_process_proxy("server", None).await.unwrap_err();
        assert!(matches!(err.user(), Some(LocatorRegistrySetServerProcessProxyError::ServerNotFoundException(_))));

        // Query.
        let q = query.find_object_by_type("::IceGrid::Query").await.unwrap().unwrap();
        assert_eq!(q.ice_get_identity(), &Identity::with_category("TestGrid", "Query"));
        assert_eq!(query.find_all_objects_by_type("::Ice::Locator").await.unwrap().len(), 1);
        assert!(query.find_object_by_type("::Nothing").await.unwrap().is_none());
        assert!(query.find_object_by_id(&Identity::new("nobody")).await.unwrap().is_none());
        assert!(query
            .find_object_by_type_on_least_loaded_node("::IceGrid::Query", ice_grid::LoadSample::LoadSample1)
            .await
            .unwrap()
            .is_some());

        // A floe server's adapter registers on activation and unregisters when deactivated.
        let server = communicator(port);
        server.properties().set("FloeAdapter.Endpoints", "tcp -h 127.0.0.1");
        server.properties().set("FloeAdapter.AdapterId", "FloeAdapter");
        let adapter = server.create_object_adapter("FloeAdapter").unwrap();
        adapter.activate().await.unwrap();
        let found = locator.find_adapter_by_id("FloeAdapter").await.unwrap().unwrap();
        assert_eq!(found.reference().wire.endpoints, adapter.endpoints());
        // floe's client resolves `x @ FloeAdapter` and reaches the server (which has no `x`).
        let err = c.string_to_proxy("x @ FloeAdapter").unwrap().ice_ping().await.unwrap_err();
        assert!(matches!(err, floe::Error::ObjectNotExist { .. }), "{err}");
        adapter.deactivate().await;
        assert!(is_adapter_not_found(&locator, "FloeAdapter").await);
        server.destroy().await;
        c.destroy().await;
    });
}

#[test]
fn without_dynamic_registration_adapters_are_refused() {
    let data = TempDir::new("static");
    let port = free_port();
    let _registry = registry(port, &data.0, &[]);
    let c = communicator(port);
    runtime().block_on(async {
        let registry = locator_prx(&c, port).get_registry().await.unwrap().unwrap();
        let dummy = c.string_to_proxy("dummy:tcp -h 127.0.0.1 -p 1234").unwrap();
        let err = registry.set_adapter_direct_proxy("A", Some(&dummy)).await.unwrap_err();
        assert!(matches!(err.user(), Some(LocatorRegistrySetAdapterDirectProxyError::AdapterNotFoundException(_))));
        c.destroy().await;
    });
}

#[test]
fn objects_adapters_and_replica_groups_survive_a_restart() {
    let data = TempDir::new("restart");
    let port = free_port();
    let dynamic = ["--IceGrid.Registry.DynamicRegistration=1"];
    let first = registry(port, &data.0, &dynamic);
    let c = communicator(port);
    runtime().block_on(async {
        let admin = admin(&c, port).await;
        let object = c.string_to_proxy("hello:tcp -h 127.0.0.1 -p 3000").unwrap();
        admin.add_object_with_type(Some(&object), "::Demo::Hello").await.unwrap();
        let registry = locator_prx(&c, port).get_registry().await.unwrap().unwrap();
        let dummy = |p: u16| c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {p}")).unwrap();
        registry.set_adapter_direct_proxy("A", Some(&dummy(3001))).await.unwrap();
        registry.set_replicated_adapter_direct_proxy("R1", "G", Some(&dummy(3002))).await.unwrap();
        registry.set_replicated_adapter_direct_proxy("R2", "G", Some(&dummy(3003))).await.unwrap();
        c.destroy().await;
    });
    // SIGTERM: a clean exit.
    let status = first.terminate();
    assert!(status.success(), "{status:?}");

    let _second = registry(port, &data.0, &dynamic);
    let c = communicator(port);
    runtime().block_on(async {
        let locator = locator_prx(&c, port);
        let hello = locator.find_object_by_id(&Identity::new("hello")).await.unwrap().unwrap();
        assert_eq!(ports(&hello), [3000]);
        assert_eq!(ports(&locator.find_adapter_by_id("A").await.unwrap().unwrap()), [3001]);
        assert_eq!(ports(&locator.find_adapter_by_id("G").await.unwrap().unwrap()), [3002, 3003]);
        let admin = admin(&c, port).await;
        let info = admin.get_object_info(&Identity::new("hello")).await.unwrap();
        assert_eq!(info.r#type, "::Demo::Hello");
        let ids = admin.get_all_adapter_ids().await.unwrap();
        for id in ["A", "R1", "R2", "G"] {
            assert!(ids.iter().any(|i| i == id), "{id} missing from {ids:?}");
        }
        c.destroy().await;
    });
}

/// Reads until the peer closes (true) or `limit` passes (false).
fn closed_within(s: &mut std::net::TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 1024];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn raw_connection(port: u16) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut v = [0u8; 14];
    s.read_exact(&mut v).unwrap();
    assert_eq!(&v[..4], b"IceP");
    s
}

#[test]
fn bad_input_never_kills_it() {
    let data = TempDir::new("hostile");
    let port = free_port();
    let mut registry = registry(port, &data.0, &["--IceGrid.Registry.DynamicRegistration=1"]);
    let started = Instant::now();

    // Garbage instead of a message: that connection is closed.
    let mut s = raw_connection(port);
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    s.write_all(&garbage).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(5)));

    // A request header announcing 2 GB: refused before anything is allocated.
    let mut s = raw_connection(port);
    let mut header = b"IceP\x01\x00\x01\x00\x00\x00".to_vec();
    header.extend_from_slice(&0x7fff_fff0u32.to_le_bytes());
    s.write_all(&header).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(5)));

    let c = communicator(port);
    runtime().block_on(async {
        let locator = locator_prx(&c, port);
        let registry = locator.get_registry().await.unwrap().unwrap();
        // Malformed parameters: an error for that request only.
        for op in ["setAdapterDirectProxy", "setReplicatedAdapterDirectProxy", "setServerProcessProxy"] {
            let outcome = registry
                .as_object()
                .invoke(op, floe::protocol::OperationMode::Idempotent, None, |enc| {
                    enc.write_size(1_000_000);
                    enc.write_raw(&[0xff; 7]);
                })
                .await;
            assert!(outcome.is_err(), "{op} accepted garbage");
        }
        let outcome = locator
            .as_object()
            .invoke("findAdapterById", floe::protocol::OperationMode::Nonmutating, None, |enc| {
                enc.write_raw(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
            })
            .await;
        assert!(outcome.is_err());
        // A proxy with a huge adapter id and 1,000 endpoints is just data.
        let many: Vec<String> = (0..1000).map(|p| format!("tcp -h 127.0.0.1 -p {}", 1000 + p)).collect();
        let big = c.string_to_proxy(&format!("dummy:{}", many.join(":"))).unwrap();
        let long_id = "x".repeat(100_000);
        registry.set_adapter_direct_proxy(&long_id, Some(&big)).await.unwrap();
        assert_eq!(locator.find_adapter_by_id(&long_id).await.unwrap().unwrap().reference().wire.endpoints.len(), 1000);

        // 10,000 registrations, 500 at a time.
        let dummy = c.string_to_proxy("dummy:tcp -h 127.0.0.1 -p 4000").unwrap();
        for chunk in 0..20 {
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..500 {
                let (registry, dummy) = (registry.clone(), dummy.clone());
                tasks.spawn(async move {
                    let group = format!("G{}", i % 10);
                    registry.set_replicated_adapter_direct_proxy(&format!("A{chunk}-{i}"), &group, Some(&dummy)).await
                });
            }
            while let Some(r) = tasks.join_next().await {
                r.unwrap().unwrap();
            }
        }
        let g0 = locator.find_adapter_by_id("G0").await.unwrap().unwrap();
        assert_eq!(g0.reference().wire.endpoints.len(), 1000);
        // Many admin sessions.
        let reg: RegistryPrx = ice_grid_locator(&c, port).get_local_registry().await.unwrap().unwrap();
        for _ in 0..200 {
            reg.create_admin_session("a", "b").await.unwrap();
        }
        assert!(locator.find_adapter_by_id("A19-499").await.unwrap().is_some());
        c.destroy().await;
    });
    assert!(registry.is_running(), "floe-registry died");
    eprintln!("bad input survived in {:?}", started.elapsed());
}

#[test]
fn sessions_need_the_verifiers_permission() {
    // A password file for admins, a floe-hosted verifier for client sessions.
    let data = TempDir::new("permissions");
    let passwords = data.0.join("admins");
    // openssl passwd -6 -salt abcdefgh secret
    std::fs::write(
        &passwords,
        "admin $6$abcdefgh$ltjgWl6579NluT/Vi1nwEvcil.G5Nbc4NiXZaNGStk8PSwGfQv72N2CKPPrVACtLtip/cZ/1GM/O6IND4WQhG.\n",
    )
    .unwrap();
    struct OnlyAlice;
    impl floe_registry::slice::glacier2::PermissionsVerifier for OnlyAlice {
        async fn check_permissions(&self, user: String, _: String, _: &floe::Current) -> floe::Result<(bool, String)> {
            Ok((user == "alice", "only alice".into()))
        }
    }
    let rt = runtime();
    let verifier_host = Communicator::new().unwrap();
    let verifier = rt.block_on(async {
        let adapter = verifier_host.create_object_adapter_with_endpoints("Verifier", "tcp -h 127.0.0.1").unwrap();
        let p = adapter
            .add(floe_registry::slice::glacier2::PermissionsVerifierServer::new(OnlyAlice), Identity::new("verifier"));
        adapter.activate().await.unwrap();
        p
    });
    let port = free_port();
    let _registry = bare_registry(
        port,
        &data.0,
        &[
            &format!("--IceGrid.Registry.AdminCryptPasswords={}", passwords.display()),
            &format!("--IceGrid.Registry.PermissionsVerifier={verifier}"),
        ],
    );
    let c = communicator(port);
    rt.block_on(async {
        let registry = ice_grid_locator(&c, port).get_local_registry().await.unwrap().unwrap();
        let denied = |r: Result<_, floe::CallError<_>>| match r {
            Err(e) => matches!(e.user(), Some(ice_grid::RegistryCreateAdminSessionError::PermissionDeniedException(_))),
            Ok(_) => false,
        };
        assert!(registry.create_admin_session("admin", "secret").await.unwrap().is_some());
        assert!(denied(registry.create_admin_session("admin", "wrong").await));
        assert!(denied(registry.create_admin_session("mallory", "secret").await));
        let session = registry.create_session("alice", "x").await.unwrap().unwrap();
        session.keep_alive().await.unwrap();
        match registry.create_session("bob", "x").await {
            Err(e) => match e.user() {
                Some(ice_grid::RegistryCreateSessionError::PermissionDeniedException(p)) => {
                    assert_eq!(p.reason, "only alice")
                }
                other => panic!("{other:?}"),
            },
            Ok(_) => panic!("bob got a session"),
        }
        c.destroy().await;
        verifier_host.destroy().await;
    });
}

#[test]
fn declared_replica_groups_balance_the_load() {
    let data = TempDir::new("groups");
    let port = free_port();
    let _registry = registry(
        port,
        &data.0,
        &[
            "--IceGrid.Registry.DynamicRegistration=1",
            "--Floe.Registry.ReplicaGroup.RR.LoadBalancing=round-robin",
            "--Floe.Registry.ReplicaGroup.OG.LoadBalancing=ordered",
            "--Floe.Registry.ReplicaGroup.OG.NReplicas=2",
            "--Floe.Registry.ReplicaGroup.OG.Priority.OG1=3",
            "--Floe.Registry.ReplicaGroup.OG.Priority.OG2=1",
            "--Floe.Registry.ReplicaGroup.OG.Priority.OG3=2",
            "--Floe.Registry.ReplicaGroup.RA.LoadBalancing=random",
        ],
    );
    let c = communicator(port);
    runtime().block_on(async {
        let locator = locator_prx(&c, port);
        let registry = locator.get_registry().await.unwrap().unwrap();
        let dummy = |p: u16| c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {p}")).unwrap();
        for (i, group) in ["RR", "OG", "RA"].iter().enumerate() {
            for m in 1..=3u16 {
                let id = format!("{group}{m}");
                let p = dummy(5000 + 10 * i as u16 + m);
                registry.set_replicated_adapter_direct_proxy(&id, group, Some(&p)).await.unwrap();
            }
        }
        let mut firsts = Vec::new();
        for _ in 0..3 {
            let p = locator.find_adapter_by_id("RR").await.unwrap().unwrap();
            assert_eq!(ports(&p).len(), 3);
            firsts.push(ports(&p)[0]);
        }
        firsts.sort();
        assert_eq!(firsts, [5001, 5002, 5003], "each member comes first in turn");
        let ordered = locator.find_adapter_by_id("OG").await.unwrap().unwrap();
        assert_eq!(ports(&ordered), [5012, 5013], "by priority, two replicas");
        let mut orders = std::collections::BTreeSet::new();
        for _ in 0..50 {
            orders.insert(ports(&locator.find_adapter_by_id("RA").await.unwrap().unwrap()));
        }
        assert!(orders.len() > 1, "random order");
        c.destroy().await;
    });
}

#[test]
fn proxies_carry_the_published_endpoints_of_the_configuration_file() {
    let data = TempDir::new("published");
    let port = free_port();
    // From a configuration file, as icegridregistry reads it.
    let config = data.0.join("registry.conf");
    std::fs::write(
        &config,
        "# published endpoints\n\
         IceGrid.Registry.Client.PublishedEndpoints=tcp -h registry.example.net -p 4061\n\
         IceGrid.Registry.Server.PublishedEndpoints = tcp -h registry.example.net -p 4062\n",
    )
    .unwrap();
    let _registry = registry(port, &data.0, &[&format!("--Ice.Config={}", config.display())]);
    let c = communicator(port);
    runtime().block_on(async {
        let locator = ice_grid_locator(&c, port);
        let query = locator.get_local_query().await.unwrap().unwrap();
        assert_eq!(ports(query.as_object()), [4061]);
        let registry = locator.get_local_registry().await.unwrap().unwrap();
        assert_eq!(ports(registry.as_object()), [4061]);
        let base = LocatorPrx::from_object(locator.as_object().clone());
        let locator_registry = base.get_registry().await.unwrap().unwrap();
        assert_eq!(ports(locator_registry.as_object()), [4062]);
        c.destroy().await;
    });
}

#[test]
fn sessions_of_clients_that_have_gone_expire() {
    let data = TempDir::new("expiry");
    let port = free_port();
    let _registry = registry(port, &data.0, &["--IceGrid.Registry.SessionTimeout=1"]);
    let rt = runtime();
    let (c, c2) = (communicator(port), communicator(port));
    rt.block_on(async {
        let registry = ice_grid_locator(&c, port).get_local_registry().await.unwrap().unwrap();
        assert_eq!(registry.get_session_timeout().await.unwrap(), 1);
        let session = registry.create_admin_session("a", "b").await.unwrap().unwrap();
        session.keep_alive().await.unwrap();
        // Another client keeps its connection open, and its session.
        let registry2 = ice_grid_locator(&c2, port).get_local_registry().await.unwrap().unwrap();
        let kept = registry2.create_admin_session("a", "b").await.unwrap().unwrap();

        // The first client goes away; its session is destroyed once idle for the timeout.
        c.destroy().await;
        let gone = c2.string_to_proxy(&session.to_string()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // ice_ping, unlike keepAlive, does not keep the session alive.
            match gone.ice_ping().await {
                Err(floe::Error::ObjectNotExist { .. }) => break,
                Ok(()) => assert!(Instant::now() < deadline, "the session never expired"),
                Err(e) => panic!("{e}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        kept.keep_alive().await.unwrap();
        kept.get_admin().await.unwrap().unwrap().get_all_registry_names().await.unwrap();
        c2.destroy().await;
    });
}

/// Waits (up to `limit`) until adapter `id` is no longer registered.
async fn unregistered_within(l: &LocatorPrx, id: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if is_adapter_not_found(l, id).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[test]
fn adapters_of_servers_that_died_expire_with_checks() {
    let data = TempDir::new("checks");
    let port = free_port();
    let _registry = registry(
        port,
        &data.0,
        &[
            "--IceGrid.Registry.DynamicRegistration=1",
            "--Floe.Registry.AdapterCheck.Interval=1",
            "--Floe.Registry.AdapterCheck.Failures=2",
        ],
    );
    let c = communicator(port);
    runtime().block_on(async {
        // A live server: an adapter that listens (its `dummy` object does not exist, which
        // still answers the ping).
        let server = Communicator::with_properties(Properties::new()).unwrap();
        let adapter = server.create_object_adapter_with_endpoints("Live", "tcp -h 127.0.0.1").unwrap();
        adapter.activate().await.unwrap();
        let live = adapter.create_direct_proxy(Identity::new("dummy"));
        let locator = locator_prx(&c, port);
        let registry = locator.get_registry().await.unwrap().unwrap();
        registry.set_replicated_adapter_direct_proxy("Live", "Group", Some(&live)).await.unwrap();
        // A server that died without unregistering: nothing listens there any more.
        let dead = c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {}", free_port())).unwrap();
        registry.set_replicated_adapter_direct_proxy("Dead", "Group", Some(&dead)).await.unwrap();

        let started = Instant::now();
        assert!(unregistered_within(&locator, "Dead", Duration::from_secs(8)).await, "Dead is still registered");
        println!("the dead adapter expired after {:?}", started.elapsed());
        let group = locator.find_adapter_by_id("Group").await.unwrap().unwrap();
        assert_eq!(ports(&group), ports(&live));
        // The live one stays as long as it answers…
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(locator.find_adapter_by_id("Live").await.unwrap().is_some());
        // …and goes once its server has gone.
        server.destroy().await;
        assert!(unregistered_within(&locator, "Live", Duration::from_secs(8)).await, "Live is still registered");
        assert!(is_adapter_not_found(&locator, "Group").await);
    });
}

/// GET /metrics of a Prometheus endpoint on `port`.
fn scrape(port: u16) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

/// `Floe.Metrics.Prometheus.Endpoints` on floe-registry: its lookups are the dispatches of its
/// client adapter, counted by operation and outcome.
#[test]
fn registry_lookups_are_scraped_from_its_prometheus_endpoint() {
    let data = TempDir::new("prometheus");
    let (port, metrics) = (free_port(), free_port());
    let _registry = registry(port, &data.0, &[&format!("--Floe.Metrics.Prometheus.Endpoints=127.0.0.1:{metrics}")]);
    runtime().block_on(async {
        let c = communicator(port);
        let l = locator_prx(&c, port);
        for _ in 0..3 {
            assert!(is_adapter_not_found(&l, "nowhere").await);
        }
        c.destroy().await;
    });
    let answer = scrape(metrics);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let lookups = answer
        .lines()
        .find(|l| {
            l.starts_with("floe_dispatches_total{")
                && l.contains("operation=\"findAdapterById\"")
                && l.contains("outcome=\"user_exception\"")
        })
        .unwrap_or_else(|| panic!("no findAdapterById series:\n{answer}"));
    assert!(lookups.ends_with(" 3"), "{lookups}");
    assert!(answer.contains("floe_connections_opened_total{direction=\"incoming\"}"), "{answer}");
}
