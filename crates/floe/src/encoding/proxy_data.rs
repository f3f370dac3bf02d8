//! The marshaled form of a proxy: [`ProxyData`], its endpoints ([`EndpointData`]) and its
//! [`InvocationMode`].

use super::error::{DecodeError, Result};
use super::{Decode, Decoder, Encode, Encoder, EncodingVersion, Identity, ProtocolVersion};

/// How a proxy invokes: the `mode` byte of a marshaled proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum InvocationMode {
    /// Request and reply (`-t`).
    #[default]
    Twoway = 0,
    /// Request only (`-o`).
    Oneway = 1,
    /// Requests queued and sent together (`-O`).
    BatchOneway = 2,
    /// One datagram per request (`-d`).
    Datagram = 3,
    /// Datagrams queued and sent together (`-D`).
    BatchDatagram = 4,
}

impl InvocationMode {
    /// Maps the wire byte to a mode.
    pub fn from_u8(v: u8) -> Result<Self> {
        Ok(match v {
            0 => InvocationMode::Twoway,
            1 => InvocationMode::Oneway,
            2 => InvocationMode::BatchOneway,
            3 => InvocationMode::Datagram,
            4 => InvocationMode::BatchDatagram,
            v => return Err(DecodeError::InvalidProxyMode(v)),
        })
    }

    /// True for the modes that expect no reply.
    pub fn is_oneway_like(self) -> bool {
        !matches!(self, InvocationMode::Twoway)
    }

    /// True for the batch modes.
    pub fn is_batch(self) -> bool {
        matches!(self, InvocationMode::BatchOneway | InvocationMode::BatchDatagram)
    }
}

/// The fields shared by the tcp, ssl, ws and wss endpoint bodies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IpEndpointData {
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Timeout in milliseconds; −1 means infinite.
    pub timeout: i32,
    /// Compress requests sent to this endpoint.
    pub compress: bool,
}

/// An endpoint as it travels inside a marshaled proxy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndpointData {
    /// `tcp` (type 1).
    Tcp(IpEndpointData),
    /// `ssl` (type 2).
    Ssl(IpEndpointData),
    /// `udp` (type 3); no timeout on the wire.
    Udp {
        /// Host name or address.
        host: String,
        /// Port.
        port: i32,
        /// Compress requests sent to this endpoint.
        compress: bool,
    },
    /// `ws` (type 4).
    Ws(IpEndpointData, String),
    /// `wss` (type 5).
    Wss(IpEndpointData, String),
    /// Any other type, kept verbatim so it can be written back unchanged.
    Opaque {
        /// The endpoint type.
        ty: i16,
        /// The encoding of its encapsulation.
        encoding: EncodingVersion,
        /// The encapsulation body.
        bytes: Vec<u8>,
    },
}

/// Endpoint type numbers (`Ice/Endpoint.ice`).
pub mod endpoint_type {
    /// TCP.
    pub const TCP: i16 = 1;
    /// SSL.
    pub const SSL: i16 = 2;
    /// UDP.
    pub const UDP: i16 = 3;
    /// WebSocket.
    pub const WS: i16 = 4;
    /// Secure WebSocket.
    pub const WSS: i16 = 5;
}

impl EndpointData {
    /// The endpoint's type number.
    pub fn type_number(&self) -> i16 {
        match self {
            EndpointData::Tcp(_) => endpoint_type::TCP,
            EndpointData::Ssl(_) => endpoint_type::SSL,
            EndpointData::Udp { .. } => endpoint_type::UDP,
            EndpointData::Ws(..) => endpoint_type::WS,
            EndpointData::Wss(..) => endpoint_type::WSS,
            EndpointData::Opaque { ty, .. } => *ty,
        }
    }

    fn encode_ip(ip: &IpEndpointData, enc: &mut Encoder) {
        enc.write_str(&ip.host);
        enc.write_i32(ip.port);
        enc.write_i32(ip.timeout);
        enc.write_bool(ip.compress);
    }

    fn decode_ip(dec: &mut Decoder) -> Result<IpEndpointData> {
        Ok(IpEndpointData {
            host: dec.read_string()?,
            port: dec.read_i32()?,
            timeout: dec.read_i32()?,
            compress: dec.read_bool()?,
        })
    }

    /// The endpoint an opaque one of a transport floe has stands for, read as Ice reads
    /// `opaque -t … -e … -v …` in a proxy string: tcp, udp and ws are taken apart when their
    /// body decodes exactly; ssl and wss stay opaque, as in an Ice runtime without IceSSL.
    pub(crate) fn from_opaque_string(ty: i16, encoding: EncodingVersion, bytes: &[u8]) -> Option<EndpointData> {
        if ty == endpoint_type::SSL || ty == endpoint_type::WSS || encoding.major != 1 || encoding.minor > 1 {
            return None;
        }
        let mut inner = Decoder::new(bytes::Bytes::copy_from_slice(bytes), encoding);
        match EndpointData::decode_body(ty, &mut inner) {
            Ok(Some(ep)) if inner.is_empty() => Some(ep),
            _ => None,
        }
    }

    fn decode_body(ty: i16, dec: &mut Decoder) -> Result<Option<EndpointData>> {
        Ok(Some(match ty {
            endpoint_type::TCP => EndpointData::Tcp(Self::decode_ip(dec)?),
            endpoint_type::SSL => EndpointData::Ssl(Self::decode_ip(dec)?),
            endpoint_type::UDP => {
                let host = dec.read_string()?;
                let port = dec.read_i32()?;
                if dec.encoding().is_1_0() {
                    dec.skip(4)?;
                }
                let compress = dec.read_bool()?;
                EndpointData::Udp { host, port, compress }
            }
            endpoint_type::WS => EndpointData::Ws(Self::decode_ip(dec)?, dec.read_string()?),
            endpoint_type::WSS => EndpointData::Wss(Self::decode_ip(dec)?, dec.read_string()?),
            _ => return Ok(None),
        }))
    }
}

