//! Busy polling (`Floe.Runtime.BusyPoll`) on the single-thread runtimes communicators start:
//! readers woken by a spin read their sockets ahead of the epoll event, and everything they
//! read arrives whole and in order, for messages of every size and for a peer that hangs up.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::protocol::OperationMode;
use floe::transport::busy_poll;
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, Properties};

/// Answers each request with the byte sequence it was sent.
struct Echo;

impl Dispatcher for Echo {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            match request.plain_decoder().read_byte_seq() {
                Ok(bytes) => c.ok(|e| e.write_byte_seq(&bytes)),
                Err(e) => c.error(&e.into()),
            }
        })
    }
}

/// A communicator with a single-thread runtime that spins for up to `budget_us` µs, whether
/// or not other threads of the machine want the CPUs (the tests run beside others).
fn busy_polling(budget_us: u64) -> Communicator {
    let props = Properties::new();
    props.set("Floe.Runtime.Threads", "1");
    props.set("Floe.Runtime.BusyPoll", &budget_us.to_string());
    props.set("Floe.Runtime.BusyPoll.SpareCpuOnly", "0");
    Communicator::with_properties(props).unwrap()
}

/// The tests of this file run one at a time: a spin of one would otherwise take the CPU that
/// the other's spins need, and spins cut short that way count as misses.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Plays an Ice server on a plain socket: accepts one connection, validates it as an Ice server
/// does, and reads one message. Returns the socket and the message's body.
fn accept_and_read_a_request(listener: &std::net::TcpListener) -> (std::net::TcpStream, Vec<u8>) {
    let (mut s, _) = listener.accept().unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(&[b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0]).unwrap();
    let mut header = [0u8; 14];
    s.read_exact(&mut header).unwrap();
    let size = u32::from_le_bytes(header[10..14].try_into().unwrap()) as usize;
    let mut body = vec![0u8; size - 14];
    s.read_exact(&mut body).unwrap();
    (s, body)
}

/// The parks of busy-polling threads that had a watched reader: each one counts as a spin, a
/// skipped spin or a spin the busy machine did not allow.
fn parks_with_a_watch() -> u64 {
    let s = busy_poll::stats();
    s.spins + s.skipped + s.machine_busy
}

#[test]
fn messages_of_every_size_arrive_whole_through_busy_polling_readers() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A budget far longer than any reply takes: every wait of a reader here is a spin.
    let server = busy_polling(200_000);
    let client = busy_polling(200_000);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Echo), Identity::new("echo"));
    server.block_on(adapter.activate()).unwrap();
    let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("echo")).to_string()).unwrap();
    let before = busy_poll::stats();
    // The calls run on the client's runtime thread, as a floe program's own tasks do: no
    // other thread needs waking between them, so the spins are not cut short by one.
    let rounds = client.runtime_handle().spawn(async move {
        let sizes = [0usize, 1, 7, 100, 1_000, 16_384, 65_536, 300_000, 1_000_000];
        for round in 0..40usize {
            let size = sizes[round % sizes.len()];
            let sent: Vec<u8> = (0..size).map(|i| (i * 31 + round) as u8).collect();
            let reply = proxy
                .invoke("echo", OperationMode::Normal, None, |e| e.write_byte_seq(&sent))
                .await
                .unwrap()
                .expect("a twoway reply");
            let got = reply.decode(|d| d.read_byte_seq()).unwrap();
            assert_eq!(got.len(), size, "round {round}");
            assert!(got[..] == sent[..], "round {round}: {size} bytes echoed differ");
        }
    });
    client.block_on(rounds).expect("every round echoed");
    let after = busy_poll::stats();
    // A spin that yields to another thread on its CPU ends at once (on a machine whose CPUs
    // other programs keep busy, every spin may); any other spin outlasts the reply it waits
    // for, so it finds it.
    let uncontended = (after.spins - before.spins) - (after.contended - before.contended);
    assert!(after.found > before.found || uncontended == 0, "readers were woken by spins: {before:?} → {after:?}");
    assert!(after.spins > before.spins, "the readers were watched: {before:?} → {after:?}");
    client.destroy_blocking();
    server.destroy_blocking();
}

