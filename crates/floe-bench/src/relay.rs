//! `floe-bench --relay TARGET_PORT --port PORT`: the copy relay of the `router` test, what a
//! router that does nothing but copy reaches on this host.
//!
//! It accepts connections on 127.0.0.1:PORT and connects each to 127.0.0.1:TARGET_PORT, then
//! forwards the Ice messages of both directions unchanged: each message is read whole (as a
//! router must read a request before it can route it) and written on in one write, together
//! with the whole messages read with it. It parses nothing but the 14-byte headers' sizes and
//! keeps no state, and one thread per connection polls both sockets without ever sleeping or
//! yielding, so no hop waits for a wake-up: a relay that spends a whole CPU to be as prompt as
//! a relay can be. The client talks to the server through it as if directly (no session, no
//! routing table), callbacks included, since they come back over the same connection.
//!
//! The thread of a connection spins until either side closes it, so the relay costs a CPU per
//! open connection: it serves the `router` test's clients, one at a time, and nothing else. A
//! peer that stops in the middle of a message, or stops reading what is written to it, for
//! [`STALL_LIMIT`] ends the connection rather than holding the thread.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The size of an Ice message header.
const HEADER: usize = 14;

/// The largest message forwarded (the router test's are at most 500 kB and some bytes).
const MAX_MESSAGE: usize = 64 << 20;

/// The room of a first read: whole small messages, and a large message's first part.
const READ_ROOM: usize = 1 << 20;

/// How long the rest of a begun message may take to arrive, or a write to find room, before
/// the connection is given up.
const STALL_LIMIT: Duration = Duration::from_secs(10);

/// When a spin that has made no progress since `since` has waited too long: `Err(TimedOut)`.
fn check_stall(since: &mut Option<Instant>, limit: Duration, what: &str) -> io::Result<()> {
    if since.get_or_insert_with(Instant::now).elapsed() > limit {
        return Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} for {limit:?}")));
    }
    Ok(())
}

/// Serves until killed; prints `ready` once it accepts connections.
pub(crate) fn serve(port: u16, target: u16) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!("ready");
    for accepted in listener.incoming() {
        let Ok(client) = accepted else { continue };
        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else { continue };
        std::thread::spawn(move || {
            if let Err(e) = forward(client, server, STALL_LIMIT) {
                eprintln!("relay: connection ended: {e}");
            }
        });
    }
    Ok(())
}

