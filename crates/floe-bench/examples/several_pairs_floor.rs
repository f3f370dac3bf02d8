//! What each way of waiting for a socket costs when several clients call at once, without any
//! middleware: N client threads, each calling a server thread of its own over loopback TCP with
//! 32-byte requests and 25-byte replies, as threads of one process (the arrangement of
//! `floe-bench`'s `clients-N` tests). The ways:
//!
//! - blocking sockets, one `send` and one `recv` per message (the raw baseline);
//! - a bare epoll loop per thread, as a reactor waits: `send`, then `epoll_wait` for the
//!   edge-triggered event, then `read` — the system calls of bare tokio and of floe, with no
//!   scheduler, task or waker around them;
//! - io_uring, one `io_uring_enter` per message: the send (which posts no completion when it
//!   succeeds) and the receive submitted together, and the wait for the receive in the same
//!   call;
//! - tokio, a current-thread runtime per thread (the shape of floe's connection runtimes and of
//!   the `tokio` column of `floe-bench`);
//! - the same with the client split into two tasks, as floe's client is: the caller writes its
//!   request and waits to be woken, and the connection's reader task reads the reply and wakes
//!   it (a `Notify`), which costs a task wake-up and a second task poll per call.
//!
//! Each rate is a median of interleaved runs, shown with its ratio to blocking sockets: the
//! rungs between the raw baseline and a tokio-based implementation of the test.
//!
//! ```text
//! cargo run --release -p floe-bench --example several_pairs_floor [PAIRS ...]
//! ```
//! (default: 2 and 5 pairs).

// epoll and io_uring are Linux's.
#[cfg(target_os = "linux")]
fn main() {
    floor::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("several_pairs_floor compares epoll and io_uring with blocking sockets: Linux only");
}

