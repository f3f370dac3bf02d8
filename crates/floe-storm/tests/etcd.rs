//! floe-storm replicas sharing their topics, links and subscribers in one etcd cluster
//! (`Floe.Storm.Etcd.Endpoints`): a real three-member etcd cluster on loopback (Debian's
//! etcd-server, installed by scripts/install-deps; the tests fail without it) and two or
//! three floe-storm processes. State made through one replica is seen through another and
//! outlives them all; a publisher keeps publishing while the replica it is connected to is
//! SIGKILLed, and its subscribers lose only the events that replica had not delivered yet, in
//! order; a subscriber found dead by one replica disappears from the others; a replica cut
//! off from etcd while it compacted its history catches up.

#[path = "../../../tests/support/etcd_cluster.rs"]
mod etcd_cluster;

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_cluster::EtcdCluster;
use floe::protocol::OperationMode;
use floe::{CallError, Communicator, DispatchFuture, Dispatcher, IncomingRequest, ObjectPrx, Properties, Proxy};
use floe_storm::slice::ice_storm::{TopicManagerPrx, TopicPrx, TopicSubscribeAndGetPublisherError};
use floe_storm::store::Record;

const INSTANCE: &str = "EtcdStorm";

/// A port for a replica (block 1 of `ports`; the etcd cluster's members take block 0).
fn free_port() -> u16 {
    etcd_cluster::ports::unused_port(1)
}

fn cluster(name: &str) -> EtcdCluster {
    EtcdCluster::start(name, Path::new(env!("CARGO_TARGET_TMPDIR")))
        .expect("these tests need etcd (Debian's etcd-server, see scripts/install-deps)")
}

/// A floe-storm replica; SIGKILLed when dropped.
struct Replica {
    child: Child,
    topic_port: u16,
    publish_port: u16,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    /// Starts a replica on fresh ports and waits (up to 30 s) until it is ready.
    fn start(cluster: &EtcdCluster) -> Replica {
        Replica::start_on(cluster, free_port(), free_port())
    }

    /// Starts a replica on these ports and waits (up to 30 s) until it is ready.
    fn start_on(cluster: &EtcdCluster, topic_port: u16, publish_port: u16) -> Replica {
        Replica::start_with(&cluster.client_urls, topic_port, publish_port, &[])
    }