/// Forwards both directions of one connection until either side closes it, or stalls for
/// `stall_limit` (see [`STALL_LIMIT`]).
fn forward(client: TcpStream, server: TcpStream, stall_limit: Duration) -> io::Result<()> {
    for s in [&client, &server] {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
    }
    let mut up = Direction { from: client.try_clone()?, to: server.try_clone()?, buf: vec![0; READ_ROOM], stall_limit };
    let mut down = Direction { from: server, to: client, buf: vec![0; READ_ROOM], stall_limit };
    let result = loop {
        match up.step().and_then(|open| Ok(open && down.step()?)) {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    for s in [&up.from, &up.to] {
        let _ = s.shutdown(Shutdown::Both);
    }
    result
}

/// One direction of a connection, with the buffer its messages pass through (at least
/// [`READ_ROOM`] bytes; it grows to the largest message forwarded).
struct Direction {
    from: TcpStream,
    to: TcpStream,
    buf: Vec<u8>,
    stall_limit: Duration,
}

impl Direction {
    /// Forwards what `from` has: every message begun in what one read returned, completed
    /// (waiting for its rest), in one write. False once `from` has closed.
    fn step(&mut self) -> io::Result<bool> {
        let mut have = match self.from.read(&mut self.buf) {
            Ok(0) => return Ok(false),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) => return Err(e),
        };
        // Walk the messages; complete the last one if the read ended inside it.
        let mut at = 0;
        while at < have {
            if have - at < HEADER {
                have += self.read_exact_at(have, HEADER - (have - at))?;
            }
            let header = &self.buf[at..at + HEADER];
            if &header[..4] != b"IceP" {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "not an Ice message"));
            }
            let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]);
            let size = usize::try_from(size).ok().filter(|s| (HEADER..=MAX_MESSAGE).contains(s));
            let Some(size) = size else {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "bad message size"));
            };
            if have - at < size {
                have += self.read_exact_at(have, size - (have - at))?;
            }
            at += size;
        }
        write_all_spinning(&mut self.to, &self.buf[..have], self.stall_limit)?;
        Ok(true)
    }

    /// Reads exactly `n` bytes into the buffer at `at`, spinning while none are there; returns
    /// `n`. Fails with `TimedOut` when no byte comes for the stall limit.
    fn read_exact_at(&mut self, at: usize, n: usize) -> io::Result<usize> {
        if self.buf.len() < at + n {
            self.buf.resize(at + n, 0);
        }
        let (mut got, mut waiting) = (0, None);
        while got < n {
            match self.from.read(&mut self.buf[at + got..at + n]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => (got, waiting) = (got + k, None),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    check_stall(&mut waiting, self.stall_limit, "no more of a begun message")?
                }
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

/// Writes all of `bytes` to a non-blocking socket, spinning while it is full; fails with
/// `TimedOut` when it stays full for `stall_limit`.
fn write_all_spinning(to: &mut TcpStream, mut bytes: &[u8], stall_limit: Duration) -> io::Result<()> {
    let mut waiting = None;
    while !bytes.is_empty() {
        match to.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => (bytes, waiting) = (&bytes[n..], None),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                check_stall(&mut waiting, stall_limit, "a peer that reads nothing")?
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ice message of `size` bytes (a header and filler).
    fn message(size: usize, fill: u8) -> Vec<u8> {
        let mut m = vec![fill; size];
        m[..4].copy_from_slice(b"IceP");
        m[4..10].copy_from_slice(&[1, 0, 1, 0, 0, 0]);
        m[10..14].copy_from_slice(&(size as i32).to_le_bytes());
        m
    }

    #[test]
    fn messages_pass_whole_both_ways_and_garbage_ends_the_connection() {
        let server = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let target = server.local_addr().unwrap().port();
        let port = crate::proc::free_port();
        std::thread::spawn(move || serve(port, target));
        let mut client = loop {
            if let Ok(c) = TcpStream::connect(("127.0.0.1", port)) {
                break c;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let (mut far, _) = server.accept().unwrap();
        // A large message written in pieces, then two small ones in one write.
        let large = message(600_000, 7);
        for piece in large.chunks(100_000) {
            client.write_all(piece).unwrap();
        }
        let small = [message(20, 1), message(30, 2)].concat();
        client.write_all(&small).unwrap();
        let mut got = vec![0; large.len() + small.len()];
        far.read_exact(&mut got).unwrap();
        assert!(got == [large.clone(), small.clone()].concat());
        // The other way.
        far.write_all(&small).unwrap();
        let mut back = vec![0; small.len()];
        client.read_exact(&mut back).unwrap();
        assert_eq!(back, small);
        // Garbage closes both sides.
        client.write_all(b"garbage, not Ice").unwrap();
        let mut rest = Vec::new();
        far.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn a_message_whose_rest_never_comes_ends_the_connection_after_the_stall_limit() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let server_side = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let to_server = TcpStream::connect(server_side.local_addr().unwrap()).unwrap();
        let (mut far, _) = server_side.accept().unwrap();
        let limit = Duration::from_millis(200);
        let relay = std::thread::spawn(move || forward(accepted, to_server, limit));
        // The head and a part of a 1,000-byte message, and nothing more.
        client.write_all(&message(1_000, 3)[..100]).unwrap();
        let started = Instant::now();
        let err = relay.join().unwrap().expect_err("a stalled message ends the connection");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(started.elapsed() < Duration::from_secs(5), "gave up after {:?}", started.elapsed());
        // Nothing of the incomplete message was forwarded, and both sides are closed.
        let mut rest = Vec::new();
        far.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "{} bytes forwarded", rest.len());
        let mut back = Vec::new();
        client.read_to_end(&mut back).unwrap();
        assert!(back.is_empty());
    }
}
