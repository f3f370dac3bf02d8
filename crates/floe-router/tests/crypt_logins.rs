//! Logins checked with `Glacier2.CryptPasswords` hash off the router's runtime thread: a
//! session's calls keep flowing through the router while other clients log in with costly
//! SHA-512 crypt hashes.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::{CallError, Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, Properties, Proxy};
use floe_router::slice::glacier2::{RouterCreateSessionError, RouterPrx};

/// The router process, killed when dropped.
struct Router(Child);

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the floe-router binary and waits for its ready line.
fn start_router(port: u16, passwords: &std::path::Path) -> Router {
    let mut child = Command::new(env!("CARGO_BIN_EXE_floe-router"))
        .arg(format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"))
        .arg(format!("--Glacier2.CryptPasswords={}", passwords.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("floe-router starts");
    let stdout = child.stdout.take().unwrap();
    let router = Router(child);
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line == "floe-router ready" => break,
            Some(Ok(_)) => {}
            _ => panic!("floe-router exited before it was ready"),
        }
    }
    router
}

/// Answers every request (`ice_ping` included) with an empty reply.
struct Echo;

impl Dispatcher for Echo {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let reply = request.current.ok(|_| {});
        Box::pin(async move { reply })
    }
}

/// A SHA-512 crypt hash of `password` that takes about `target` to check, and how long it
/// took to make (as long as a check takes).
fn costly_hash(password: &str, target: Duration) -> (String, Duration) {
    let probe_rounds = 20_000u64;
    let started = Instant::now();
    pwhash::sha512_crypt::hash_with(format!("$6$rounds={probe_rounds}$saltsalt").as_str(), password).unwrap();
    let probe = started.elapsed().max(Duration::from_micros(100));
    let rounds = (probe_rounds as f64 * target.as_secs_f64() / probe.as_secs_f64()) as u64;
    let rounds = rounds.clamp(5_000, 999_999_999);
    let started = Instant::now();
    let hash = pwhash::sha512_crypt::hash_with(format!("$6$rounds={rounds}$saltsalt").as_str(), password).unwrap();
    (hash, started.elapsed())
}

#[test]
fn costly_password_checks_do_not_hold_up_forwarding() {
    let dir = std::env::temp_dir().join(format!("floe-router-crypt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (bob, hash_time) = costly_hash("bobs secret", Duration::from_millis(600));
    let alice = pwhash::sha512_crypt::hash_with("$6$rounds=1000$saltsalt", "alices secret").unwrap();
    let passwords = dir.join("passwords");
    std::fs::write(&passwords, format!("alice {alice}\nbob {bob}\n")).unwrap();
    let port = free_port();
    let _router = start_router(port, &passwords);

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let backend = Communicator::new().unwrap();
        let adapter = backend.create_object_adapter_with_endpoints("Backend", "tcp -h 127.0.0.1").unwrap();
        let echo = adapter.add(Arc::new(Echo), Identity::new("echo"));
        adapter.activate().await.unwrap();

        // Alice's session, and her calls through it.
        let props = Properties::new();
        props.set("Ice.Default.Router", &format!("Glacier2/router:tcp -h 127.0.0.1 -p {port}"));
        let client = Communicator::with_properties(props).unwrap();
        let router = RouterPrx::from_object(client.default_router().unwrap());
        router.create_session("alice", "alices secret").await.unwrap();
        let routed = client.string_to_proxy(&echo.to_string()).unwrap();
        for _ in 0..20 {
            routed.ice_ping().await.unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let done: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let calls = tokio::spawn({
            let (stop, done) = (stop.clone(), done.clone());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    routed.ice_ping().await.unwrap();
                    done.lock().unwrap().push(Instant::now());
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;

        // Bob logs in (with a wrong password, so that every attempt is checked) meanwhile.
        let other = Communicator::new().unwrap();
        let direct = RouterPrx::from_object(
            other.string_to_proxy(&format!("Glacier2/router:tcp -h 127.0.0.1 -p {port}")).unwrap(),
        );
        let logins = Instant::now();
        for _ in 0..3 {
            match direct.create_session("bob", "wrong").await {
                Err(CallError::User(RouterCreateSessionError::PermissionDeniedException(_))) => {}
                other => panic!("expected PermissionDenied, got {other:?}"),
            }
        }
        let logins_end = Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.store(true, Ordering::Relaxed);
        calls.await.unwrap();

        let done = std::mem::take(&mut *done.lock().unwrap());
        let during: Vec<Instant> = done.iter().copied().filter(|t| *t >= logins && *t <= logins_end).collect();
        let max_gap = done.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
        eprintln!(
            "hash {hash_time:?}, 3 logins {:?}, {} calls during them ({} in all), longest gap {max_gap:?}",
            logins_end - logins,
            during.len(),
            done.len()
        );
        assert!(during.len() >= 3, "calls were held up by the logins: {} during them", during.len());
        assert!(max_gap < hash_time / 3, "a call waited {max_gap:?} (one hash takes {hash_time:?})");
        other.destroy().await;
        client.destroy().await;
        backend.destroy().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}
