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
//! open connection: it serves the `router` test's clients, one at a time, and nothing else.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};

/// The size of an Ice message header.
const HEADER: usize = 14;

/// The largest message forwarded (the router test's are at most 500 kB and some bytes).
const MAX_MESSAGE: usize = 64 << 20;

/// The room of a first read: whole small messages, and a large message's first part.
const READ_ROOM: usize = 1 << 20;

/// Serves until killed; prints `ready` once it accepts connections.
pub(crate) fn serve(port: u16, target: u16) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!("ready");
    for accepted in listener.incoming() {
        let Ok(client) = accepted else { continue };
        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else { continue };
        std::thread::spawn(move || {
            if let Err(e) = forward(client, server) {
                eprintln!("relay: connection ended: {e}");
            }
        });
    }
    Ok(())
}

/// Forwards both directions of one connection until either side closes it.
fn forward(client: TcpStream, server: TcpStream) -> io::Result<()> {
    for s in [&client, &server] {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
    }
    let mut up = Direction { from: client.try_clone()?, to: server.try_clone()?, buf: vec![0; READ_ROOM] };
    let mut down = Direction { from: server, to: client, buf: vec![0; READ_ROOM] };
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

/// One direction of a connection, with the buffer its messages pass through.
struct Direction {
    from: TcpStream,
    to: TcpStream,
    buf: Vec<u8>,
}

impl Direction {
    /// Forwards what `from` has: every message begun in what one read returned, completed
    /// (waiting for its rest), in one write. False once `from` has closed.
    fn step(&mut self) -> io::Result<bool> {
        self.buf.resize(READ_ROOM.max(self.buf.len()), 0);
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
        write_all_spinning(&mut self.to, &self.buf[..have])?;
        Ok(true)
    }

    /// Reads exactly `n` bytes into the buffer at `at`, spinning while none are there; returns `n`.
    fn read_exact_at(&mut self, at: usize, n: usize) -> io::Result<usize> {
        if self.buf.len() < at + n {
            self.buf.resize(at + n, 0);
        }
        let mut got = 0;
        while got < n {
            match self.from.read(&mut self.buf[at + got..at + n]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

/// Writes all of `bytes` to a non-blocking socket, spinning while it is full.
fn write_all_spinning(to: &mut TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match to.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
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
        let port = crate::free_port();
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
}
