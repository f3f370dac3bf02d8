//! When a server's new descriptor differs from the loaded one, as IceGrid's node decides it:
//! the same application uuid and revision never differ; otherwise every field counts but the
//! revision, adapters by id and `server-lifetime`, database environments by name and
//! properties, and (unless asked not to) the properties.

use floe::Error;
use floe_icegrid::ice_grid::{DeploymentException, InternalServerDescriptor};

/// The descriptor a registry sent (a `DeploymentException` for a null one).
pub fn from_class(svr: Option<floe::Class<InternalServerDescriptor>>) -> floe::Result<InternalServerDescriptor> {
    match svr {
        Some(d) => Ok(d.read().clone()),
        None => Err(Error::user(DeploymentException { reason: "no server descriptor".into() })),
    }
}

/// Whether `new` would change a server loaded with `old` (`ignore_properties`: properties
/// aside, for an update that must not restart a running server).
pub fn updated(old: &InternalServerDescriptor, new: &InternalServerDescriptor, ignore_properties: bool) -> bool {
    if old.uuid == new.uuid && old.revision == new.revision {
        return false;
    }
    let fields_differ = old.id != new.id
        || old.application != new.application
        || old.uuid != new.uuid
        || old.session_id != new.session_id
        || old.exe != new.exe
        || old.pwd != new.pwd
        || old.user != new.user
        || old.activation != new.activation
        || old.activation_timeout != new.activation_timeout
        || old.deactivation_timeout != new.deactivation_timeout
        || old.application_distrib != new.application_distrib
        || old.process_registered != new.process_registered
        || old.options != new.options
        || old.envs != new.envs
        || old.logs != new.logs
        || old.services != new.services;
    if fields_differ {
        return true;
    }
    let distrib = |d: &InternalServerDescriptor| {
        d.distrib.as_ref().map(|d| (d.read().icepatch.clone(), d.read().directories.clone()))
    };
    if distrib(old) != distrib(new) {
        return true;
    }
    let adapters = |d: &InternalServerDescriptor| -> Vec<Option<(String, bool)>> {
        d.adapters.iter().map(|a| a.as_ref().map(|a| (a.read().id.clone(), a.read().server_lifetime))).collect()
    };
    if adapters(old) != adapters(new) {
        return true;
    }
    let db_envs = |d: &InternalServerDescriptor| {
        d.db_envs
            .iter()
            .map(|e| e.as_ref().map(|e| (e.read().name.clone(), e.read().properties.clone())))
            .collect::<Vec<_>>()
    };
    if db_envs(old) != db_envs(new) {
        return true;
    }
    !ignore_properties && old.properties != new.properties
}

#[cfg(test)]
mod tests {
    use floe::Class;
    use floe_icegrid::ice_grid::{InternalAdapterDescriptor, PropertyDescriptor};

    use super::*;

    fn server(revision: i32, greeting: &str) -> InternalServerDescriptor {
        let mut d = InternalServerDescriptor {
            id: "S".into(),
            uuid: "u".into(),
            revision,
            exe: "/bin/true".into(),
            adapters: vec![Some(Class::new(InternalAdapterDescriptor { id: "S.A".into(), server_lifetime: true }))],
            ..Default::default()
        };
        d.properties
            .insert("config".into(), vec![PropertyDescriptor { name: "Greeting".into(), value: greeting.into() }]);
        d
    }

    #[test]
    fn only_what_a_server_runs_with_counts() {
        // Decoded twice, the adapters are distinct instances with the same values.
        assert!(!updated(&server(1, "hi"), &server(2, "hi"), false));
        assert!(!updated(&server(1, "hi"), &server(1, "bye"), false), "same revision");
        assert!(updated(&server(1, "hi"), &server(2, "bye"), false));
        assert!(!updated(&server(1, "hi"), &server(2, "bye"), true));
        let mut other = server(2, "hi");
        other.options.push("-v".into());
        assert!(updated(&server(1, "hi"), &other, true));
    }
}
