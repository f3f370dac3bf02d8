//! A real three-member etcd cluster on loopback for the tests of the services that keep
//! their state in etcd (floe-registry, floe-storm): each member a child process killed when
//! dropped, its data in a directory removed with the cluster. Included by those tests with
//! `#[path = ".../tests/support/etcd_cluster.rs"] mod etcd_cluster;`.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's etcd-server (see scripts/install-deps).
pub const ETCD: &str = "/usr/bin/etcd";

/// One etcd member, killed (SIGKILL) when dropped.
pub struct Member(Child);

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A three-member etcd cluster on loopback.
pub struct EtcdCluster {
    members: Vec<Option<Member>>,
    /// Each member's arguments, to restart it.
    args: Vec<Vec<String>>,
    /// The members' client URLs (`http://127.0.0.1:<port>`).
    pub client_urls: Vec<String>,
    data: PathBuf,
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.members.clear();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

#[path = "ports.rs"]
pub mod ports;

/// A port for a member (block 0 of `ports`).
fn free_port() -> u16 {
    ports::unused_port(0)
}

fn spawn_etcd(args: &[String]) -> Member {
    let mut cmd = Command::new(ETCD);
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    Member(cmd.spawn().expect("etcd starts"))
}

impl EtcdCluster {
    /// Starts the cluster with its data under `base/<name>-<pid>`, or None (with the reason
    /// printed) where etcd is not installed.
    pub fn start(name: &str, base: &Path) -> Option<EtcdCluster> {
        if !Path::new(ETCD).exists() {
            eprintln!("{ETCD} is missing (Debian package etcd-server, see scripts/install-deps)");
            return None;
        }
        let data = base.join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let peers: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let clients: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let initial: Vec<String> =
            peers.iter().enumerate().map(|(i, p)| format!("m{i}=http://127.0.0.1:{p}")).collect();
        let token = format!("{name}-{}", std::process::id());
        let args: Vec<Vec<String>> = (0..3)
            .map(|i| {
                vec![
                    format!("--name=m{i}"),
                    format!("--data-dir={}", data.join(format!("m{i}")).display()),
                    format!("--listen-client-urls=http://127.0.0.1:{}", clients[i]),
                    format!("--advertise-client-urls=http://127.0.0.1:{}", clients[i]),
                    format!("--listen-peer-urls=http://127.0.0.1:{}", peers[i]),
                    format!("--initial-advertise-peer-urls=http://127.0.0.1:{}", peers[i]),
                    format!("--initial-cluster={}", initial.join(",")),
                    "--initial-cluster-state=new".into(),
                    format!("--initial-cluster-token={token}"),
                    // Quick elections, so that killing the leader costs little.
                    "--heartbeat-interval=50".into(),
                    "--election-timeout=500".into(),
                    "--logger=zap".into(),
                    "--log-level=error".into(),
                ]
            })
            .collect();
        let members = args.iter().map(|a| Some(spawn_etcd(a))).collect();
        let client_urls = clients.iter().map(|p| format!("http://127.0.0.1:{p}")).collect();
        Some(EtcdCluster { members, args, client_urls, data })
    }

    /// The client URLs, comma-separated (the value of an `…Etcd.Endpoints` property).
    pub fn endpoints(&self) -> String {
        self.client_urls.join(",")
    }

    /// The index of the member that is the leader.
    pub async fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            for (i, url) in self.client_urls.iter().enumerate() {
                if let Ok(mut client) = etcd_client::Client::connect([url], None).await {
                    if let Ok(s) = client.status().await {
                        if s.header().is_some_and(|h| h.member_id() == s.leader()) {
                            return i;
                        }
                    }
                }
            }
            assert!(Instant::now() < deadline, "the etcd cluster has no leader");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills member `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        drop(self.members[i].take());
    }

    /// Starts member `i` again, on its data.
    pub fn restart(&mut self, i: usize) {
        self.members[i] = Some(spawn_etcd(&self.args[i]));
    }
}
