//! What a proxy points at, and the Ice proxy-string syntax:
//! `identity [-f facet] [-t|-o|-O|-d|-D] [-s] [-e X.Y] [-p X.Y] [:endpoint]* | [@ adapter]`.

use std::fmt::{self, Write as _};
use std::time::Duration;

use base64::Engine as _;

use crate::encoding::{
    Context, EncodingVersion, EndpointData, Identity, InvocationMode, IpEndpointData, ProtocolVersion, ProxyData,
};
use crate::error::{Error, Result};

/// Defaults applied while parsing proxy and endpoint strings (from `Ice.Default.*`).
#[derive(Debug, Clone)]
pub struct ParseDefaults {
    /// `Ice.Default.Host`: the host of endpoints without `-h`.
    pub host: String,
    /// `Ice.Default.Protocol`: what the `default` endpoint type means.
    pub protocol: String,
    /// `Ice.Default.Timeout` in milliseconds.
    pub timeout: i32,
    /// `Ice.Default.EncodingVersion`.
    pub encoding: EncodingVersion,
    /// `Ice.Default.Locator`: the locator of new proxies.
    pub locator: Option<Box<Reference>>,
    /// `Ice.Default.Router`: the router of new proxies.
    pub router: Option<Box<Reference>>,
    /// `Ice.Default.LocatorCacheTimeout` in seconds (−1: entries never expire; 0: always ask).
    pub locator_cache_timeout: i32,
    /// `Ice.Default.EndpointSelection`.
    pub endpoint_selection: EndpointSelection,
    /// `Ice.Default.PreferSecure`.
    pub prefer_secure: bool,
}

impl Default for ParseDefaults {
    fn default() -> Self {
        ParseDefaults {
            host: String::new(),
            protocol: "tcp".into(),
            timeout: 60_000,
            encoding: EncodingVersion::V1_1,
            locator: None,
            router: None,
            locator_cache_timeout: -1,
            endpoint_selection: EndpointSelection::Random,
            prefer_secure: false,
        }
    }
}

/// The order in which a proxy tries its endpoints (`ice_endpointSelection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointSelection {
    /// A random order for each new connection (Ice's default).
    #[default]
    Random,
    /// The order of the proxy's endpoints.
    Ordered,
}

impl EndpointSelection {
    /// Parses `Random` or `Ordered` (Ice's property values).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "Random" => Some(EndpointSelection::Random),
            "Ordered" => Some(EndpointSelection::Ordered),
            _ => None,
        }
    }
}

/// Everything a proxy knows about its target: its wire form plus the settings that stay local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// What is marshaled: identity, facet, mode, secure, protocol, encoding, endpoints, adapter id.
    pub wire: ProxyData,
    /// `ice_compress` override of the endpoints' `-z` flag.
    pub compress: Option<bool>,
    /// `ice_timeout` override (milliseconds; −1: infinite): the timeout of the proxy's own
    /// endpoints and of those a locator resolves for it, as Ice keeps it on an indirect proxy.
    pub timeout: Option<i32>,
    /// Invocation timeout (`ice_invocationTimeout`); `None` waits forever.
    pub invocation_timeout: Option<Duration>,
    /// Per-proxy context (`ice_context`).
    pub context: Context,
    /// The locator that resolves the proxy when it is indirect (`ice_locator`).
    pub locator: Option<Box<Reference>>,
    /// The router every invocation goes through (`ice_router`).
    pub router: Option<Box<Reference>>,
    /// How long resolved endpoints stay cached, in seconds (`ice_locatorCacheTimeout`; −1:
    /// forever, 0: always ask the locator).
    pub locator_cache_timeout: i32,
    /// The order in which endpoints are tried (`ice_endpointSelection`).
    pub endpoint_selection: EndpointSelection,
    /// Secure endpoints first (`ice_preferSecure`).
    pub prefer_secure: bool,
}

