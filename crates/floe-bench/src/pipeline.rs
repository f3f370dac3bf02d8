//! The pipelined-calls loop shared by the async systems (floe and tonic).

use std::future::Future;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};

/// Keeps up to `depth` calls made by `call` in flight until `deadline`, issuing them 100 at a
/// time, then waits for the rest. Returns how many calls were issued; stops at the first error.
pub(crate) async fn pipelined<F, Fut, T, E>(deadline: Instant, depth: usize, mut call: F) -> Result<u64, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut inflight = FuturesUnordered::new();
    let mut ops = 0;
    while Instant::now() < deadline {
        for _ in 0..100 {
            inflight.push(call());
            if inflight.len() >= depth {
                if let Some(r) = inflight.next().await {
                    r?;
                }
            }
        }
        ops += 100;
    }
    while let Some(r) = inflight.next().await {
        r?;
    }
    Ok(ops)
}
