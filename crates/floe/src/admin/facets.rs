//! The built-in admin facets other than the logger's: `Process`, `Properties` (with the
//! program's update callbacks) and `Metrics` (the IceMX metrics views).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::logger::Logger;
use super::slice::ice::{Process, ProcessServer, PropertiesAdmin, PropertiesAdminServer, PropertyDict};
use super::slice::ice_mx::{
    DispatchMetrics, Metrics, MetricsAdmin, MetricsAdminServer, MetricsFailures, MetricsFailuresSeq, MetricsView,
    UnknownMetricsView,
};
use crate::dispatch::{Current, Dispatcher};
use crate::error::{Error, Result};
use crate::instance::WeakInstance;
use crate::properties::Properties;
use compact_str::CompactString;

/// The `Process` facet: shuts the communicator down, writes messages to stdout or stderr.
struct ProcessI {
    instance: WeakInstance,
}

impl Process for ProcessI {
    async fn shutdown(&self, _: &Current) -> Result<()> {
        if let Some(instance) = self.instance.upgrade() {
            instance.shutdown();
        }
        Ok(())
    }

    async fn write_message(&self, message: CompactString, fd: i32, _: &Current) -> Result<()> {
        use std::io::Write;
        // Ice writes to stdout for 1 and stderr for 2, and ignores other descriptors; so does
        // floe. A write that fails (closed stream) is not the caller's error.
        match fd {
            1 => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{message}");
                let _ = out.flush();
            }
            2 => {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{message}");
            }
            _ => {}
        }
        Ok(())
    }
}

pub(super) fn process(instance: WeakInstance) -> Arc<dyn Dispatcher> {
    ProcessServer::new(ProcessI { instance })
}

/// A property-update callback: called with the properties a `setProperties` call added,
/// changed (with their new value) or removed (with an empty value).
type UpdateCallback = Arc<dyn Fn(&PropertyDict) + Send + Sync>;

/// Identifies a registered property-update callback, to remove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UpdateCallbackId(u64);

struct PropertiesShared {
    properties: Properties,
    logger: Logger,
    callbacks: Mutex<Vec<(UpdateCallbackId, UpdateCallback)>>,
    next_id: AtomicU64,
    /// Serializes `setProperties` calls, so that callbacks see changes in order.
    update: tokio::sync::Mutex<()>,
}

/// The program's handle on the `Properties` admin facet (Ice's `NativePropertiesAdmin`):
/// registers the callbacks called after a remote `setProperties` changes the properties.
#[derive(Clone)]
pub struct PropertiesAdminHandle {
    shared: Arc<PropertiesShared>,
}

impl std::fmt::Debug for PropertiesAdminHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PropertiesAdminHandle").finish_non_exhaustive()
    }
}

impl PropertiesAdminHandle {
    /// Registers `callback`, called after each remote `setProperties` call with what it
    /// changed (a property it removed has an empty value; the map is empty when nothing
    /// changed), in the order of the calls, before the call returns to its caller.
    pub fn add_update_callback(&self, callback: impl Fn(&PropertyDict) + Send + Sync + 'static) -> UpdateCallbackId {
        let id = UpdateCallbackId(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        self.shared.callbacks.lock().unwrap_or_else(|e| e.into_inner()).push((id, Arc::new(callback)));
        id
    }

    /// Removes a callback; returns whether it was registered.
    pub fn remove_update_callback(&self, id: UpdateCallbackId) -> bool {
        let mut callbacks = self.shared.callbacks.lock().unwrap_or_else(|e| e.into_inner());
        let before = callbacks.len();
        callbacks.retain(|(i, _)| *i != id);
        callbacks.len() != before
    }
}

struct PropertiesAdminI {
    shared: Arc<PropertiesShared>,
}

impl PropertiesAdmin for PropertiesAdminI {
    async fn get_property(&self, key: CompactString, _: &Current) -> Result<CompactString> {
        Ok(self.shared.properties.get(&key).map(CompactString::from).unwrap_or_default())
    }

    async fn get_properties_for_prefix(&self, prefix: CompactString, _: &Current) -> Result<PropertyDict> {
        Ok(self.shared.properties.with_prefix(&prefix).into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    async fn set_properties(&self, new_properties: PropertyDict, _: &Current) -> Result<()> {
        let _serial = self.shared.update.lock().await;
        let props = &self.shared.properties;
        let mut changes = PropertyDict::new();
        for (name, value) in &new_properties {
            if name.is_empty() {
                return Err(Error::Property { name: String::new(), reason: "a property name is empty".into() });
            }
            match props.get(name) {
                None if value.is_empty() => {}
                Some(old) if old == value.as_str() => {}
                _ => {
                    changes.insert(name.clone(), value.clone());
                }
            }
        }
        for (name, value) in &changes {
            props.set(name, value);
        }
        if !changes.is_empty() {
            let mut names: Vec<&str> = changes.keys().map(CompactString::as_str).collect();
            names.sort_unstable();
            self.shared.logger.trace("Admin.Properties", &format!("properties changed: {}", names.join(", ")));
        }
        let callbacks: Vec<UpdateCallback> =
            self.shared.callbacks.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, c)| c.clone()).collect();
        for callback in callbacks {
            // A callback that panics is the program's bug: it is reported, and the others
            // still run.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| callback(&changes))).is_err() {
                self.shared.logger.warning("a properties update callback panicked");
            }
        }
        Ok(())
    }
}