impl Reference {
    /// A reference with the given identity and nothing else.
    pub fn new(identity: Identity) -> Self {
        Reference {
            wire: ProxyData {
                identity,
                facet: String::new(),
                mode: InvocationMode::Twoway,
                secure: false,
                protocol: ProtocolVersion::V1_0,
                encoding: EncodingVersion::V1_1,
                endpoints: Vec::new(),
                adapter_id: String::new(),
            },
            compress: None,
            timeout: None,
            invocation_timeout: None,
            context: Context::new(),
            locator: None,
            router: None,
            locator_cache_timeout: -1,
            endpoint_selection: EndpointSelection::Random,
            prefer_secure: false,
        }
    }

    /// From the wire form, with no locator or router.
    pub fn from_proxy_data(wire: ProxyData) -> Self {
        let mut r = Reference::new(Identity::default());
        r.wire = wire;
        r
    }

    /// From the wire form, with the local settings (locator, router, cache timeout, endpoint
    /// selection) a new proxy gets from `defaults`.
    pub fn from_wire(wire: ProxyData, defaults: &ParseDefaults) -> Self {
        let mut r = Reference::from_proxy_data(wire);
        r.apply_local_defaults(defaults);
        r
    }

    /// Gives the reference the local settings of a new proxy from `defaults`.
    pub fn apply_local_defaults(&mut self, defaults: &ParseDefaults) {
        self.locator = defaults.locator.clone();
        self.router = defaults.router.clone();
        self.locator_cache_timeout = defaults.locator_cache_timeout;
        self.endpoint_selection = defaults.endpoint_selection;
        self.prefer_secure = defaults.prefer_secure;
    }

    /// True for an indirect proxy: no endpoints, resolved through a locator by adapter id or
    /// (without one) as a well-known object.
    pub fn is_indirect(&self) -> bool {
        self.wire.endpoints.is_empty()
    }

    /// Whether requests should be compressed: the `ice_compress` override, else the first
    /// endpoint's `-z`.
    pub fn wants_compression(&self) -> bool {
        self.compress.unwrap_or_else(|| match self.wire.endpoints.first() {
            Some(
                EndpointData::Tcp(ip) | EndpointData::Ssl(ip) | EndpointData::Ws(ip, _) | EndpointData::Wss(ip, _),
            ) => ip.compress,
            Some(EndpointData::Udp { compress, .. }) => *compress,
            _ => false,
        })
    }