impl Encode for EndpointData {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_i16(self.type_number());
        if let EndpointData::Opaque { encoding, bytes, .. } = self {
            enc.write_encapsulation(*encoding, bytes);
            return;
        }
        enc.start_nested_encapsulation();
        match self {
            EndpointData::Tcp(ip) | EndpointData::Ssl(ip) => Self::encode_ip(ip, enc),
            EndpointData::Udp { host, port, compress } => {
                enc.write_str(host);
                enc.write_i32(*port);
                if enc.encoding().is_1_0() {
                    enc.write_raw(&[1, 0, 1, 0]);
                }
                enc.write_bool(*compress);
            }
            EndpointData::Ws(ip, resource) | EndpointData::Wss(ip, resource) => {
                Self::encode_ip(ip, enc);
                enc.write_str(resource);
            }
            EndpointData::Opaque { .. } => unreachable!("handled above"),
        }
        enc.end_encapsulation();
    }
}

impl Decode for EndpointData {
    const MIN_WIRE_SIZE: usize = 8;
    fn decode(dec: &mut Decoder) -> Result<Self> {
        let ty = dec.read_i16()?;
        let (encoding, body) = dec.read_encapsulation()?;
        if encoding.major == 1 && encoding.minor <= 1 {
            let mut inner = Decoder::new(body.clone(), encoding);
            // A known type whose body does not decode exactly is kept opaque, so that it is
            // still written back byte for byte. tcp, ssl, udp, ws and wss are taken apart (as
            // an Ice runtime with IceSSL does); re-encoded, they give the same bytes. An ssl or
            // wss endpoint whose encapsulation has another encoding than the stream stays
            // opaque: re-encoded, it would take the stream's (Ice's proxy test sends one back
            // to clients without IceSSL and expects the very bytes).
            let secure = ty == endpoint_type::SSL || ty == endpoint_type::WSS;
            if !secure || encoding == dec.encoding() {
                if let Ok(Some(ep)) = EndpointData::decode_body(ty, &mut inner) {
                    if inner.is_empty() {
                        return Ok(ep);
                    }
                }
            }
        }
        Ok(EndpointData::Opaque { ty, encoding, bytes: body.to_vec() })
    }
}

/// A proxy as it is marshaled: everything a proxy carries on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProxyData {
    /// The target object's identity (never empty; an empty one is the null proxy).
    pub identity: Identity,
    /// The facet ("" for the default facet).
    pub facet: String,
    /// The invocation mode.
    pub mode: InvocationMode,
    /// Only secure endpoints may be used.
    pub secure: bool,
    /// Protocol version (1.1 encoding only; 1.0 under encoding 1.0).
    pub protocol: ProtocolVersion,
    /// Encoding the proxy uses for parameters (1.1 encoding only; 1.0 under encoding 1.0).
    pub encoding: EncodingVersion,
    /// Endpoints of a direct proxy.
    pub endpoints: Vec<EndpointData>,
    /// Adapter id of an indirect proxy without endpoints ("" for a well-known proxy).
    pub adapter_id: String,
}

impl ProxyData {
    /// Writes an optional proxy; `None` is the null proxy (an empty identity).
    pub fn encode_nullable(proxy: Option<&ProxyData>, enc: &mut Encoder) {
        match proxy {
            Some(p) => p.encode(enc),
            None => Identity::default().encode(enc),
        }
    }

    /// Reads a proxy that may be null.
    pub fn decode_nullable(dec: &mut Decoder) -> Result<Option<ProxyData>> {
        let identity = Identity::decode(dec)?;
        if identity.name.is_empty() {
            if !identity.category.is_empty() {
                return Err(DecodeError::Malformed("proxy identity with a category and no name"));
            }
            return Ok(None);
        }
        let facet = dec.read_facet()?;
        let mode = InvocationMode::from_u8(dec.read_u8()?)?;
        let secure = dec.read_bool()?;
        let (protocol, encoding) = if dec.encoding().is_1_0() {
            (ProtocolVersion::V1_0, EncodingVersion::V1_0)
        } else {
            let p = ProtocolVersion { major: dec.read_u8()?, minor: dec.read_u8()? };
            let e = EncodingVersion { major: dec.read_u8()?, minor: dec.read_u8()? };
            (p, e)
        };
        let n = dec.read_seq_len(EndpointData::MIN_WIRE_SIZE)?;
        let mut endpoints = Vec::with_capacity(n);
        for _ in 0..n {
            endpoints.push(EndpointData::decode(dec)?);
        }
        let adapter_id = if n == 0 { dec.read_string()? } else { String::new() };
        Ok(Some(ProxyData { identity, facet, mode, secure, protocol, encoding, endpoints, adapter_id }))
    }
}

impl Encode for ProxyData {
    fn encode(&self, enc: &mut Encoder) {
        self.identity.encode(enc);
        enc.write_facet(&self.facet);
        enc.write_u8(self.mode as u8);
        enc.write_bool(self.secure);
        if !enc.encoding().is_1_0() {
            enc.write_u8(self.protocol.major);
            enc.write_u8(self.protocol.minor);
            enc.write_u8(self.encoding.major);
            enc.write_u8(self.encoding.minor);
        }
        enc.write_size(self.endpoints.len());
        for ep in &self.endpoints {
            ep.encode(enc);
        }
        if self.endpoints.is_empty() {
            enc.write_str(&self.adapter_id);
        }
    }
}
