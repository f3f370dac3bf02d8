//! A Prometheus endpoint: `Floe.Metrics.Prometheus.Endpoints=<host:port>` serves the
//! communicator's counters and histograms as a Prometheus text exposition (format 0.0.4) over
//! HTTP, at `/metrics` (and `/`).
//!
//! The series are kept by the `prometheus-client` crate (the Prometheus project's Rust
//! client) and served by hyper; [`Series`] is what the hot paths feed, through the
//! [`Metrics`](crate::metrics::Metrics) observers, only when the endpoint is configured.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::properties::Properties;

/// The property that turns the endpoint on.
pub const ENDPOINTS_PROPERTY: &str = "Floe.Metrics.Prometheus.Endpoints";

/// The labels of a series: name and value pairs.
pub type Labels = Vec<(String, String)>;

type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// Latency buckets, in seconds: 10 µs to about 84 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-6, 2.0, 24))
}

/// The series a communicator exposes.
pub struct Series {
    registry: Registry,
    /// Dispatches ended, by adapter, operation and outcome.
    pub dispatches: Family<Labels, Counter>,
    /// Dispatches running now, by adapter.
    pub dispatches_in_progress: Family<Labels, Gauge>,
    /// How long dispatches took, by adapter and operation.
    pub dispatch_duration: HistogramFamily,
    /// Bytes of the requests' parameters, by adapter and operation.
    pub dispatch_request_bytes: Family<Labels, Counter>,
    /// Bytes of the replies' results, by adapter and operation.
    pub dispatch_reply_bytes: Family<Labels, Counter>,
    /// Invocations (calls through proxies) ended, by operation, mode and outcome.
    pub invocations: Family<Labels, Counter>,
    /// How long invocations took, by operation and mode.
    pub invocation_duration: HistogramFamily,
    /// Connections open now, by direction (incoming, outgoing).
    pub connections: Family<Labels, Gauge>,
    /// Connections opened, by direction.
    pub connections_opened: Family<Labels, Counter>,
}

impl Series {
    /// Every series, registered and empty.
    pub fn new() -> Series {
        let mut registry = Registry::with_prefix("floe");
        let dispatches = Family::<Labels, Counter>::default();
        let dispatches_in_progress = Family::<Labels, Gauge>::default();
        let dispatch_duration = HistogramFamily::new_with_constructor(latency_histogram as fn() -> Histogram);
        let dispatch_request_bytes = Family::<Labels, Counter>::default();
        let dispatch_reply_bytes = Family::<Labels, Counter>::default();
        let invocations = Family::<Labels, Counter>::default();
        let connections = Family::<Labels, Gauge>::default();
        let connections_opened = Family::<Labels, Counter>::default();
        let invocation_duration = HistogramFamily::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register(
            "dispatches",
            "Requests dispatched by the communicator's object adapters, by adapter, operation and outcome \
             (ok, user_exception, or the local exception the caller gets)",
            dispatches.clone(),
        );
        registry.register(
            "dispatches_in_progress",
            "Dispatches running now, by adapter",
            dispatches_in_progress.clone(),
        );
        registry.register(
            "dispatch_duration_seconds",
            "Time from the start of a dispatch to its reply, by adapter and operation",
            dispatch_duration.clone(),
        );
        registry.register(
            "dispatch_request_bytes",
            "Bytes of the parameters of dispatched requests (encapsulation included), by adapter and operation",
            dispatch_request_bytes.clone(),
        );
        registry.register(
            "dispatch_reply_bytes",
            "Bytes of the results of replies (encapsulation included), by adapter and operation",
            dispatch_reply_bytes.clone(),
        );
        registry.register(
            "invocations",
            "Calls through the communicator's proxies (batched oneways are not counted), by operation, \
             mode (twoway, oneway, datagram) and outcome (ok, user_exception, or the Ice exception the call failed with)",
            invocations.clone(),
        );
        registry.register(
            "invocation_duration_seconds",
            "Time from the start of a call to its reply (twoway) or to its request being written (oneway), \
             retries included, by operation and mode",
            invocation_duration.clone(),
        );
        registry.register(
            "connections",
            "Connections open now: accepted by the communicator's adapters (incoming) or made by its proxies (outgoing)",
            connections.clone(),
        );
        registry.register("connections_opened", "Connections opened, by direction", connections_opened.clone());
        Series {
            registry,
            connections,
            connections_opened,
            invocations,
            invocation_duration,
            dispatches,
            dispatches_in_progress,
            dispatch_duration,
            dispatch_request_bytes,
            dispatch_reply_bytes,
        }
    }