    /// Parses a proxy string.
    pub fn parse(input: &str, defaults: &ParseDefaults) -> Result<Reference> {
        let err = |reason: String| Error::ProxyParse { input: input.to_string(), reason };
        let s = input.trim();
        if s.is_empty() {
            return Err(err("empty proxy string".into()));
        }
        // Split off endpoints or adapter id at the first ':' or '@' outside quotes.
        let (head, tail) = split_outside_quotes(s, &[':', '@']).map_err(err)?;
        let tokens = tokenize(head).map_err(err)?;
        let mut it = tokens.into_iter();
        let id_str = it.next().ok_or_else(|| err("no identity".into()))?;
        let identity = string_to_identity(&id_str).map_err(err)?;
        if identity.name.is_empty() {
            return Err(err("the identity has an empty name".into()));
        }
        let mut r = Reference::new(identity);
        r.wire.encoding = defaults.encoding;
        r.apply_local_defaults(defaults);
        while let Some(opt) = it.next() {
            match opt.as_str() {
                "-f" => {
                    let facet = it.next().ok_or_else(|| err("-f needs a facet".into()))?;
                    r.wire.facet = unescape(&facet).map_err(err)?;
                }
                "-t" => r.wire.mode = InvocationMode::Twoway,
                "-o" => r.wire.mode = InvocationMode::Oneway,
                "-O" => r.wire.mode = InvocationMode::BatchOneway,
                "-d" => r.wire.mode = InvocationMode::Datagram,
                "-D" => r.wire.mode = InvocationMode::BatchDatagram,
                "-s" => r.wire.secure = true,
                "-e" => {
                    let v = it.next().ok_or_else(|| err("-e needs a version".into()))?;
                    r.wire.encoding =
                        parse_version(&v).map(|(major, minor)| EncodingVersion { major, minor }).map_err(err)?;
                }
                "-p" => {
                    let v = it.next().ok_or_else(|| err("-p needs a version".into()))?;
                    let (major, minor) = parse_version(&v).map_err(err)?;
                    if (major, minor) != (1, 0) {
                        return Err(err(format!("unsupported protocol {major}.{minor}")));
                    }
                }
                other => return Err(err(format!("unknown option {other:?}"))),
            }
        }
        match tail {
            None => {}
            Some(('@', rest)) => {
                let tokens = tokenize(rest).map_err(err)?;
                if tokens.len() != 1 || tokens[0].is_empty() {
                    return Err(err("'@' must be followed by one adapter id".into()));
                }
                r.wire.adapter_id = unescape(&tokens[0]).map_err(err)?;
            }
            Some((_, rest)) => {
                for ep in split_all_outside_quotes(rest, ':').map_err(err)? {
                    r.wire.endpoints.push(parse_endpoint(ep, defaults).map_err(err)?);
                }
            }
        }
        Ok(r)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = identity_to_string(&self.wire.identity);
        if needs_quotes(&id) {
            write!(f, "\"{id}\"")?;
        } else {
            f.write_str(&id)?;
        }
        if !self.wire.facet.is_empty() {
            let facet = escape(&self.wire.facet, "");
            if needs_quotes(&facet) {
                write!(f, " -f \"{facet}\"")?;
            } else {
                write!(f, " -f {facet}")?;
            }
        }
        f.write_str(match self.wire.mode {
            InvocationMode::Twoway => " -t",
            InvocationMode::Oneway => " -o",
            InvocationMode::BatchOneway => " -O",
            InvocationMode::Datagram => " -d",
            InvocationMode::BatchDatagram => " -D",
        })?;
        if self.wire.secure {
            f.write_str(" -s")?;
        }
        write!(f, " -e {}", self.wire.encoding)?;
        if !self.wire.endpoints.is_empty() {
            for ep in &self.wire.endpoints {
                write!(f, ":{}", endpoint_to_string(ep))?;
            }
        } else if !self.wire.adapter_id.is_empty() {
            let a = escape(&self.wire.adapter_id, "");
            if needs_quotes(&a) {
                write!(f, " @ \"{a}\"")?;
            } else {
                write!(f, " @ {a}")?;
            }
        }
        Ok(())
    }
}

/// Whether a printed identity, facet or adapter id must be quoted to read back as one token.
fn needs_quotes(s: &str) -> bool {
    s.is_empty() || s.starts_with('-') || s.contains(|c: char| c.is_whitespace() || matches!(c, ':' | '@'))
}

fn parse_version(v: &str) -> std::result::Result<(u8, u8), String> {
    let (a, b) = v.split_once('.').ok_or_else(|| format!("invalid version {v:?}"))?;
    let major = a.parse().map_err(|_| format!("invalid version {v:?}"))?;
    let minor = b.parse().map_err(|_| format!("invalid version {v:?}"))?;
    Ok((major, minor))
}

/// The text before a separator, and the separator with the text after it.
type Split<'a> = (&'a str, Option<(char, &'a str)>);

/// Finds the first of `seps` outside quotes.
fn split_outside_quotes<'a>(s: &'a str, seps: &[char]) -> std::result::Result<Split<'a>, String> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if seps.contains(&c) => return Ok((&s[..i], Some((c, &s[i + c.len_utf8()..])))),
            _ => {}
        }
    }
    if quote.is_some() {
        return Err("mismatched quotes".into());
    }
    Ok((s, None))
}

/// Splits an endpoint list (`tcp -p 1:tcp -h "::1" -p 2`) at the colons outside quotes.
pub fn split_endpoints(s: &str) -> std::result::Result<Vec<&str>, String> {
    split_all_outside_quotes(s, ':')
}

fn split_all_outside_quotes(mut s: &str, sep: char) -> std::result::Result<Vec<&str>, String> {
    let mut out = Vec::new();
    loop {
        let (head, tail) = split_outside_quotes(s, &[sep])?;
        out.push(head);
        match tail {
            Some((_, rest)) => s = rest,
            None => return Ok(out),
        }
    }
}

