//! A session's filters: the categories, identities and adapter ids its client may call.
//! Each session starts with `Glacier2.Filter.Category.Accept`, `Glacier2.Filter.Identity.Accept`
//! and `Glacier2.Filter.AdapterId.Accept`, and a session manager changes them through the
//! `Glacier2::StringSet` / `Glacier2::IdentitySet` objects its `SessionControl` gives.
//!
//! A request passes when no filter is set, or when any non-empty filter matches it: its
//! category, its identity, or the adapter id of the proxy the client added for it (adapter
//! ids are checked only for indirect proxies), as Glacier2 checks them.

use std::sync::{Arc, Mutex};

use floe::reference::string_to_identity;
use floe::{CompactString, Current, Identity};

use crate::config::RouterConfig;
use crate::slice::glacier2::{IdentitySet, StringSet};
use crate::slice::ice;

/// Sorted, deduplicated members of a filter.
#[derive(Debug, Default)]
struct Set<T>(Vec<T>);

impl<T: Ord> Set<T> {
    fn add(&mut self, items: impl IntoIterator<Item = T>) {
        self.0.extend(items);
        self.0.sort();
        self.0.dedup();
    }

    fn remove(&mut self, items: &[T]) {
        self.0.retain(|x| !items.contains(x));
    }
}

impl Set<String> {
    fn contains_str(&self, item: &str) -> bool {
        self.0.binary_search_by(|x| x.as_str().cmp(item)).is_ok()
    }
}

/// The three filters, behind one lock (each forwarded request takes it once).
#[derive(Debug, Default)]
struct Sets {
    categories: Set<String>,
    adapter_ids: Set<String>,
    identities: Set<Identity>,
}

/// The filters of one session.
#[derive(Debug, Default)]
pub struct Filters(Mutex<Sets>);

impl Filters {
    /// The filters a session starts with, from the router's configuration. Identities that do
    /// not parse are left out (with a warning). `user` is the user id of a password session
    /// (`None` for an ssl session), which `Glacier2.Filter.Category.AcceptUser` adds to the
    /// categories: as it is with 1, with a leading underscore with 2, as Glacier2 does.
    pub fn from_config(config: &RouterConfig, user: Option<&str>) -> Filters {
        let identities = config.accept_identities.iter().filter_map(|s| match string_to_identity(s) {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(target: "floe::router", "Glacier2.Filter.Identity.Accept: `{s}`: {e}");
                None
            }
        });
        let mut sets = Sets::default();
        sets.categories.add(config.accept_categories.iter().cloned());
        match (config.accept_user, user) {
            (_, None) | (_, Some("")) => {}
            (1, Some(user)) => sets.categories.add([user.to_string()]),
            (2, Some(user)) => sets.categories.add([format!("_{user}")]),
            _ => {}
        }
        sets.adapter_ids.add(config.accept_adapter_ids.iter().cloned());
        sets.identities.add(identities);
        Filters(Mutex::new(sets))
    }

    fn sets(&self) -> std::sync::MutexGuard<'_, Sets> {
        self.0.lock().expect("filters")
    }

    /// Whether a request for `identity`, routed to a proxy with adapter id `adapter_id`
    /// (empty for a direct proxy), passes.
    pub fn accepts(&self, identity: &Identity, adapter_id: &str) -> bool {
        let sets = self.sets();
        let mut filtered = false;
        if !sets.categories.0.is_empty() {
            filtered = true;
            if sets.categories.contains_str(&identity.category) {
                return true;
            }
        }
        if !sets.identities.0.is_empty() {
            filtered = true;
            if sets.identities.0.binary_search(identity).is_ok() {
                return true;
            }
        }
        if !adapter_id.is_empty() && !sets.adapter_ids.0.is_empty() {
            filtered = true;
            if sets.adapter_ids.contains_str(adapter_id) {
                return true;
            }
        }
        !filtered
    }
}

/// Which string filter a `Glacier2::StringSet` object changes.
#[derive(Debug, Clone, Copy)]
pub enum StringFilter {
    /// The categories.
    Categories,
    /// The adapter ids.
    AdapterIds,
}

/// The `Glacier2::StringSet` servant of a session's categories or adapter ids.
pub struct StringSetServant {
    /// The session's filters.
    pub filters: Arc<Filters>,
    /// Which of them.
    pub which: StringFilter,
}

impl StringSetServant {
    fn with<R>(&self, f: impl FnOnce(&mut Set<String>) -> R) -> R {
        let mut sets = self.filters.sets();
        match self.which {
            StringFilter::Categories => f(&mut sets.categories),
            StringFilter::AdapterIds => f(&mut sets.adapter_ids),
        }
    }
}

impl StringSet for StringSetServant {
    async fn add(&self, additions: ice::StringSeq, _: &Current) -> floe::Result<()> {
        self.with(|set| set.add(additions.into_iter().map(|s| s.to_string())));
        Ok(())
    }

