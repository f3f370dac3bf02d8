//! The communicator's [`Logger`] and the `Logger` admin facet (`Ice::LoggerAdmin`): the
//! recent messages kept in a bounded buffer (`Ice.Admin.Logger.KeepLogs` print, warning and
//! error messages, `Ice.Admin.Logger.KeepTraces` traces), and remote loggers
//! (`Ice::RemoteLogger`) that get `init` with the recent messages they asked for, then `log`
//! for each new message that passes their filter, in order, from a task of their own.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::slice::ice::{
    LogMessage, LogMessageSeq, LogMessageType, LoggerAdmin, LoggerAdminServer, RemoteLoggerAlreadyAttachedException,
    RemoteLoggerPrx, StringSeq,
};
use crate::dispatch::{Current, Dispatcher};
use crate::encoding::Identity;
use crate::error::{Error, Result};
use crate::proxy::Proxy;
use compact_str::CompactString;

/// Messages queued for one remote logger before new ones are dropped (a remote logger that
/// cannot keep up loses messages rather than holding memory without bound).
const REMOTE_QUEUE: usize = 1024;

/// Where a communicator's log messages are written (an `Ice::Logger` implementation of
/// Ice): give one to [`Communicator::with_logger`](crate::Communicator::with_logger). The
/// default writes to `tracing` (target `floe::logger`).
pub trait LogSink: Send + Sync + 'static {
    /// A message printed by the program.
    fn print(&self, message: &str);
    /// A trace message of `category`.
    fn trace(&self, category: &str, message: &str);
    /// A warning.
    fn warning(&self, message: &str);
    /// An error.
    fn error(&self, message: &str);
    /// The prefix of the messages (the `prefix` that the `Logger` admin facet reports).
    fn prefix(&self) -> &str;
}

/// The default sink: `tracing`, with `Ice.ProgramName` as the prefix.
struct TracingSink {
    prefix: String,
}

impl LogSink for TracingSink {
    fn print(&self, message: &str) {
        tracing::info!(target: "floe::logger", prefix = %self.prefix, "{message}");
    }
    fn trace(&self, category: &str, message: &str) {
        tracing::debug!(target: "floe::logger", prefix = %self.prefix, category, "{message}");
    }
    fn warning(&self, message: &str) {
        tracing::warn!(target: "floe::logger", prefix = %self.prefix, "{message}");
    }
    fn error(&self, message: &str) {
        tracing::error!(target: "floe::logger", prefix = %self.prefix, "{message}");
    }
    fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// The communicator's logger (Ice's `Ice::Logger`): messages go to its [`LogSink`] and, when
/// the communicator has the `Logger` admin facet, to that facet's buffer and remote loggers.
/// floe's own runtime diagnostics go to `tracing` only.
#[derive(Clone)]
pub struct Logger {
    sink: Arc<dyn LogSink>,
    admin: Option<Arc<LogState>>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger").field("prefix", &self.sink.prefix()).finish_non_exhaustive()
    }
}

impl Logger {
    /// A logger writing to `sink`, or to `tracing` with `prefix` without one.
    pub(super) fn plain(sink: Option<Arc<dyn LogSink>>, prefix: &str) -> Logger {
        let sink = sink.unwrap_or_else(|| Arc::new(TracingSink { prefix: prefix.to_string() }));
        Logger { sink, admin: None }
    }

    /// The same logger, also feeding a `Logger` admin facet; and that facet.
    pub(super) fn with_admin(
        self,
        keep_logs: usize,
        keep_traces: usize,
        runtime: tokio::runtime::Handle,
    ) -> (Logger, Arc<dyn Dispatcher>) {
        let state = Arc::new(LogState {
            prefix: self.sink.prefix().into(),
            keep_logs,
            keep_traces,
            runtime,
            inner: Mutex::new(Inner::default()),
        });
        let facet = LoggerAdminServer::new(LoggerAdminI { state: state.clone() });
        (Logger { sink: self.sink, admin: Some(state) }, facet)
    }

    /// The prefix of its messages (`Ice.ProgramName`, or the sink's).
    pub fn prefix(&self) -> &str {
        self.sink.prefix()
    }

    /// Logs a message printed by the program.
    pub fn print(&self, message: &str) {
        self.sink.print(message);
        self.record(LogMessageType::PrintMessage, "", message);
    }

    /// Logs a trace message of `category`.
    pub fn trace(&self, category: &str, message: &str) {
        self.sink.trace(category, message);
        self.record(LogMessageType::TraceMessage, category, message);
    }

    /// Logs a warning.
    pub fn warning(&self, message: &str) {
        self.sink.warning(message);
        self.record(LogMessageType::WarningMessage, "", message);
    }

    /// Logs an error.
    pub fn error(&self, message: &str) {
        self.sink.error(message);
        self.record(LogMessageType::ErrorMessage, "", message);
    }

    fn record(&self, kind: LogMessageType, category: &str, message: &str) {
        if let Some(state) = &self.admin {
            state.record(LogMessage {
                r#type: kind,
                timestamp: now_micros(),
                trace_category: category.into(),
                message: message.into(),
            });
        }
    }