/// Splits on whitespace; quoted runs keep their spaces (quotes removed, escapes kept for the
/// identity parser).
fn tokenize(s: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                cur.push('\\');
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_token = true;
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                in_token = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if in_token {
                    out.push(std::mem::take(&mut cur));
                    in_token = false;
                }
            }
            (_, c) => {
                cur.push(c);
                in_token = true;
            }
        }
    }
    if quote.is_some() {
        return Err("mismatched quotes".into());
    }
    if in_token {
        out.push(cur);
    }
    Ok(out)
}

fn unescape(s: &str) -> std::result::Result<String, String> {
    // Octal (`\342`) and hex (`\xe2`) escapes are bytes, as in Ice: a character outside
    // ASCII is written as its UTF-8 bytes (`ToStringMode.Compat`), so the result is
    // assembled as bytes and must be UTF-8.
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let push = |out: &mut Vec<u8>, c: char| out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    while let Some(c) = chars.next() {
        if c != '\\' {
            push(&mut out, c);
            continue;
        }
        let Some(e) = chars.next() else { return Err("trailing backslash".into()) };
        match e {
            '\\' | '\'' | '"' | '/' | '?' => push(&mut out, e),
            'a' => out.push(0x07),
            'b' => out.push(0x08),
            'f' => out.push(0x0c),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(0x0b),
            'u' | 'U' => {
                // Exactly 4 (\u) or 8 (\U) hex digits, as Ice requires.
                let n = if e == 'u' { 4 } else { 8 };
                let hex: String = (0..n).filter_map(|_| chars.next()).collect();
                if hex.len() != n || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(format!("\\{e} needs {n} hex digits"));
                }
                let v = u32::from_str_radix(&hex, 16).map_err(|_| format!("bad \\{e} escape"))?;
                push(&mut out, char::from_u32(v).ok_or_else(|| format!("bad \\{e} escape"))?);
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                let byte = u8::try_from(v).map_err(|_| "octal escape above 255".to_string())?;
                out.push(byte);
            }
            'x' => {
                let mut v = None;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = Some(v.unwrap_or(0) * 16 + d);
                            chars.next();
                        }
                        None => break,
                    }
                }
                let v = v.ok_or_else(|| "\\x needs a hex digit".to_string())?;
                out.push(u8::try_from(v).unwrap_or(0));
            }
            other => return Err(format!("unknown escape \\{other}")),
        }
    }
    String::from_utf8(out).map_err(|_| "escapes that are not UTF-8".to_string())
}

fn escape(s: &str, special: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0b' => out.push_str("\\v"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if special.contains(c) => {
                out.push('\\');
                out.push(c);
            }
            // As Ice prints them by default (`ToStringMode.Unicode`).
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Parses `[category/]name` with Ice's escapes.
pub fn string_to_identity(s: &str) -> std::result::Result<Identity, String> {
    // Find an unescaped '/'.
    let mut slash = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '/' {
            if slash.is_some() {
                return Err(format!("identity {s:?} has more than one unescaped '/'"));
            }
            slash = Some(i);
        }
    }
    match slash {
        None => Ok(Identity::new(unescape(s)?)),
        Some(i) => Ok(Identity::with_category(unescape(&s[..i])?, unescape(&s[i + 1..])?)),
    }
}

/// Formats an identity as `[category/]name` with Ice's escapes.
pub fn identity_to_string(id: &Identity) -> String {
    if id.category.is_empty() {
        escape(&id.name, "/")
    } else {
        format!("{}/{}", escape(&id.category, "/"), escape(&id.name, "/"))
    }
}