pub(super) fn properties(properties: Properties, logger: Logger) -> (PropertiesAdminHandle, Arc<dyn Dispatcher>) {
    let shared = Arc::new(PropertiesShared {
        properties,
        logger,
        callbacks: Mutex::new(Vec::new()),
        next_id: AtomicU64::new(1),
        update: tokio::sync::Mutex::new(()),
    });
    let facet = PropertiesAdminServer::new(PropertiesAdminI { shared: shared.clone() });
    (PropertiesAdminHandle { shared }, facet)
}

/// The `Metrics` facet: the views of the communicator's IceMX metrics (see
/// [`crate::metrics`]); an unknown view name gives `IceMX::UnknownMetricsView`.
struct MetricsAdminI {
    metrics: Arc<crate::metrics::Metrics>,
}

fn unknown_view() -> Error {
    Error::user(UnknownMetricsView {})
}

fn to_compact(v: Vec<String>) -> super::slice::ice::StringSeq {
    v.into_iter().map(CompactString::from).collect()
}

fn failures_of(entry: &crate::metrics::Entry) -> MetricsFailures {
    MetricsFailures {
        id: entry.id.as_str().into(),
        failures: entry.failures.iter().map(|(k, v)| (CompactString::from(k.as_str()), *v)).collect(),
    }
}

fn metrics_object(entry: &crate::metrics::Entry) -> crate::Class<Metrics> {
    let base = Metrics {
        id: entry.id.as_str().into(),
        total: entry.total,
        current: entry.current,
        total_lifetime: entry.total_lifetime,
        failures: entry.failures.values().sum(),
    };
    let dispatch =
        DispatchMetrics { base, user_exception: entry.user_exception, size: entry.size, reply_size: entry.reply_size };
    crate::Class::new(dispatch).downcast::<Metrics>().expect("DispatchMetrics derives from Metrics")
}

impl MetricsAdmin for MetricsAdminI {
    async fn get_metrics_view_names(
        &self,
        _: &Current,
    ) -> Result<(super::slice::ice::StringSeq, super::slice::ice::StringSeq)> {
        let (enabled, disabled) = self.metrics.view_names();
        Ok((to_compact(enabled), to_compact(disabled)))
    }

    async fn enable_metrics_view(&self, name: CompactString, _: &Current) -> Result<()> {
        self.metrics.set_enabled(&name, true).then_some(()).ok_or_else(unknown_view)
    }

    async fn disable_metrics_view(&self, name: CompactString, _: &Current) -> Result<()> {
        self.metrics.set_enabled(&name, false).then_some(()).ok_or_else(unknown_view)
    }

    async fn get_metrics_view(&self, name: CompactString, _: &Current) -> Result<(MetricsView, i64)> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let view = self
            .metrics
            .with_view(&name, |view| {
                if !view.enabled {
                    return MetricsView::new();
                }
                view.maps
                    .iter()
                    .map(|(map, m)| {
                        (CompactString::from(map.as_str()), m.entries().map(|e| Some(metrics_object(e))).collect())
                    })
                    .collect()
            })
            .ok_or_else(unknown_view)?;
        Ok((view, now))
    }

    async fn get_map_metrics_failures(
        &self,
        view: CompactString,
        map: CompactString,
        _: &Current,
    ) -> Result<MetricsFailuresSeq> {
        self.metrics
            .with_view(&view, |v| {
                v.maps.get(map.as_str()).map_or_else(Vec::new, |m| {
                    m.entries().filter(|e| !e.failures.is_empty()).map(failures_of).collect()
                })
            })
            .ok_or_else(unknown_view)
    }

    async fn get_metrics_failures(
        &self,
        view: CompactString,
        map: CompactString,
        id: CompactString,
        _: &Current,
    ) -> Result<MetricsFailures> {
        self.metrics
            .with_view(&view, |v| {
                v.maps
                    .get(map.as_str())
                    .and_then(|m| m.entry(&id))
                    .map(failures_of)
                    .unwrap_or_else(|| MetricsFailures { id: id.clone(), failures: Default::default() })
            })
            .ok_or_else(unknown_view)
    }
}

pub(super) fn metrics(metrics: Arc<crate::metrics::Metrics>) -> Arc<dyn Dispatcher> {
    MetricsAdminServer::new(MetricsAdminI { metrics })
}
