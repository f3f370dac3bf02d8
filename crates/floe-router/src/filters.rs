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
struct Set<T>(Mutex<Vec<T>>);

impl<T: Ord + Clone> Set<T> {
    fn new(items: impl IntoIterator<Item = T>) -> Self {
        let s = Set(Mutex::default());
        s.add(items);
        s
    }

    fn add(&self, items: impl IntoIterator<Item = T>) {
        let mut v = self.0.lock().expect("filter");
        v.extend(items);
        v.sort();
        v.dedup();
    }

    fn remove(&self, items: &[T]) {
        self.0.lock().expect("filter").retain(|x| !items.contains(x));
    }

    fn get(&self) -> Vec<T> {
        self.0.lock().expect("filter").clone()
    }

    fn is_empty(&self) -> bool {
        self.0.lock().expect("filter").is_empty()
    }

    fn contains(&self, item: &T) -> bool {
        self.0.lock().expect("filter").binary_search(item).is_ok()
    }
}

/// The filters of one session.
#[derive(Debug, Default)]
pub struct Filters {
    categories: Set<String>,
    adapter_ids: Set<String>,
    identities: Set<Identity>,
}

impl Filters {
    /// The filters a session starts with, from the router's configuration. Identities that do
    /// not parse are left out (with a warning).
    pub fn from_config(config: &RouterConfig) -> Filters {
        let identities = config.accept_identities.iter().filter_map(|s| match string_to_identity(s) {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(target: "floe::router", "Glacier2.Filter.Identity.Accept: `{s}`: {e}");
                None
            }
        });
        Filters {
            categories: Set::new(config.accept_categories.iter().cloned()),
            adapter_ids: Set::new(config.accept_adapter_ids.iter().cloned()),
            identities: Set::new(identities),
        }
    }

    /// Whether a request for `identity`, routed to a proxy with adapter id `adapter_id`
    /// (empty for a direct proxy), passes.
    pub fn accepts(&self, identity: &Identity, adapter_id: &str) -> bool {
        let mut filtered = false;
        if !self.categories.is_empty() {
            filtered = true;
            if self.categories.contains(&identity.category.to_string()) {
                return true;
            }
        }
        if !self.identities.is_empty() {
            filtered = true;
            if self.identities.contains(identity) {
                return true;
            }
        }
        if !adapter_id.is_empty() && !self.adapter_ids.is_empty() {
            filtered = true;
            if self.adapter_ids.contains(&adapter_id.to_string()) {
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
    fn set(&self) -> &Set<String> {
        match self.which {
            StringFilter::Categories => &self.filters.categories,
            StringFilter::AdapterIds => &self.filters.adapter_ids,
        }
    }
}

impl StringSet for StringSetServant {
    async fn add(&self, additions: ice::StringSeq, _: &Current) -> floe::Result<()> {
        self.set().add(additions.into_iter().map(|s| s.to_string()));
        Ok(())
    }

    async fn remove(&self, deletions: ice::StringSeq, _: &Current) -> floe::Result<()> {
        let deletions: Vec<String> = deletions.into_iter().map(|s| s.to_string()).collect();
        self.set().remove(&deletions);
        Ok(())
    }

    async fn get(&self, _: &Current) -> floe::Result<ice::StringSeq> {
        Ok(self.set().get().into_iter().map(CompactString::from).collect())
    }
}

/// The `Glacier2::IdentitySet` servant of a session's identities.
pub struct IdentitySetServant(pub Arc<Filters>);

impl IdentitySet for IdentitySetServant {
    async fn add(&self, additions: ice::IdentitySeq, _: &Current) -> floe::Result<()> {
        self.0.identities.add(additions);
        Ok(())
    }

    async fn remove(&self, deletions: ice::IdentitySeq, _: &Current) -> floe::Result<()> {
        self.0.identities.remove(&deletions);
        Ok(())
    }

    async fn get(&self, _: &Current) -> floe::Result<ice::IdentitySeq> {
        Ok(self.0.identities.get())
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
        let f = Filters::from_config(&config(&[], &[], &[]));
        assert!(f.accepts(&Identity::new("x"), ""));
        assert!(f.accepts(&Identity::with_category("c", "x"), "adapter"));
    }

    #[test]
    fn any_matching_filter_accepts() {
        let f = Filters::from_config(&config(&["cat"], &["other/one"], &["good"]));
        assert!(f.accepts(&Identity::with_category("cat", "x"), ""));
        assert!(f.accepts(&Identity::with_category("other", "one"), ""));
        assert!(f.accepts(&Identity::with_category("other", "two"), "good"));
        assert!(!f.accepts(&Identity::with_category("other", "two"), "bad"));
        assert!(!f.accepts(&Identity::with_category("other", "two"), ""));
        // Only the adapter id filter: direct proxies pass, indirect ones must match.
        let f = Filters::from_config(&config(&[], &[], &["good"]));
        assert!(f.accepts(&Identity::new("x"), ""));
        assert!(f.accepts(&Identity::new("x"), "good"));
        assert!(!f.accepts(&Identity::new("x"), "bad"));
    }

    #[test]
    fn sets_add_remove_and_get_sorted_without_duplicates() {
        let f = Filters::default();
        f.categories.add(["b".to_string(), "a".to_string(), "b".to_string()]);
        assert_eq!(f.categories.get(), ["a", "b"]);
        assert!(!f.accepts(&Identity::with_category("c", "x"), ""));
        f.categories.remove(&["a".to_string(), "missing".to_string()]);
        assert_eq!(f.categories.get(), ["b"]);
        f.categories.remove(&["b".to_string()]);
        assert!(f.accepts(&Identity::with_category("c", "x"), ""));
    }
}