/// Parses one endpoint string, e.g. `tcp -h 127.0.0.1 -p 10000 -t 5000 -z`.
pub fn parse_endpoint(s: &str, defaults: &ParseDefaults) -> std::result::Result<EndpointData, String> {
    let tokens = tokenize(s)?;
    let mut it = tokens.into_iter();
    let mut kind = it.next().ok_or_else(|| "empty endpoint".to_string())?;
    if kind == "default" {
        kind = defaults.protocol.clone();
    }
    let mut host: Option<String> = None;
    let mut port: i32 = 0;
    let mut timeout = defaults.timeout;
    let mut compress = false;
    let mut resource = "/".to_string();
    let mut ty: Option<i16> = None;
    let mut enc: Option<EncodingVersion> = None;
    let mut value: Option<Vec<u8>> = None;
    let need = |it: &mut std::vec::IntoIter<String>, opt: &str| {
        it.next().ok_or_else(|| format!("no argument for {opt} in endpoint {s:?}"))
    };
    while let Some(opt) = it.next() {
        match (kind.as_str(), opt.as_str()) {
            ("opaque", "-t") => {
                let v = need(&mut it, "-t")?;
                let t: i16 = v.parse().map_err(|_| format!("invalid opaque type {v:?}"))?;
                if t < 0 {
                    return Err(format!("invalid opaque type {v:?}"));
                }
                ty = Some(t);
            }
            ("opaque", "-e") => {
                let (major, minor) = parse_version(&need(&mut it, "-e")?)?;
                enc = Some(EncodingVersion { major, minor });
            }
            ("opaque", "-v") => {
                let v = need(&mut it, "-v")?;
                value = Some(
                    base64::engine::general_purpose::STANDARD
                        .decode(v.as_bytes())
                        .map_err(|e| format!("invalid base64 in opaque endpoint: {e}"))?,
                );
            }
            (_, "-h") => host = Some(need(&mut it, "-h")?),
            (_, "-p") => {
                let v = need(&mut it, "-p")?;
                port = v.parse().map_err(|_| format!("invalid port {v:?}"))?;
                if !(0..=65535).contains(&port) {
                    return Err(format!("port {port} out of range"));
                }
            }
            (_, "-t") => {
                let v = need(&mut it, "-t")?;
                timeout = if v == "infinite" {
                    -1
                } else {
                    let t: i32 = v.parse().map_err(|_| format!("invalid timeout {v:?}"))?;
                    if t < 1 && t != -1 {
                        return Err(format!("invalid timeout {v:?}"));
                    }
                    t
                };
            }
            (_, "-z") => compress = true,
            ("ws" | "wss", "-r") => resource = need(&mut it, "-r")?,
            (_, "--sourceAddress") => {
                need(&mut it, "--sourceAddress")?;
            }
            ("udp", "-c") => {}
            ("udp", "--ttl" | "--interface") => {
                need(&mut it, &opt)?;
            }
            (k, o) => return Err(format!("unknown option {o:?} for {k} endpoint")),
        }
    }
    let host = host.unwrap_or_else(|| defaults.host.clone());
    if host.contains(['"', '\\']) || resource.contains(['"', '\\']) {
        return Err(format!("invalid character in host or resource of endpoint {s:?}"));
    }
    let ip = |host: String| IpEndpointData { host, port, timeout, compress };
    Ok(match kind.as_str() {
        "tcp" => EndpointData::Tcp(ip(host)),
        "ssl" => EndpointData::Ssl(ip(host)),
        "ws" => EndpointData::Ws(ip(host), resource),
        "wss" => EndpointData::Wss(ip(host), resource),
        "udp" => EndpointData::Udp { host, port, compress },
        "opaque" => {
            let ty = ty.ok_or("opaque endpoint without -t")?;
            let encoding = enc.ok_or("opaque endpoint without -e")?;
            let bytes = value.ok_or("opaque endpoint without -v")?;
            // As Ice does, an opaque endpoint of a transport floe has is that endpoint.
            EndpointData::from_opaque_string(ty, encoding, &bytes).unwrap_or(EndpointData::Opaque {
                ty,
                encoding,
                bytes,
            })
        }
        other => return Err(format!("unknown endpoint type {other:?}")),
    })
}

/// Quotes a host or resource that would not survive tokenizing otherwise.
fn quote_host(h: &str) -> String {
    if h.is_empty() || h.contains(|c: char| c.is_whitespace() || matches!(c, ':' | '@' | '\'')) {
        format!("\"{h}\"")
    } else {
        h.to_string()
    }
}