    /// Starts a replica on fresh ports that knows only the etcd members at `urls`.
    fn start_with(urls: &[String], topic_port: u16, publish_port: u16, extra: &[&str]) -> Replica {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-storm"));
        cmd.args([
            &format!("--IceStorm.InstanceName={INSTANCE}"),
            &format!("--IceStorm.TopicManager.Endpoints=tcp -h 127.0.0.1 -p {topic_port}"),
            &format!("--IceStorm.Publish.Endpoints=tcp -h 127.0.0.1 -p {publish_port}"),
            &format!("--Floe.Storm.Etcd.Endpoints={}", urls.join(",")),
            "--Floe.Storm.Etcd.LeaseTTL=2",
            // The cluster may still be electing its first leader.
            "--Floe.Storm.Etcd.Timeout=20",
            "--IceStorm.Send.Timeout=5000",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(if std::env::var_os("FLOE_STORM_TEST_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().expect("floe-storm starts");
        let mut out = child.stdout.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("floe-storm ready") {
            assert!(Instant::now() < deadline, "floe-storm did not get ready");
            let n = out.read(&mut buf).unwrap();
            assert!(n > 0, "floe-storm exited: {:?}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        std::thread::spawn(move || while out.read(&mut buf).is_ok_and(|n| n > 0) {});
        Replica { child, topic_port, publish_port }
    }

    /// SIGTERM, and the exit status (within 10 s).
    fn terminate(mut self) -> Option<i32> {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

fn communicator() -> Communicator {
    let props = Properties::new();
    props.set("Ice.Default.InvocationTimeout", "5000");
    Communicator::with_properties(props).unwrap()
}

/// The topic manager of the replicas listed.
fn manager(c: &Communicator, replicas: &[&Replica]) -> TopicManagerPrx {
    let endpoints: Vec<String> = replicas.iter().map(|r| format!("tcp -h 127.0.0.1 -p {}", r.topic_port)).collect();
    TopicManagerPrx::from_object(
        c.string_to_proxy(&format!("{INSTANCE}/TopicManager:{}", endpoints.join(":"))).unwrap(),
    )
}

/// Topic `name` on that replica only (the proxies the service returns list every replica).
fn topic_on(c: &Communicator, replica: &Replica, name: &str) -> TopicPrx {
    let p = format!("{INSTANCE}/topic.{name}:tcp -h 127.0.0.1 -p {}", replica.topic_port);
    TopicPrx::from_object(c.string_to_proxy(&p).unwrap())
}

fn qos(pairs: &[(&str, &str)]) -> HashMap<floe::CompactString, floe::CompactString> {
    pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
}

fn id_str(id: &floe::Identity) -> String {
    floe::reference::identity_to_string(id)
}

/// A servant that records the sequence numbers of the `tick` events it receives.
fn collector() -> (Arc<Mutex<Vec<i32>>>, Arc<dyn Dispatcher>) {
    let ticks = Arc::new(Mutex::new(Vec::new()));
    let t = ticks.clone();
    let servant = move |request: IncomingRequest| -> DispatchFuture {
        if request.current.operation == "tick" {
            let mut d = request.plain_decoder();
            t.lock().unwrap().push(d.read_i32().unwrap_or(-1));
        }
        let reply = request.current.ok(|_| {});
        Box::pin(async move { reply })
    };
    (ticks, Arc::new(servant))
}

async fn tick(publisher: &ObjectPrx, seq: i32) -> floe::Result<()> {
    publisher.invoke("tick", OperationMode::Normal, None, |e| e.write_i32(seq)).await.map(|_| ())
}

/// Waits (up to `limit`) until `check` holds, polling.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn names(m: &TopicManagerPrx) -> Vec<String> {
    let mut names: Vec<String> = m.retrieve_all().await.unwrap().into_keys().map(String::from).collect();
    names.sort();
    names
}

async fn subscribers(t: &TopicPrx) -> Vec<String> {
    let mut subs: Vec<String> = t.get_subscribers().await.unwrap().iter().map(id_str).collect();
    subs.sort();
    subs
}

/// What etcd holds for subscriber `id` of `topic`.
async fn stored(cluster: &EtcdCluster, topic: &str, id: &str) -> Record {
    let mut client = etcd_client::Client::connect(&cluster.client_urls, None).await.unwrap();
    let key = format!("/floe-storm/{INSTANCE}/subscribers/{topic}/{id}");
    let resp = client.get(key.as_str(), None).await.unwrap();
    Record::decode(resp.kvs().first().unwrap_or_else(|| panic!("{key} is not in etcd")).value()).unwrap()
}

/// Checks the state made by `state_is_shared_and_outlives_every_replica` through replica
/// `via`, and that events published through `publish_via` reach both subscribers (one
/// through the link).
async fn check_state(
    c: &Communicator,
    via: &Replica,
    publish_via: &Replica,
    x_ticks: &Mutex<Vec<i32>>,
    y_ticks: &Mutex<Vec<i32>>,
) {
    let m = &manager(c, &[via]);
    eventually(Duration::from_secs(5), "the topics", || async { names(m).await == ["empty", "x", "y"] }).await;
    let x = topic_on(c, via, "x");
    let y = topic_on(c, via, "y");
    eventually(Duration::from_secs(5), "x's subscribers", || async {
        subscribers(&x).await == [format!("{INSTANCE}/topic.y"), "sub-x".to_string()]
    })
    .await;
    let links: Vec<(String, i32)> =
        x.get_link_info_seq().await.unwrap().into_iter().map(|l| (l.name.to_string(), l.cost)).collect();
    assert_eq!(links, vec![("y".to_string(), 4)]);
    eventually(Duration::from_secs(5), "y's subscriber", || async { subscribers(&y).await == ["sub-y"] }).await;

    // Events published on this replica reach x's oneway subscriber, and y's through the link.
    x_ticks.lock().unwrap().clear();
    y_ticks.lock().unwrap().clear();
    let publisher =
        c.string_to_proxy(&format!("{INSTANCE}/x.publish:tcp -h 127.0.0.1 -p {}", publish_via.publish_port)).unwrap();
    for seq in 0..100 {
        tick(&publisher, seq).await.unwrap();
    }
    let all: Vec<i32> = (0..100).collect();
    eventually(Duration::from_secs(10), "x's ticks", || async { *x_ticks.lock().unwrap() == all }).await;
    eventually(Duration::from_secs(10), "y's ticks", || async { *y_ticks.lock().unwrap() == all }).await;
}

#[test]
fn state_is_shared_and_outlives_every_replica() {
    let started = Instant::now();
    let cluster = cluster("storm-state");
    let a = Replica::start(&cluster);
    let b = Replica::start(&cluster);
    let c = communicator();
    let subs = communicator();
    let adapter = subs.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
    let (x_ticks, x_servant) = collector();
    let (y_ticks, y_servant) = collector();
    let sub_x = adapter.add(x_servant, floe::Identity::new("sub-x")).ice_oneway();
    let sub_y = adapter.add(y_servant, floe::Identity::new("sub-y"));
    subs.block_on(async { adapter.activate().await.unwrap() });
    c.block_on(async {
        // Made through A only.
        let through_a = manager(&c, &[&a]);
        through_a.create("x").await.unwrap();
        through_a.create("y").await.unwrap();
        let (x, y) = (topic_on(&c, &a, "x"), topic_on(&c, &a, "y"));
        through_a.create("empty").await.unwrap();
        x.link(Some(&y), 4).await.unwrap();
        x.subscribe_and_get_publisher(&qos(&[("retryCount", "3")]), Some(&sub_x)).await.unwrap();
        y.subscribe_and_get_publisher(&qos(&[("reliability", "ordered")]), Some(&sub_y)).await.unwrap();

        // Seen through B: the topics, the link, the subscribers; a second subscription of
        // sub-y through B is refused, and events published on B reach them.
        check_state(&c, &b, &b, &x_ticks, &y_ticks).await;
        let y_on_b = topic_on(&c, &b, "y");
        let again = y_on_b.subscribe_and_get_publisher(&qos(&[]), Some(&sub_y)).await;
        assert!(matches!(again, Err(CallError::User(TopicSubscribeAndGetPublisherError::AlreadySubscribed(_)))));
    });

    // Every replica gone (one cleanly, one killed), then started again on their ports (the
    // link's proxy has them); they read everything from etcd.
    let ports = [(a.topic_port, a.publish_port), (b.topic_port, b.publish_port)];
    assert_eq!(a.terminate(), Some(0), "floe-storm did not exit cleanly on SIGTERM");
    drop(b);
    let a = Replica::start_on(&cluster, ports[0].0, ports[0].1);
    let b = Replica::start_on(&cluster, ports[1].0, ports[1].1);
    c.block_on(async {
        check_state(&c, &a, &b, &x_ticks, &y_ticks).await;
        // The QoS and the modes are those subscribed with.
        let rx = stored(&cluster, "x", "sub-x").await;
        assert_eq!(rx.qos, vec![("retryCount".to_string(), "3".to_string())]);
        assert!(rx.proxy.starts_with("sub-x -o"), "{}", rx.proxy);
        let ry = stored(&cluster, "y", "sub-y").await;
        assert_eq!(ry.qos, vec![("reliability".to_string(), "ordered".to_string())]);
        assert!(ry.proxy.starts_with("sub-y -t"), "{}", ry.proxy);
        let link = stored(&cluster, "x", &format!("{INSTANCE}%2Ftopic.y")).await;
        assert_eq!(link.link.map(|l| l.0), Some(4));
    });
    c.destroy_blocking();
    subs.destroy_blocking();
    eprintln!("state test: {:?}", started.elapsed());
}

/// What the publisher saw of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// Acknowledged by the replica on this publish port (the connection was the same before
    /// and after the call).
    Acked(u16),
    /// Acknowledged, but the connection changed around the call.
    AckedSomewhere,
    /// The call failed.
    Failed,
}

/// Events published in the failover tests, and the one after which the publisher's
/// replica is killed.
const EVENTS: i32 = 4000;
const KILL_AT: usize = 1000;
/// The subscribers of the failover tests.
const KINDS: [&str; 3] = ["twoway", "oneway", "ordered"];

/// Three replicas and a topic `failover` that every replica knows with a twoway, a oneway and
/// an ordered subscriber.
struct Failover {
    started: Instant,
    _cluster: EtcdCluster,
    replicas: Vec<Option<Replica>>,
    c: Communicator,
    subs: Communicator,
    /// What each subscriber of [`KINDS`] received.
    collected: Vec<Arc<Mutex<Vec<i32>>>>,
}

impl Failover {
    fn start(name: &str) -> Failover {
        let started = Instant::now();
        let cluster = cluster(name);
        let replicas: Vec<Option<Replica>> = (0..3).map(|_| Some(Replica::start(&cluster))).collect();
        let c = communicator();
        let subs = communicator();
        let adapter = subs.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
        let mut collected = Vec::new();
        let mut proxies = Vec::new();
        for kind in KINDS {
            let (ticks, servant) = collector();
            let p = adapter.add(servant, floe::Identity::new(kind));
            proxies.push(if kind == "oneway" { p.ice_oneway() } else { p });
            collected.push(ticks);
        }
        subs.block_on(async { adapter.activate().await.unwrap() });
        let f = Failover { started, _cluster: cluster, replicas, c, subs, collected };
        f.c.block_on(async {
            let topic = manager(&f.c, &f.live()).create("failover").await.unwrap().unwrap();
            for (kind, p) in KINDS.iter().zip(&proxies) {
                let q = if *kind == "ordered" { qos(&[("reliability", "ordered")]) } else { qos(&[]) };
                topic.subscribe_and_get_publisher(&q, Some(p)).await.unwrap();
            }
            for r in f.live() {
                let m = manager(&f.c, &[r]);
                eventually(Duration::from_secs(5), "the subscribers on every replica", || async {
                    match m.retrieve("failover").await {
                        Ok(Some(t)) => subscribers(&t).await.len() == 3,
                        _ => false,
                    }
                })
                .await;
                // Its publisher proxy lists all three.
                eventually(Duration::from_secs(5), "a publisher proxy with every replica", || async {
                    let p = topic_on(&f.c, r, "failover").get_publisher().await.unwrap().unwrap();
                    p.reference().wire.endpoints.len() == 3
                })
                .await;
            }
        });
        f
    }

    fn live(&self) -> Vec<&Replica> {
        self.replicas.iter().flatten().collect()
    }

    /// SIGKILLs the replica whose publish port is `port`.
    fn kill(&mut self, port: u16) {
        let i = self
            .replicas
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.publish_port == port))
            .expect("the publisher is connected to a replica");
        drop(self.replicas[i].take());
    }

    /// Checks what each subscriber received against what the publisher saw (`sent`), the
    /// replica on `dead_port` having been killed.
    fn check(self, what: &str, sent: &[Sent], dead_port: u16) {
        assert_eq!(sent.len(), EVENTS as usize, "the publisher did not publish every event in time");
        // Events sent to the dead replica: those acknowledged by it, and those whose call
        // failed or moved (in flight at the kill). The others were acknowledged by a live
        // replica.
        let on_dead = |s: &Sent| !matches!(s, Sent::Acked(p) if *p != dead_port);
        let failed = sent.iter().filter(|s| **s == Sent::Failed).count();
        let last_dead = sent.iter().rposition(on_dead).unwrap();
        let first_live = sent.iter().position(|s| !on_dead(s)).unwrap_or(sent.len());
        assert!(first_live > KILL_AT, "events before the kill went to a live replica");
        assert!(sent[last_dead + 1..].iter().all(|s| !on_dead(s)), "the publisher went back to the dead replica");
        let live = sent.len() - last_dead - 1;
        assert!(live >= 1000, "only {live} events after the failover");
        assert!(failed <= 3, "{failed} calls failed at the failover");

        self.subs.block_on(async {
            for (kind, ticks) in KINDS.iter().zip(&self.collected) {
                // Every event acknowledged by a live replica arrives.
                let want: Vec<i32> = ((last_dead + 1) as i32..EVENTS).collect();
                eventually(Duration::from_secs(10), &format!("{kind}: the events after the failover"), || async {
                    let got = ticks.lock().unwrap();
                    got.iter().filter(|s| **s > last_dead as i32).count() >= want.len()
                })
                .await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                let got = ticks.lock().unwrap().clone();
                // Once each, and in order on each side of the failover.
                let mut seen = got.clone();
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), got.len(), "{kind}: an event arrived twice");
                let before: Vec<i32> = got.iter().copied().filter(|s| *s <= last_dead as i32).collect();
                let after: Vec<i32> = got.iter().copied().filter(|s| *s > last_dead as i32).collect();
                assert!(before.windows(2).all(|w| w[0] < w[1]), "{kind}: events of the dead replica out of order");
                assert_eq!(after, want, "{kind}: the events after the failover");
                // What the dead replica delivered is a prefix of what it got: the lost events
                // are its undelivered tail, and nothing else is missing.
                // An event acknowledged on a new connection ("moved") was retried after the
                // kill and may have been delivered by the live replica: it can arrive after
                // the dead replica's undelivered tail, so it is left out of the prefix.
                let moved = |s: &i32| sent[*s as usize] == Sent::AckedSomewhere;
                let from_dead: Vec<i32> = before.iter().copied().filter(|s| !moved(s)).collect();
                let lost_from = from_dead.len() as i32;
                if from_dead != (0..lost_from).collect::<Vec<_>>() {
                    let top = from_dead.last().copied().unwrap_or(0);
                    let gaps: Vec<i32> = (0..top).filter(|s| !from_dead.contains(s)).collect();
                    panic!(
                        "{kind}: a gap before the failover: {} events of the dead replica arrived, up to #{top}, \
                         missing {gaps:?}; the publisher saw {:?} from the first gap on",
                        before.len(),
                        gaps.first().map(|g| &sent[*g as usize..(*g as usize + 20).min(sent.len())])
                    );
                }
                let lost = last_dead as i32 + 1 - lost_from;
                let acked_lost =
                    sent[lost_from as usize..=last_dead].iter().filter(|s| matches!(s, Sent::Acked(_))).count();
                let in_order = got.windows(2).all(|w| w[0] < w[1]);
                eprintln!(
                    "{what}, {kind}: {} events received; lost at the kill: {lost} (from #{lost_from} to #{last_dead}, \
                     {acked_lost} of them acknowledged); {failed} calls failed; in order across the failover: {in_order}",
                    got.len()
                );
            }
        });
        self.c.destroy_blocking();
        self.subs.destroy_blocking();
        eprintln!("{what} failover test: {:?}", self.started.elapsed());
    }
}

#[test]
fn a_publisher_fails_over_when_its_replica_is_killed() {
    let mut f = Failover::start("storm-failover");
    let c = f.c.clone();
    let (sent, dead_port) = c.block_on(async {
        let topic = manager(&c, &f.live()).retrieve("failover").await.unwrap().unwrap();
        let publisher = topic.get_publisher().await.unwrap().unwrap();
        // Twoway events, one after the other, in a task; the replica it is connected to is
        // killed once KILL_AT events were acknowledged.
        let progress = Arc::new(Mutex::new(Vec::<Sent>::new()));
        let log = progress.clone();
        let publishing = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            let port = |conn: floe::Result<floe::connection::Connection>| {
                conn.ok().and_then(|c| c.remote_address()).map(|a| a.port())
            };
            for seq in 0..EVENTS {
                if Instant::now() > deadline {
                    break;
                }
                let before = port(publisher.ice_get_connection().await);
                let result = tick(&publisher, seq).await;
                let after = port(publisher.ice_get_connection().await);
                log.lock().unwrap().push(match (result, before, after) {
                    (Err(_), _, _) => Sent::Failed,
                    (Ok(()), Some(b), Some(a)) if a == b => Sent::Acked(a),
                    (Ok(()), _, _) => Sent::AckedSomewhere,
                });
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let dead_port = loop {
            let last = progress.lock().unwrap().get(KILL_AT).copied();
            if let Some(Sent::Acked(port)) = last {
                break port;
            }
            assert!(Instant::now() < deadline, "the publisher did not get going: {last:?}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        f.kill(dead_port);
        publishing.await.unwrap();
        let sent = progress.lock().unwrap().clone();
        (sent, dead_port)
    });
    f.check("floe publisher", &sent, dead_port);
}

#[test]
fn an_ice_python_publisher_fails_over_when_its_replica_is_killed() {
    let mut f = Failover::start("storm-failover-python");
    let endpoints: Vec<String> = f.live().iter().map(|r| format!("tcp -h 127.0.0.1 -p {}", r.topic_port)).collect();
    let mut child = Command::new("/usr/bin/python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/failover_publisher.py"))
        .arg(format!("{INSTANCE}/TopicManager:{}", endpoints.join(":")))
        .args(["failover", &EVENTS.to_string(), "--Ice.Default.InvocationTimeout=5000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 runs (python3-zeroc-ice, see scripts/install-deps)");
    let progress = Arc::new(Mutex::new(Vec::<Sent>::new()));
    let log = progress.clone();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines() {
            let line = line.unwrap();
            let mut words = line.split(' ');
            let seq: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("bad line {line:?}"));
            let mut log = log.lock().unwrap();
            assert_eq!(seq, log.len(), "the publisher's lines out of sequence");
            log.push(match words.next() {
                Some("failed") => Sent::Failed,
                Some("moved") => Sent::AckedSomewhere,
                Some(port) => Sent::Acked(port.parse().unwrap_or_else(|_| panic!("bad line {line:?}"))),
                None => panic!("bad line {line:?}"),
            });
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let dead_port = loop {
        let last = progress.lock().unwrap().get(KILL_AT).copied();
        if let Some(Sent::Acked(port)) = last {
            break port;
        }
        assert!(Instant::now() < deadline, "the Python publisher did not get going: {last:?}");
        std::thread::sleep(Duration::from_millis(1));
    };
    f.kill(dead_port);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the Python publisher did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success(), "the Python publisher failed");
    reader.join().unwrap();
    let sent = progress.lock().unwrap().clone();
    f.check("Ice Python publisher", &sent, dead_port);
}

#[test]
fn a_subscriber_found_dead_by_one_replica_is_removed_from_all() {
    let started = Instant::now();
    let cluster = cluster("storm-dead");
    let a = Replica::start(&cluster);
    let b = Replica::start(&cluster);
    let c = communicator();
    let subs = communicator();
    let adapter = subs.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
    let (ticks, servant) = collector();
    let alive = adapter.add(servant, floe::Identity::new("alive"));
    subs.block_on(async { adapter.activate().await.unwrap() });
    c.block_on(async {
        manager(&c, &[&a]).create("t").await.unwrap();
        let topic_a = topic_on(&c, &a, "t");
        // Nothing listens on its port.
        let dead = c.string_to_proxy(&format!("dead:tcp -h 127.0.0.1 -p {}", free_port())).unwrap();
        topic_a.subscribe_and_get_publisher(&qos(&[]), Some(&dead)).await.unwrap();
        topic_a.subscribe_and_get_publisher(&qos(&[]), Some(&alive)).await.unwrap();
        let through_b = manager(&c, &[&b]);
        eventually(Duration::from_secs(5), "the topic on B", || async { names(&through_b).await == ["t"] }).await;
        let topic_b = topic_on(&c, &b, "t");
        eventually(Duration::from_secs(5), "both subscribers on B", || async {
            subscribers(&topic_b).await == ["alive", "dead"]
        })
        .await;
        assert_eq!(subscribers(&topic_a).await, ["alive", "dead"]);

        // One event through B only: B finds `dead` dead, and A drops it too.
        let publisher =
            c.string_to_proxy(&format!("{INSTANCE}/t.publish:tcp -h 127.0.0.1 -p {}", b.publish_port)).unwrap();
        tick(&publisher, 7).await.unwrap();
        eventually(Duration::from_secs(10), "dead removed on B", || async { subscribers(&topic_b).await == ["alive"] })
            .await;
        eventually(Duration::from_secs(5), "dead removed on A", || async { subscribers(&topic_a).await == ["alive"] })
            .await;
        eventually(Duration::from_secs(5), "the event to the live subscriber", || async {
            *ticks.lock().unwrap() == [7]
        })
        .await;
    });
    c.destroy_blocking();
    subs.destroy_blocking();
    eprintln!("dead subscriber test: {:?}", started.elapsed());
}

#[test]
fn a_replica_cut_off_while_etcd_compacted_reads_everything_again() {
    let started = Instant::now();
    let mut cluster = cluster("storm-compact");
    // A knows only member 0; B the two others.
    let a = Replica::start_with(&cluster.client_urls[..1], free_port(), free_port(), &[]);
    let b = Replica::start_with(&cluster.client_urls[1..], free_port(), free_port(), &[]);
    let c = communicator();
    let sub = |name: &str| c.string_to_proxy(&format!("{name}:tcp -h 127.0.0.1 -p 9")).unwrap();
    c.block_on(async {
        let (through_a, through_b) = (manager(&c, &[&a]), manager(&c, &[&b]));
        through_b.create("stays").await.unwrap();
        let stays = topic_on(&c, &b, "stays");
        through_b.create("goes").await.unwrap();
        for s in ["s1", "s2"] {
            stays.subscribe_and_get_publisher(&qos(&[]), Some(&sub(s))).await.unwrap();
        }
        eventually(Duration::from_secs(5), "A has B's topics", || async {
            names(&through_a).await == ["goes", "stays"]
        })
        .await;
        let stays_on_a = topic_on(&c, &a, "stays");
        eventually(Duration::from_secs(5), "A has B's subscribers", || async {
            subscribers(&stays_on_a).await == ["s1", "s2"]
        })
        .await;

        // A loses its member; meanwhile the state changes and etcd compacts its history, so
        // that A's watch cannot resume where it stopped.
        cluster.kill(0);
        topic_on(&c, &b, "goes").destroy().await.unwrap();
        through_b.create("arrives").await.unwrap();
        stays.unsubscribe(Some(&sub("s2"))).await.unwrap();
        stays.subscribe_and_get_publisher(&qos(&[]), Some(&sub("s3"))).await.unwrap();
        let mut etcd = etcd_client::Client::connect([&cluster.client_urls[1]], None).await.unwrap();
        let revision = etcd.get("/", None).await.unwrap().header().unwrap().revision();
        etcd.compact(revision, None).await.unwrap();
        // Still the old state on A.
        assert_eq!(names(&through_a).await, ["goes", "stays"]);
        cluster.restart(0);
        eventually(Duration::from_secs(15), "A caught up with the topics", || async {
            names(&through_a).await == ["arrives", "stays"]
        })
        .await;
        eventually(Duration::from_secs(5), "A caught up with the subscribers", || async {
            subscribers(&stays_on_a).await == ["s1", "s3"]
        })
        .await;
    });
    c.destroy_blocking();
    eprintln!("compaction test: {:?}", started.elapsed());
}

#[test]
fn a_replica_without_etcd_delivers_and_takes_back_what_it_cannot_store() {
    let started = Instant::now();
    let mut cluster = cluster("storm-cut-off");
    let props = Properties::new();
    props.set("Ice.Default.InvocationTimeout", "30000");
    let c = Communicator::with_properties(props).unwrap();
    // The replica's short timeout applies to its start too: the cluster must be up.
    c.block_on(cluster.leader());
    let a = Replica::start_with(&cluster.client_urls, free_port(), free_port(), &["--Floe.Storm.Etcd.Timeout=2"]);
    let subs = communicator();
    let adapter = subs.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
    let (ticks, servant) = collector();
    let listening = adapter.add(servant, floe::Identity::new("listening"));
    subs.block_on(async { adapter.activate().await.unwrap() });
    c.block_on(async {
        let m = manager(&c, &[&a]);
        let t = m.create("t").await.unwrap().unwrap();
        t.subscribe_and_get_publisher(&qos(&[]), Some(&listening)).await.unwrap();
        for i in 0..3 {
            cluster.kill(i);
        }
        // Additions fail and are taken back.
        let other = c.string_to_proxy("other:tcp -h 127.0.0.1 -p 9").unwrap();
        let refused = t.subscribe_and_get_publisher(&qos(&[]), Some(&other)).await;
        assert!(
            matches!(&refused, Err(CallError::Local(floe::Error::UnknownLocalException(_)))),
            "subscribing without etcd: {refused:?}"
        );
        assert_eq!(subscribers(&t).await, ["listening"]);
        assert!(m.create("u").await.is_err(), "a topic created without etcd");
        assert_eq!(names(&m).await, ["t"]);
        // Events are delivered from memory.
        let publisher = t.get_publisher().await.unwrap().unwrap();
        for seq in 0..10 {
            tick(&publisher, seq).await.unwrap();
        }
        let all: Vec<i32> = (0..10).collect();
        eventually(Duration::from_secs(5), "the events", || async { *ticks.lock().unwrap() == all }).await;
    });
    c.destroy_blocking();
    subs.destroy_blocking();
    eprintln!("cut-off test: {:?}", started.elapsed());
}