#[cfg(target_os = "linux")]
mod floor {
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};
    use std::os::fd::{AsRawFd, RawFd};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const RUNS: usize = 5;
    const WARM_UP: Duration = Duration::from_millis(200);
    const MEASURE_FOR: Duration = Duration::from_millis(1000);
    static REQUEST: [u8; 32] = [1u8; 32];
    static REPLY: [u8; 25] = [2u8; 25];

    /// How each side waits for the other's message.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Kind {
        Blocking,
        Epoll,
        IoUring,
        Tokio,
        TokioTwoTasks,
    }

    impl Kind {
        const ALL: [Kind; 5] = [Kind::Blocking, Kind::Epoll, Kind::IoUring, Kind::Tokio, Kind::TokioTwoTasks];

        fn describe(self) -> &'static str {
            match self {
                Kind::Blocking => "blocking sockets",
                Kind::Epoll => "bare epoll loop",
                Kind::IoUring => "io_uring, one enter per message",
                Kind::Tokio => "tokio, current-thread per thread",
                Kind::TokioTwoTasks => "tokio, caller and reader tasks",
            }
        }
    }

    /// A connected socket's side of the exchange, waiting as its kind says.
    trait Side {
        /// Sends `out` (if any), then reads `into` whole; false once the peer has gone.
        fn exchange(&mut self, out: Option<&'static [u8]>, into: &mut [u8]) -> bool;
    }

    struct BlockingSide(TcpStream);

    impl Side for BlockingSide {
        fn exchange(&mut self, out: Option<&'static [u8]>, into: &mut [u8]) -> bool {
            if let Some(out) = out {
                if self.0.write_all(out).is_err() {
                    return false;
                }
            }
            self.0.read_exact(into).is_ok()
        }
    }

    /// A non-blocking socket in an epoll set of its own, registered edge-triggered as mio does.
    struct EpollSide {
        _stream: TcpStream,
        fd: RawFd,
        epoll: RawFd,
    }

    impl EpollSide {
        fn new(stream: TcpStream) -> EpollSide {
            stream.set_nonblocking(true).unwrap();
            let fd = stream.as_raw_fd();
            // SAFETY: plain system calls on descriptors this side owns.
            let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            assert!(epoll >= 0, "epoll_create1");
            let mut event =
                libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET) as u32, u64: 0 };
            assert_eq!(unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut event) }, 0, "epoll_ctl");
            EpollSide { _stream: stream, fd, epoll }
        }
    }

    impl Drop for EpollSide {
        fn drop(&mut self) {
            // SAFETY: the epoll descriptor is this side's own.
            unsafe { libc::close(self.epoll) };
        }
    }

    impl Side for EpollSide {
        fn exchange(&mut self, out: Option<&'static [u8]>, into: &mut [u8]) -> bool {
            if let Some(out) = out {
                // SAFETY: `out` is valid for its length; a 32-byte message fits any send buffer.
                let sent = unsafe { libc::send(self.fd, out.as_ptr().cast(), out.len(), libc::MSG_NOSIGNAL) };
                if sent != out.len() as isize {
                    return false;
                }
            }
            let mut got = 0;
            while got < into.len() {
                let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
                // SAFETY: `events` has room for the 4 events asked for.
                unsafe { libc::epoll_wait(self.epoll, events.as_mut_ptr(), 4, 1000) };
                loop {
                    let rest = &mut into[got..];
                    // SAFETY: `rest` is valid for writes of its length.
                    let n = unsafe { libc::read(self.fd, rest.as_mut_ptr().cast(), rest.len()) };
                    match n {
                        0 => return false,
                        n if n > 0 => {
                            got += n as usize;
                            if got == into.len() {
                                break;
                            }
                        }
                        _ => {
                            let e = std::io::Error::last_os_error().kind();
                            if e == std::io::ErrorKind::WouldBlock {
                                break;
                            }
                            if e != std::io::ErrorKind::Interrupted {
                                return false;
                            }
                        }
                    }
                }
            }
            true
        }
    }

    /// A socket with an io_uring of its own.
    struct UringSide {
        _stream: TcpStream,
        fd: RawFd,
        ring: io_uring::IoUring,
    }

    impl UringSide {
        fn new(stream: TcpStream) -> UringSide {
            let fd = stream.as_raw_fd();
            UringSide { _stream: stream, fd, ring: io_uring::IoUring::new(8).expect("io_uring_setup") }
        }
    }

    impl Side for UringSide {
        fn exchange(&mut self, out: Option<&'static [u8]>, into: &mut [u8]) -> bool {
            use io_uring::{opcode, squeue, types};
            const SEND: u64 = 1;
            const RECV: u64 = 2;
            let mut send_failed = false;
            if let Some(out) = out {
                let send = opcode::Send::new(types::Fd(self.fd), out.as_ptr(), out.len() as u32)
                    .build()
                    .flags(squeue::Flags::SKIP_SUCCESS)
                    .user_data(SEND);
                // SAFETY: `out` is static, so it outlives the send however late it completes.
                unsafe { self.ring.submission().push(&send).expect("room for the send") };
            }
            let mut got = 0;
            while got < into.len() {
                let rest = &mut into[got..];
                let recv =
                    opcode::Recv::new(types::Fd(self.fd), rest.as_mut_ptr(), rest.len() as u32).build().user_data(RECV);
                // SAFETY: `into` outlives the receive: this loop returns only once the receive has
                // completed (a failed send is noted, and the receive still waited for).
                unsafe { self.ring.submission().push(&recv).expect("room for the receive") };
                let received = loop {
                    match self.ring.submit_and_wait(1) {
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        // The ring itself failed: nothing more completes, so nothing is written.
                        Err(e) => panic!("io_uring_enter: {e}"),
                    }
                    let mut received = None;
                    for completion in self.ring.completion() {
                        match completion.user_data() {
                            SEND => send_failed = true,
                            _ => received = Some(completion.result()),
                        }
                    }
                    if let Some(r) = received {
                        break r;
                    }
                };
                if received <= 0 || send_failed {
                    return false;
                }
                got += received as usize;
            }
            true
        }
    }

    /// Serves one connection until the client goes.
    fn serve(kind: Kind, stream: TcpStream) {
        let mut request = [0u8; 32];
        if matches!(kind, Kind::Tokio | Kind::TokioTwoTasks) {
            current_thread().block_on(async move {
                stream.set_nonblocking(true).unwrap();
                let mut s = tokio::net::TcpStream::from_std(stream).unwrap();
                while s.read_exact(&mut request).await.is_ok() {
                    if s.write_all(&REPLY).await.is_err() {
                        break;
                    }
                }
            });
            return;
        }
        let mut side = side(kind, stream);
        let mut reply = None;
        while side.exchange(reply, &mut request) {
            reply = Some(&REPLY[..]);
        }
    }

    /// Calls until `stop`; adds the calls made after `counting` to `calls`.
    fn call(kind: Kind, stream: TcpStream, counting: &AtomicBool, stop: &AtomicBool, calls: &AtomicU64) {
        let mut reply = [0u8; 25];
        let mut counted = 0u64;
        if kind == Kind::Tokio {
            current_thread().block_on(async {
                stream.set_nonblocking(true).unwrap();
                let mut s = tokio::net::TcpStream::from_std(stream).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    s.write_all(&REQUEST).await.unwrap();
                    s.read_exact(&mut reply).await.unwrap();
                    counted += counting.load(Ordering::Relaxed) as u64;
                }
            });
        } else if kind == Kind::TokioTwoTasks {
            current_thread().block_on(async {
                stream.set_nonblocking(true).unwrap();
                let (mut read, mut write) = tokio::net::TcpStream::from_std(stream).unwrap().into_split();
                let replied = Arc::new(tokio::sync::Notify::new());
                let reader = tokio::spawn({
                    let replied = replied.clone();
                    async move {
                        while read.read_exact(&mut reply).await.is_ok() {
                            replied.notify_one();
                        }
                    }
                });
                while !stop.load(Ordering::Relaxed) {
                    write.write_all(&REQUEST).await.unwrap();
                    replied.notified().await;
                    counted += counting.load(Ordering::Relaxed) as u64;
                }
                reader.abort();
            });
        } else {
            let mut side = side(kind, stream);
            while !stop.load(Ordering::Relaxed) {
                assert!(side.exchange(Some(&REQUEST), &mut reply), "the server went away");
                counted += counting.load(Ordering::Relaxed) as u64;
            }
        }
        calls.fetch_add(counted, Ordering::Relaxed);
    }

    fn side(kind: Kind, stream: TcpStream) -> Box<dyn Side> {
        match kind {
            Kind::Blocking => Box::new(BlockingSide(stream)),
            Kind::Epoll => Box::new(EpollSide::new(stream)),
            Kind::IoUring => Box::new(UringSide::new(stream)),
            Kind::Tokio | Kind::TokioTwoTasks => unreachable!("tokio runs its own loop"),
        }
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// `pairs` clients calling at once for `MEASURE_FOR` (after `WARM_UP`): calls per second.
    fn measure(kind: Kind, pairs: usize) -> f64 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = listener.local_addr().unwrap();
        let counting = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for _ in 0..pairs {
            let client = TcpStream::connect(address).unwrap();
            let (server, _) = listener.accept().unwrap();
            client.set_nodelay(true).unwrap();
            server.set_nodelay(true).unwrap();
            threads.push(std::thread::spawn(move || serve(kind, server)));
            let (counting, stop, calls) = (counting.clone(), stop.clone(), calls.clone());
            threads.push(std::thread::spawn(move || call(kind, client, &counting, &stop, &calls)));
        }
        std::thread::sleep(WARM_UP);
        counting.store(true, Ordering::Relaxed);
        let started = Instant::now();
        std::thread::sleep(MEASURE_FOR);
        counting.store(false, Ordering::Relaxed);
        let elapsed = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        calls.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub(crate) fn main() {
        let pair_counts: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number of pairs")).collect();
        let pair_counts = if pair_counts.is_empty() { vec![2, 5] } else { pair_counts };
        for pairs in pair_counts {
            let mut rates: Vec<Vec<f64>> = Kind::ALL.iter().map(|_| Vec::new()).collect();
            for run in 1..=RUNS {
                let mut line = format!("run {run}, {pairs} pairs:");
                for (i, kind) in Kind::ALL.into_iter().enumerate() {
                    let rate = measure(kind, pairs);
                    line.push_str(&format!(" {:?} {rate:.0}", kind));
                    rates[i].push(rate);
                }
                eprintln!("{line} calls/s");
            }
            let medians: Vec<f64> = rates.into_iter().map(median).collect();
            println!("{pairs} pairs, 32 B / 25 B over loopback, medians of {RUNS} interleaved runs:");
            for (kind, rate) in Kind::ALL.into_iter().zip(&medians) {
                println!("  {:<34}{rate:>9.0} calls/s  ({:.2} × blocking)", kind.describe(), rate / medians[0]);
            }
        }
    }
}
