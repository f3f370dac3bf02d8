use std::collections::BTreeMap;

use compact_str::CompactString;

use super::error::Result;
use super::{Decode, Decoder, Encode, Encoder};

/// An Ice object identity: `name` plus an optional `category`. On the wire the name comes
/// first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The object's name; empty only for the null proxy.
    pub name: CompactString,
    /// The category (may be empty); default servants are registered per category.
    pub category: CompactString,
}

impl Identity {
    /// An identity with an empty category.
    pub fn new(name: impl AsRef<str>) -> Self {
        Identity { name: CompactString::new(name.as_ref()), category: CompactString::default() }
    }

    /// An identity with a category.
    pub fn with_category(category: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        Identity { name: CompactString::new(name.as_ref()), category: CompactString::new(category.as_ref()) }
    }
}

impl Encode for Identity {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        enc.write_str(&self.name);
        enc.write_str(&self.category);
    }
}

impl Decode for Identity {
    const MIN_WIRE_SIZE: usize = 2;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        let name = CompactString::new(dec.read_str()?);
        let category = CompactString::new(dec.read_str()?);
        Ok(Identity { name, category })
    }
}

/// A request context (`Ice::Context`, a `dictionary<string, string>`), kept sorted as Ice's
/// C++ runtime keeps it.
pub type Context = BTreeMap<String, String>;
