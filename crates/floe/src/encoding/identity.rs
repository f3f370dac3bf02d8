use std::collections::BTreeMap;

use super::error::Result;
use super::{Decode, Decoder, Encode, Encoder};

/// An Ice object identity: `name` plus an optional `category`. On the wire the name comes
/// first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The object's name; empty only for the null proxy.
    pub name: String,
    /// The category (may be empty); default servants are registered per category.
    pub category: String,
}

impl Identity {
    /// An identity with an empty category.
    pub fn new(name: impl Into<String>) -> Self {
        Identity { name: name.into(), category: String::new() }
    }

    /// An identity with a category.
    pub fn with_category(category: impl Into<String>, name: impl Into<String>) -> Self {
        Identity { name: name.into(), category: category.into() }
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
        let name = dec.read_string()?;
        let category = dec.read_string()?;
        Ok(Identity { name, category })
    }
}

/// A request context (`Ice::Context`, a `dictionary<string, string>`), kept sorted as Ice's
/// C++ runtime keeps it.
pub type Context = BTreeMap<String, String>;