#[test]
fn a_peer_that_hangs_up_on_a_watched_connection_ends_the_call_with_an_error() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A plain socket server: it validates the connection as an Ice server does, reads the
    // request, then closes the connection without a reply.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let _connection = accept_and_read_a_request(&listener);
        // Let the client's reader start waiting, so that a spin watches the hang-up.
        std::thread::sleep(Duration::from_millis(50));
    });
    let client = busy_polling(200_000);
    let proxy = client.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port} -t 10000")).unwrap();
    let started = Instant::now();
    let result = client.block_on(proxy.invoke("op", OperationMode::Normal, None, |_| {}));
    assert!(result.is_err(), "a call whose connection closed fails: {result:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "the hang-up is seen at once");
    server.join().unwrap();
    client.destroy_blocking();
}

#[test]
fn a_machine_without_a_spare_cpu_gets_no_spin_by_default() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // floe's defaults (a one-thread runtime that spins for up to 50 µs), while one spinning
    // thread more than there are CPUs keeps the machine busy.
    let defaults = || {
        let props = Properties::new();
        props.set("Floe.Runtime.Threads", "1");
        Communicator::with_properties(props).unwrap()
    };
    let server = defaults();
    let client = defaults();
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Echo), Identity::new("echo"));
    server.block_on(adapter.activate()).unwrap();
    let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("echo")).to_string()).unwrap();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (before, after) = std::thread::scope(|scope| {
        for _ in 0..=cpus {
            scope.spawn(|| {
                let deadline = Instant::now() + Duration::from_secs(20);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                    std::hint::spin_loop();
                }
            });
        }
        // The kernel's count is read once a millisecond: let it see the spinning threads.
        std::thread::sleep(Duration::from_millis(20));
        let before = busy_poll::stats();
        let calls = client.runtime_handle().spawn(async move {
            for round in 0..200u32 {
                let sent = round.to_le_bytes();
                let reply = proxy
                    .invoke("echo", OperationMode::Normal, None, |e| e.write_byte_seq(&sent))
                    .await
                    .unwrap()
                    .expect("a twoway reply");
                assert_eq!(&reply.decode(|d| d.read_byte_seq()).unwrap()[..], &sent[..]);
            }
        });
        client.block_on(calls).expect("every call answered");
        let after = busy_poll::stats();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (before, after)
    });
    // Each call parks both runtimes at least once; most parks must have declined to spin.
    let declined = after.machine_busy - before.machine_busy;
    assert!(declined >= 200, "only {declined} spins declined while the machine was busy: {before:?} → {after:?}");
    client.destroy_blocking();
    server.destroy_blocking();
}