/// Formats an endpoint as Ice does, e.g. `tcp -h 127.0.0.1 -p 10000 -t 60000`.
pub fn endpoint_to_string(ep: &EndpointData) -> String {
    fn ip(kind: &str, e: &IpEndpointData) -> String {
        let mut s = kind.to_string();
        if !e.host.is_empty() {
            let _ = write!(s, " -h {}", quote_host(&e.host));
        }
        let _ = write!(s, " -p {}", e.port);
        if e.timeout == -1 {
            s.push_str(" -t infinite");
        } else {
            let _ = write!(s, " -t {}", e.timeout);
        }
        if e.compress {
            s.push_str(" -z");
        }
        s
    }
    match ep {
        EndpointData::Tcp(e) => ip("tcp", e),
        EndpointData::Ssl(e) => ip("ssl", e),
        EndpointData::Ws(e, r) => format!("{} -r {}", ip("ws", e), quote_host(r)),
        EndpointData::Wss(e, r) => format!("{} -r {}", ip("wss", e), quote_host(r)),
        EndpointData::Udp { host, port, compress } => {
            let mut s = "udp".to_string();
            if !host.is_empty() {
                let _ = write!(s, " -h {}", quote_host(host));
            }
            let _ = write!(s, " -p {port}");
            if *compress {
                s.push_str(" -z");
            }
            s
        }
        EndpointData::Opaque { ty, encoding, bytes } => {
            format!("opaque -t {ty} -e {encoding} -v {}", base64::engine::general_purpose::STANDARD.encode(bytes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Reference {
        Reference::parse(s, &ParseDefaults::default()).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_the_forms_ice_documents() {
        let r = p("tester:tcp -h 127.0.0.1 -p 12010");
        assert_eq!(r.wire.identity, Identity::new("tester"));
        assert_eq!(
            r.wire.endpoints,
            vec![EndpointData::Tcp(IpEndpointData {
                host: "127.0.0.1".into(),
                port: 12010,
                timeout: 60000,
                compress: false
            })]
        );
        assert_eq!(r.to_string(), "tester -t -e 1.1:tcp -h 127.0.0.1 -p 12010 -t 60000");
        let r = p("cat/x -f fac -o -s -e 1.0:udp -h 239.1.2.3 -p 5000 --ttl 5 -z:tcp -p 1 -t infinite");
        assert_eq!(r.wire.identity, Identity::with_category("cat", "x"));
        assert_eq!(
            (r.wire.facet.as_str(), r.wire.mode, r.wire.secure, r.wire.encoding),
            ("fac", InvocationMode::Oneway, true, EncodingVersion::V1_0)
        );
        assert_eq!(r.wire.endpoints.len(), 2);
        assert_eq!(r.to_string(), "cat/x -f fac -o -s -e 1.0:udp -h 239.1.2.3 -p 5000 -z:tcp -p 1 -t infinite");
        let r = p("x @ MyAdapter");
        assert_eq!(r.wire.adapter_id, "MyAdapter");
        assert_eq!(p("x@MyAdapter").wire.adapter_id, "MyAdapter");
        assert_eq!(p("x -O").wire.mode, InvocationMode::BatchOneway);
        assert_eq!(p("x -D").wire.mode, InvocationMode::BatchDatagram);
        assert_eq!(p("x -d").wire.mode, InvocationMode::Datagram);
        let r = p("x:ws -h localhost -p 8080 -r /chat -t 5000");
        assert_eq!(r.to_string(), "x -t -e 1.1:ws -h localhost -p 8080 -t 5000 -r /chat");
        let r = p("x:opaque -t 99 -e 1.0 -v abch");
        assert_eq!(
            r.wire.endpoints[0],
            EndpointData::Opaque { ty: 99, encoding: EncodingVersion::V1_0, bytes: vec![0x69, 0xb7, 0x21] }
        );
        assert_eq!(r.to_string(), "x -t -e 1.1:opaque -t 99 -e 1.0 -v abch");
        let r = p("\"a b:c\" -f \"f g\":tcp -h \"::1\" -p 5");
        assert_eq!(r.wire.identity.name, "a b:c");
        assert_eq!(r.wire.facet, "f g");
        assert_eq!(r.to_string(), "\"a b:c\" -f \"f g\" -t -e 1.1:tcp -h \"::1\" -p 5 -t 60000");
        let r = p("\"a\\/b/c d\"");
        assert_eq!(r.wire.identity, Identity::with_category("a/b", "c d"));
        assert_eq!(identity_to_string(&r.wire.identity), "a\\/b/c d");
        assert_eq!(p("/x").wire.identity, Identity::new("x"));
        let d = ParseDefaults {
            host: "10.0.0.1".into(),
            protocol: "tcp".into(),
            timeout: 10000,
            encoding: EncodingVersion::V1_0,
            ..ParseDefaults::default()
        };
        let r = Reference::parse("x:default -p 3", &d).unwrap();
        assert_eq!(r.to_string(), "x -t -e 1.0:tcp -h 10.0.0.1 -p 3 -t 10000");
    }

    #[test]
    fn escapes_read_and_print_as_ice_does() {
        // Octal and hex escapes are UTF-8 bytes; control characters print as Ice's default
        // (`ToStringMode.Unicode`) prints them.
        let id = string_to_identity("\\342\\202\\254/a\\x41").expect("identity");
        assert_eq!((id.category.as_str(), id.name.as_str()), ("\u{20ac}", "aA"));
        assert!(string_to_identity("a\\342").is_err());
        let id = Identity { name: "a\u{7}\u{b}\u{1}\u{7f}\u{1f}z".into(), category: "c".into() };
        assert_eq!(identity_to_string(&id), "c/a\\a\\v\\u0001\\u007f\\u001fz");
    }

    #[test]
    fn escaped_facets_and_adapter_ids_round_trip() {
        // Found by the proxy_string fuzz target: control characters in an adapter id.
        for s in
            ["cat/x@\u{f}\0\0r", "x -f \"a\\tb\u{1}\" @ \"a d\\n\"", "x@a\\101", "x:ws -h \"loc 800 h-\" -r \"/a b\""]
        {
            let r = p(s);
            assert_eq!(p(&r.to_string()), r, "{s:?} printed as {r}");
        }
        assert_eq!(p("x@a\\101").wire.adapter_id, "aA");
        assert!(Reference::parse("\\Ua0", &ParseDefaults::default()).is_err(), "\\U needs 8 hex digits");
        assert_eq!(p("\\u00e9t\\U0001F600").wire.identity.name, "ét😀");
        assert_eq!(p("x -f \"f\\tg\"").wire.facet, "f\tg");
        // Also found by the fuzz target: an empty resource was printed as a bare `-r`.
        let empty = p("x:ws -r \"\"\"\"\t");
        assert_eq!(empty.to_string(), "x -t -e 1.1:ws -p 0 -t 60000 -r \"\"");
        assert_eq!(p(&empty.to_string()), empty);
    }

    #[test]
    fn round_trips_through_its_string_form() {
        for s in [
            "x -t -e 1.1:tcp -h h -p 1 -t 2 -z:ssl -h h -p 2 -t infinite",
            "x -f f -O -s -e 1.0 @ ad",
            "c/n -d -e 1.1:udp -h 1.2.3.4 -p 9 -z",
            "n -t -e 1.1:wss -h h -p 443 -t 60000 -r /x",
        ] {
            assert_eq!(p(s).to_string(), s);
            assert_eq!(p(&p(s).to_string()), p(s));
        }
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        for bad in [
            "",
            "   ",
            ":tcp -p 1",
            "x -q",
            "x -f",
            "x -e",
            "x -e 1",
            "x -e a.b",
            "x -p 2.0",
            "x:tcp -p",
            "x:tcp -p 70000",
            "x:tcp -p abc",
            "x:tcp -t 0",
            "x:tcp -x 1",
            "x:bogus -p 1",
            "x:",
            "x@",
            "x @ a b",
            "\"x",
            "x:tcp -h \"a",
            "x:opaque -t 1 -e 1.0",
            "x:opaque -t 1 -e 1.0 -v !!!",
            "a/b/c",
            "x\\",
            "x\\q",
        ] {
            let e = Reference::parse(bad, &ParseDefaults::default());
            assert!(matches!(e, Err(Error::ProxyParse { .. })), "{bad:?} gave {e:?}");
        }
    }
}