    /// Detaches every remote logger (the communicator is destroyed).
    pub(super) fn detach_all(&self) {
        if let Some(state) = &self.admin {
            state.lock().remotes.clear();
        }
    }
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What a remote logger or a `getLog` call asked for: message types (empty: all) and trace
/// categories (empty: all), the latter applying to traces only.
#[derive(Clone, Default)]
struct Filter {
    types: Vec<LogMessageType>,
    categories: Vec<CompactString>,
}

impl Filter {
    fn accepts(&self, m: &LogMessage) -> bool {
        if !self.types.is_empty() && !self.types.contains(&m.r#type) {
            return false;
        }
        m.r#type != LogMessageType::TraceMessage
            || self.categories.is_empty()
            || self.categories.contains(&m.trace_category)
    }
}

struct Remote {
    identity: Identity,
    filter: Filter,
    queue: mpsc::Sender<LogMessage>,
}

#[derive(Default)]
struct Inner {
    /// The kept messages, oldest first.
    messages: VecDeque<LogMessage>,
    logs: usize,
    traces: usize,
    remotes: Vec<Remote>,
}

struct LogState {
    prefix: CompactString,
    keep_logs: usize,
    keep_traces: usize,
    runtime: tokio::runtime::Handle,
    inner: Mutex<Inner>,
}

impl LogState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, m: LogMessage) {
        let mut inner = self.lock();
        for r in &inner.remotes {
            if r.filter.accepts(&m) {
                // A full queue drops the message for that remote logger only.
                let _ = r.queue.try_send(m.clone());
            }
        }
        let trace = m.r#type == LogMessageType::TraceMessage;
        let keep = if trace { self.keep_traces } else { self.keep_logs };
        if keep == 0 {
            return;
        }
        inner.messages.push_back(m);
        let count = if trace { &mut inner.traces } else { &mut inner.logs };
        *count += 1;
        if *count > keep {
            *count -= 1;
            let oldest = inner.messages.iter().position(|x| (x.r#type == LogMessageType::TraceMessage) == trace);
            if let Some(i) = oldest {
                inner.messages.remove(i);
            }
        }
    }

    /// The kept messages that pass `filter`, the `max` most recent if `max` is not negative.
    fn log(&self, filter: &Filter, max: i32) -> LogMessageSeq {
        let inner = self.lock();
        let mut out: Vec<LogMessage> = inner.messages.iter().filter(|m| filter.accepts(m)).cloned().collect();
        if let Ok(max) = usize::try_from(max) {
            let skip = out.len().saturating_sub(max);
            out.drain(..skip);
        }
        out
    }

    fn detach(&self, identity: &Identity) -> bool {
        let mut inner = self.lock();
        let before = inner.remotes.len();
        inner.remotes.retain(|r| &r.identity != identity);
        inner.remotes.len() != before
    }
}

struct LoggerAdminI {
    state: Arc<LogState>,
}

impl LoggerAdmin for LoggerAdminI {
    async fn attach_remote_logger(
        &self,
        prx: Option<RemoteLoggerPrx>,
        message_types: Vec<LogMessageType>,
        trace_categories: StringSeq,
        message_max: i32,
        _: &Current,
    ) -> Result<()> {
        // Nothing can be sent to a null proxy: Ice ignores it too.
        let Some(prx) = prx else { return Ok(()) };
        let identity = prx.as_object().ice_get_identity().clone();
        let filter = Filter { types: message_types, categories: trace_categories };
        let (queue, mut rx) = mpsc::channel(REMOTE_QUEUE);
        let initial = {
            let mut inner = self.state.lock();
            if inner.remotes.iter().any(|r| r.identity == identity) {
                return Err(Error::user(RemoteLoggerAlreadyAttachedException {}));
            }
            drop(inner);
            let initial = self.state.log(&filter, message_max);
            inner = self.state.lock();
            inner.remotes.push(Remote { identity: identity.clone(), filter, queue });
            initial
        };
        let state = Arc::downgrade(&self.state);
        let prefix = self.state.prefix.clone();
        self.state.runtime.spawn(async move {
            let mut result = prx.init(&prefix, &initial).await;
            while result.is_ok() {
                let Some(m) = rx.recv().await else { return };
                result = prx.log(&m).await;
            }
            if let (Err(e), Some(state)) = (result, state.upgrade()) {
                tracing::debug!(target: "floe::admin", "remote logger {prx} failed, detached: {e}");
                state.detach(&identity);
            }
        });
        Ok(())
    }

    async fn detach_remote_logger(&self, prx: Option<RemoteLoggerPrx>, _: &Current) -> Result<bool> {
        Ok(prx.is_some_and(|p| self.state.detach(p.as_object().ice_get_identity())))
    }

    async fn get_log(
        &self,
        message_types: Vec<LogMessageType>,
        trace_categories: StringSeq,
        message_max: i32,
        _: &Current,
    ) -> Result<(LogMessageSeq, CompactString)> {
        let filter = Filter { types: message_types, categories: trace_categories };
        Ok((self.state.log(&filter, message_max), self.state.prefix.clone()))
    }
}