#[test]
fn a_peer_that_only_sends_oneways_is_not_watched_and_one_that_calls_twoway_is() {
    use floe::encoding::{Context, EncodingVersion};
    use floe::protocol::request::{encode_request, RequestPrefix};
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = busy_polling(200);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Echo), Identity::new("echo"));
    server.block_on(adapter.activate()).unwrap();
    let port = match &adapter.endpoints()[0] {
        floe::encoding::EndpointData::Tcp(ip) => ip.port as u16,
        other => panic!("{other:?}"),
    };
    // A plain socket client, so that only the server's thread spins in this process.
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket.set_nodelay(true).unwrap();
    let mut validate = [0u8; 14];
    socket.read_exact(&mut validate).unwrap();
    let prefix = RequestPrefix::new(&Identity::new("echo"), "", "echo", OperationMode::Normal);
    let request =
        |id: i32| encode_request(id, &prefix, &Context::default(), EncodingVersion::V1_1, |e| e.write_byte_seq(b"x"));
    // Oneways a millisecond apart: each read finds one request or a few, and the next finds
    // nothing. The reader watched before the first request ages out after a few busy periods
    // (fewer when a loaded machine lets requests pile up between reads): send rounds of ten
    // until one of them makes no park with a watch.
    let mut settled = false;
    for _ in 0..50 {
        let at = parks_with_a_watch();
        for _ in 0..10 {
            socket.write_all(&request(0)).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        if parks_with_a_watch() == at {
            settled = true;
            break;
        }
    }
    assert!(settled, "the reader watched before the oneways ages out");
    let before = parks_with_a_watch();
    for _ in 0..40 {
        socket.write_all(&request(0)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let oneway_parks = parks_with_a_watch() - before;
    // Twoway calls the same way: the peer waits for each reply, so the reader is watched.
    let before = parks_with_a_watch();
    let mut reply = vec![0u8; 64];
    for id in 1..=40 {
        socket.write_all(&request(id)).unwrap();
        let mut header = [0u8; 14];
        socket.read_exact(&mut header).unwrap();
        let size = u32::from_le_bytes(header[10..14].try_into().unwrap()) as usize;
        reply.resize(size - 14, 0);
        socket.read_exact(&mut reply).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let twoway_parks = parks_with_a_watch() - before;
    assert_eq!(oneway_parks, 0, "no spin watches a peer that only sends oneways");
    assert!(twoway_parks >= 10, "the reader of a twoway caller is watched: {twoway_parks} parks of 40 calls");
    drop(socket);
    server.destroy_blocking();
}

#[test]
fn a_connection_awaiting_a_reply_stays_watched_while_its_peer_sends_oneways() {
    use floe::encoding::{Context, EncodingVersion};
    use floe::protocol::request::{encode_request, RequestPrefix};
    use std::sync::mpsc;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A plain socket server that, before it answers the client's call, sends the client
    // oneway requests a millisecond apart over the same connection (as a server calling back
    // a client would), then the reply. The test counts the client's parks while the second
    // half of the oneways arrive: by then the read the client started before the first
    // oneway is no longer watched (WATCH_PERIODS), so only the rule that a connection
    // awaiting a reply stays watched can make those parks watch it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (halfway_tx, halfway_rx) = mpsc::channel::<()>();
    let (measured_tx, measured_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut s, body) = accept_and_read_a_request(&listener);
        let request_id = i32::from_le_bytes(body[..4].try_into().unwrap());
        let prefix = RequestPrefix::new(&Identity::new("callback"), "", "tick", OperationMode::Normal);
        let oneway = encode_request(0, &prefix, &Context::default(), EncodingVersion::V1_1, |_| {});
        for i in 0..60 {
            if i == 30 {
                halfway_tx.send(()).unwrap();
                measured_rx.recv().unwrap();
            }
            s.write_all(&oneway).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        done_tx.send(()).unwrap();
        measured_rx.recv().unwrap();
        // The reply: status 0 (ok) and an empty 1.1 encapsulation.
        let mut reply = vec![b'I', b'c', b'e', b'P', 1, 0, 1, 0, 2, 0, 0, 0, 0, 0];
        reply.extend_from_slice(&request_id.to_le_bytes());
        reply.extend_from_slice(&[0, 6, 0, 0, 0, 1, 1]);
        let total = reply.len() as u32;
        reply[10..14].copy_from_slice(&total.to_le_bytes());
        s.write_all(&reply).unwrap();
        // Stay open until the client has read the reply.
        let _ = s.read(&mut [0u8; 1]);
    });
    let client = busy_polling(200);
    let proxy = client.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port} -t 10000")).unwrap();
    let call =
        client.runtime_handle().spawn(async move { proxy.invoke("op", OperationMode::Normal, None, |_| {}).await });
    halfway_rx.recv().unwrap();
    let before = parks_with_a_watch();
    measured_tx.send(()).unwrap();
    done_rx.recv().unwrap();
    let parks = parks_with_a_watch() - before;
    measured_tx.send(()).unwrap();
    let result = client.block_on(call).expect("the call's task");
    assert!(result.is_ok(), "the call is answered: {result:?}");
    assert!(parks > 0, "the connection a reply is awaited on stays watched while oneways arrive");
    client.destroy_blocking();
    server.join().unwrap();
}