    async fn remove(&self, deletions: ice::StringSeq, _: &Current) -> floe::Result<()> {
        let deletions: Vec<String> = deletions.into_iter().map(|s| s.to_string()).collect();
        self.with(|set| set.remove(&deletions));
        Ok(())
    }

    async fn get(&self, _: &Current) -> floe::Result<ice::StringSeq> {
        Ok(self.with(|set| set.0.iter().map(|s| CompactString::from(s.as_str())).collect()))
    }
}

/// The `Glacier2::IdentitySet` servant of a session's identities.
pub struct IdentitySetServant(pub Arc<Filters>);

impl IdentitySet for IdentitySetServant {
    async fn add(&self, additions: ice::IdentitySeq, _: &Current) -> floe::Result<()> {
        self.0.sets().identities.add(additions);
        Ok(())
    }

    async fn remove(&self, deletions: ice::IdentitySeq, _: &Current) -> floe::Result<()> {
        self.0.sets().identities.remove(&deletions);
        Ok(())
    }

    async fn get(&self, _: &Current) -> floe::Result<ice::IdentitySeq> {
        Ok(self.0.sets().identities.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(categories: &[&str], identities: &[&str], adapter_ids: &[&str]) -> RouterConfig {
        let props = floe::Properties::new();
        props.set("Glacier2.Client.Endpoints", "tcp");
        props.set("Glacier2.Filter.Category.Accept", &categories.join(" "));
        props.set("Glacier2.Filter.Identity.Accept", &identities.join(" "));
        props.set("Glacier2.Filter.AdapterId.Accept", &adapter_ids.join(" "));
        RouterConfig::from_properties(&props).unwrap()
    }

    #[test]
    fn no_filter_accepts_everything() {
        let f = Filters::from_config(&config(&[], &[], &[]), None);
        assert!(f.accepts(&Identity::new("x"), ""));
        assert!(f.accepts(&Identity::with_category("c", "x"), "adapter"));
    }

    #[test]
    fn any_matching_filter_accepts() {
        let f = Filters::from_config(&config(&["cat"], &["other/one"], &["good"]), None);
        assert!(f.accepts(&Identity::with_category("cat", "x"), ""));
        assert!(f.accepts(&Identity::with_category("other", "one"), ""));
        assert!(f.accepts(&Identity::with_category("other", "two"), "good"));
        assert!(!f.accepts(&Identity::with_category("other", "two"), "bad"));
        assert!(!f.accepts(&Identity::with_category("other", "two"), ""));
        // Only the adapter id filter: direct proxies pass, indirect ones must match.
        let f = Filters::from_config(&config(&[], &[], &["good"]), None);
        assert!(f.accepts(&Identity::new("x"), ""));
        assert!(f.accepts(&Identity::new("x"), "good"));
        assert!(!f.accepts(&Identity::new("x"), "bad"));
    }

    #[test]
    fn accept_user_adds_the_user_id_to_the_categories() {
        let with = |mode: &str, user: Option<&str>| {
            let props = floe::Properties::new();
            props.set("Glacier2.Client.Endpoints", "tcp");
            props.set("Glacier2.Filter.Category.AcceptUser", mode);
            Filters::from_config(&RouterConfig::from_properties(&props).unwrap(), user)
        };
        let f = with("1", Some("alice"));
        assert!(f.accepts(&Identity::with_category("alice", "x"), ""));
        assert!(!f.accepts(&Identity::with_category("_alice", "x"), ""));
        assert!(!f.accepts(&Identity::new("x"), ""));
        let f = with("2", Some("alice"));
        assert!(f.accepts(&Identity::with_category("_alice", "x"), ""));
        assert!(!f.accepts(&Identity::with_category("alice", "x"), ""));
        // Not for ssl sessions, nor empty user ids, nor with 0 or other values.
        for f in [with("1", None), with("2", Some("")), with("0", Some("alice")), with("3", Some("alice"))] {
            assert!(f.accepts(&Identity::with_category("bob", "x"), ""));
        }
        let props = floe::Properties::new();
        props.set("Glacier2.Client.Endpoints", "tcp");
        props.set("Glacier2.Filter.Category.AcceptUser", "yes");
        assert!(RouterConfig::from_properties(&props).is_err(), "not a number");
    }

    #[test]
    fn sets_add_remove_and_get_sorted_without_duplicates() {
        let f = Filters::default();
        f.sets().categories.add(["b".to_string(), "a".to_string(), "b".to_string()]);
        assert_eq!(f.sets().categories.0, ["a", "b"]);
        assert!(!f.accepts(&Identity::with_category("c", "x"), ""));
        assert!(f.accepts(&Identity::with_category("b", "x"), ""));
        f.sets().categories.remove(&["a".to_string(), "missing".to_string()]);
        assert_eq!(f.sets().categories.0, ["b"]);
        f.sets().categories.remove(&["b".to_string()]);
        assert!(f.accepts(&Identity::with_category("c", "x"), ""));
    }
}
