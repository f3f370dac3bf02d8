//! Object identities ([`Identity`]) and request contexts ([`Context`], [`RequestContext`])
//! with their encoding.

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

/// The context a request arrived with, as a dispatch sees it ([`Current::ctx`]).
///
/// Most requests carry none, so an empty context is a null pointer: it costs nothing to
/// make, move or drop, which matters on the per-request path of batched and oneway
/// dispatch. It reads as a [`Context`] through `Deref` (`current.ctx.get("key")`,
/// `current.ctx.is_empty()`), and writes through `DerefMut`, which allocates the map on
/// first use.
///
/// [`Current::ctx`]: crate::dispatch::Current::ctx
#[derive(Clone, Default)]
pub struct RequestContext(Option<Box<Context>>);

/// What an absent context reads as.
static EMPTY_CONTEXT: Context = BTreeMap::new();

impl RequestContext {
    /// An empty context (no allocation).
    #[inline]
    pub const fn new() -> Self {
        RequestContext(None)
    }

    /// The context as an owned map.
    pub fn into_context(self) -> Context {
        self.0.map(|b| *b).unwrap_or_default()
    }
}

impl std::ops::Deref for RequestContext {
    type Target = Context;

    #[inline]
    fn deref(&self) -> &Context {
        self.0.as_deref().unwrap_or(&EMPTY_CONTEXT)
    }
}

impl std::ops::DerefMut for RequestContext {
    fn deref_mut(&mut self) -> &mut Context {
        self.0.get_or_insert_with(Box::default)
    }
}

impl From<Context> for RequestContext {
    /// Keeps a non-empty map; an empty one becomes the null context.
    fn from(context: Context) -> Self {
        if context.is_empty() {
            RequestContext(None)
        } else {
            RequestContext(Some(Box::new(context)))
        }
    }
}

impl From<RequestContext> for Context {
    fn from(context: RequestContext) -> Self {
        context.into_context()
    }
}

/// Equal when the maps are: an emptied map equals the null context.
impl PartialEq for RequestContext {
    fn eq(&self, other: &RequestContext) -> bool {
        **self == **other
    }
}

impl Eq for RequestContext {}

impl PartialEq<Context> for RequestContext {
    fn eq(&self, other: &Context) -> bool {
        **self == *other
    }
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl Encode for RequestContext {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        (**self).encode(enc);
    }
}

impl Decode for RequestContext {
    const MIN_WIRE_SIZE: usize = 1;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        // An empty context is one size byte: no call to the map decoder for it.
        if dec.read_zero_size() {
            return Ok(RequestContext::new());
        }
        Context::decode(dec).map(RequestContext::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::EncodingVersion;

    fn context(pairs: &[(&str, &str)]) -> Context {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn an_empty_request_context_holds_no_map_and_reads_as_an_empty_one() {
        let empty = RequestContext::new();
        assert!(empty.0.is_none());
        assert!(empty.is_empty());
        assert_eq!(empty.get("k"), None);
        assert!(RequestContext::from(Context::new()).0.is_none());
        assert_eq!(empty, Context::new());
    }

    #[test]
    fn a_request_context_is_written_through_and_compares_by_its_entries() {
        let mut ctx = RequestContext::new();
        ctx.insert("k".into(), "v".into());
        assert_eq!(ctx, context(&[("k", "v")]));
        assert_eq!(ctx.clone().into_context(), context(&[("k", "v")]));
        ctx.remove("k");
        // An emptied map equals the null context.
        assert_eq!(ctx, RequestContext::new());
        assert_eq!(format!("{:?}", RequestContext::from(context(&[("a", "b")]))), r#"{"a": "b"}"#);
    }

    #[test]
    fn a_request_context_has_the_wire_form_of_a_context() {
        for pairs in [&[][..], &[("a", "1"), ("b", "2")][..]] {
            let map = context(pairs);
            let mut enc = Encoder::new(EncodingVersion::V1_0);
            RequestContext::from(map.clone()).encode(&mut enc);
            let mut plain = Encoder::new(EncodingVersion::V1_0);
            map.encode(&mut plain);
            let bytes = enc.into_bytes();
            assert_eq!(bytes, plain.into_bytes());
            let mut dec = Decoder::new(bytes, EncodingVersion::V1_0);
            assert_eq!(RequestContext::decode(&mut dec).expect("a context"), map);
            assert!(dec.is_empty());
        }
        // A truncated context is an error, not an empty one.
        let mut dec = Decoder::new(bytes::Bytes::from_static(&[1, 1, b'a']), EncodingVersion::V1_0);
        assert!(RequestContext::decode(&mut dec).is_err());
    }
}