    /// The exposition of every series, in Prometheus's text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }
}

impl Default for Series {
    fn default() -> Self {
        Series::new()
    }
}

/// The address `Floe.Metrics.Prometheus.Endpoints` names, if it is set: `host:port`, or an
/// Ice endpoint `tcp -h host -p port` for configurations that give every address that way.
pub fn configured_address(props: &Properties) -> Result<Option<SocketAddr>, String> {
    let Some(value) = props.get(ENDPOINTS_PROPERTY).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let value = value.trim();
    let bad = || format!("`{value}' is not host:port");
    if let Some(rest) = value.strip_prefix("tcp ") {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let after = |flag: &str| words.iter().position(|w| *w == flag).and_then(|i| words.get(i + 1)).copied();
        let host = after("-h").unwrap_or("127.0.0.1");
        let port: u16 = after("-p").and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        return resolve(host, port).map(Some).ok_or_else(bad);
    }
    let (host, port) = value.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    resolve(host, port).map(Some).ok_or_else(bad)
}

fn resolve(host: &str, port: u16) -> Option<SocketAddr> {
    use std::net::ToSocketAddrs;
    let host = if host.is_empty() || host == "*" { "0.0.0.0" } else { host };
    (host, port).to_socket_addrs().ok()?.next()
}

/// How long a scraper has to send a request's head (a Prometheus server sends it at once).
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A running endpoint; dropping it stops serving.
pub struct Endpoint {
    address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Endpoint {
    /// The address it listens on (with the port the system chose for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Listens on `address` at once (so a bad or taken address fails the communicator's
/// initialization) and serves `series` from a task on `runtime`.
pub fn serve(runtime: &tokio::runtime::Handle, address: SocketAddr, series: Arc<Series>) -> std::io::Result<Endpoint> {
    let listener = std::net::TcpListener::bind(address)?;
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let listener = {
        let _inside = runtime.enter();
        tokio::net::TcpListener::from_std(listener)?
    };
    let task = runtime.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of file descriptors, say: wait a little rather than spin.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            };
            let series = series.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let series = series.clone();
                    async move { Ok::<_, Infallible>(answer(&series, &request)) }
                });
                // A client that sends garbage or goes away ends only its own connection; one
                // that sends no complete request head in time is closed, so that silent
                // connections cannot pile up.
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(Endpoint { address, task })
}

fn answer<B>(series: &Series, request: &Request<B>) -> Response<Full<Bytes>> {
    let reply = |status: u16, content_type: &str, body: String| {
        Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
    };
    match (request.method().as_str(), request.uri().path()) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            reply(200, prometheus_client::encoding::prometheus_text::CONTENT_TYPE, series.encode())
        }
        ("GET" | "HEAD", _) => reply(404, "text/plain", "not found: the metrics are at /metrics\n".into()),
        _ => reply(405, "text/plain", "only GET and HEAD\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: &str) -> Properties {
        let p = Properties::new();
        p.set(ENDPOINTS_PROPERTY, value);
        p
    }

    #[test]
    fn addresses_as_host_port_or_tcp_endpoint() {
        assert_eq!(configured_address(&Properties::new()).unwrap(), None);
        assert_eq!(configured_address(&props("127.0.0.1:9464")).unwrap(), Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(configured_address(&props("[::1]:9464")).unwrap(), Some("[::1]:9464".parse().unwrap()));
        assert_eq!(
            configured_address(&props("tcp -h 127.0.0.1 -p 9000")).unwrap(),
            Some("127.0.0.1:9000".parse().unwrap())
        );
        for bad in ["9464", "127.0.0.1:x", "127.0.0.1:70000", "tcp -h 127.0.0.1"] {
            assert!(configured_address(&props(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_exposition_names_every_series() {
        let series = Series::new();
        let labels: Labels = vec![("adapter".into(), "A".into()), ("operation".into(), "op".into())];
        series.dispatch_duration.get_or_create(&labels).observe(0.001);
        let mut with_outcome = labels.clone();
        with_outcome.push(("outcome".into(), "ok".into()));
        series.dispatches.get_or_create(&with_outcome).inc();
        let text = series.encode();
        assert!(text.contains("# TYPE floe_dispatches_total counter"), "{text}");
        assert!(text.contains("floe_dispatches_total{adapter=\"A\",operation=\"op\",outcome=\"ok\"} 1"), "{text}");
        assert!(text.contains("floe_dispatch_duration_seconds_count{adapter=\"A\",operation=\"op\"} 1"), "{text}");
    }
}
