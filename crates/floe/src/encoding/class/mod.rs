//! Class instances (Slice classes passed by value) in encodings 1.0 and 1.1.
//!
//! An instance lives in a [`Class<T>`]: a shared, mutable, reference-counted cell, so that a
//! graph keeps its shape (two members pointing at one instance decode as two handles to one
//! cell) and may contain cycles. `T` is the static type of the reference (the Slice type it was
//! declared with); the instance itself may be of any type derived from `T`. Generated classes
//! embed their base class as a field named `base`, implement [`ClassValue`] and [`ClassType`],
//! and dereference to their base, so inherited members read naturally.
//!
//! On the wire (see the protocol notes): encoding 1.1 writes an instance inline the first time
//! it is referenced (`size 1` + slices) and a back-reference (`size id`, ids from 2) after that;
//! in the sliced format, references inside a slice are indexes into an indirection table that
//! follows the slice. Encoding 1.0 writes `-id` at the reference and the instances themselves
//! after the parameters ("pending values"). Readers skip slices of types they do not know when
//! the slices carry sizes, and stop at the most derived type they know.
//!
//! This file holds the types (`Class`, its cells and guards, the factories, `SliceInfo`);
//! `write` holds the encoder's side of instances, `read` the decoder's.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::error::Result;
use super::{Decoder, Encoder};

/// A class instance as the runtime sees it. Generated code implements it for every class.
pub trait ClassValue: Any + Send + Sync + fmt::Debug {
    /// The Slice type id of the instance's most derived known type.
    fn ice_id(&self) -> &'static str;

    /// The part of this instance that is a `t` (itself or one of its embedded bases).
    fn part(&self, t: TypeId) -> Option<&dyn Any>;

    /// Mutable access to the part of this instance that is a `t`.
    fn part_mut(&mut self, t: TypeId) -> Option<&mut dyn Any>;

    /// A function telling whether instances of this type have a `t` part (the type itself or
    /// one of its bases). Handles keep it beside the instance, so that casts need no lock.
    fn part_checker(&self) -> fn(TypeId) -> bool;

    /// True when the type (or a base) is marked `["preserve-slice"]`: slices of more derived
    /// types this program does not know are kept with the instance and written back out
    /// (in the sliced format).
    fn preserves_slices(&self) -> bool {
        false
    }

    /// Writes every slice, most derived first (with [`Encoder::start_class_slice`] and
    /// [`Encoder::end_class_slice`] around each).
    fn encode_slices(&self, enc: &mut Encoder);

    /// Reads every slice, most derived first (with [`Decoder::start_class_slice`] and
    /// [`Decoder::end_class_slice`] around each).
    fn decode_slices(&mut self, dec: &mut Decoder) -> Result<()>;
}

/// How a reader creates instances: by type id, and the type id of a compact id. Each
/// generated class has one covering itself and every class derived from it that the same
/// Slice compilation knows.
#[derive(Clone, Copy)]
pub struct ClassFactory {
    /// A default instance of the type with this id, if known.
    pub create: fn(&str) -> Option<Box<dyn ClassValue>>,
    /// The type id a compact id stands for, if known.
    pub compact: fn(i32) -> Option<&'static str>,
}

impl fmt::Debug for ClassFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClassFactory")
    }
}

/// Value factories a program registers (Ice's ValueFactoryManager): they create instances of
/// the type ids they are registered for, before the generated factories are asked. Shared by a
/// communicator and the decoders it makes.
#[derive(Default)]
pub struct ValueFactories {
    by_type_id: RwLock<HashMap<String, Arc<ValueFactoryFn>>>,
}

/// A registered value factory: makes a default instance.
pub type ValueFactoryFn = dyn Fn() -> Box<dyn ClassValue> + Send + Sync;

impl fmt::Debug for ValueFactories {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.by_type_id.read().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        f.debug_struct("ValueFactories").field("type_ids", &ids).finish()
    }
}

impl ValueFactories {
    /// Registers (or replaces) the factory for `type_id`.
    pub fn add(&self, type_id: &str, factory: impl Fn() -> Box<dyn ClassValue> + Send + Sync + 'static) {
        self.by_type_id.write().unwrap_or_else(|p| p.into_inner()).insert(type_id.to_string(), Arc::new(factory));
    }

    /// Removes the factory for `type_id`; true if there was one.
    pub fn remove(&self, type_id: &str) -> bool {
        self.by_type_id.write().unwrap_or_else(|p| p.into_inner()).remove(type_id).is_some()
    }

    /// An instance from the factory registered for `type_id`, if any.
    pub fn create(&self, type_id: &str) -> Option<Box<dyn ClassValue>> {
        let f = self.by_type_id.read().ok()?.get(type_id).cloned()?;
        Some(f())
    }
}

/// A class with a static type: generated classes implement it.
pub trait ClassType: ClassValue + Sized {
    /// The Slice type id.
    const TYPE_ID: &'static str;
    /// Creates this type and the types derived from it.
    const FACTORY: ClassFactory;
}

/// Returned by a [`ClassFactory`] for type ids nobody knows, when a reader must still produce
/// an instance (a `Value` whose every slice is unknown, sliced format).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnknownSlicedValue {
    /// The most derived type id that was on the wire.
    pub unknown_type_id: String,
}

impl ClassValue for UnknownSlicedValue {
    fn ice_id(&self) -> &'static str {
        "::Ice::UnknownSlicedValue"
    }
    fn part_checker(&self) -> fn(TypeId) -> bool {
        |t| t == TypeId::of::<Self>()
    }
    fn preserves_slices(&self) -> bool {
        true
    }
    fn part(&self, t: TypeId) -> Option<&dyn Any> {
        (t == TypeId::of::<Self>()).then_some(self as &dyn Any)
    }
    fn part_mut(&mut self, t: TypeId) -> Option<&mut dyn Any> {
        (t == TypeId::of::<Self>()).then_some(self as &mut dyn Any)
    }
    fn encode_slices(&self, enc: &mut Encoder) {
        // Its slices, when kept, were written already (they include the last one). Otherwise it
        // goes back out as a plain Ice::Object (in 1.0 the runtime writes that slice after
        // every instance anyway).
        if enc.wrote_preserved_slices() {
            return;
        }
        if !enc.encoding().is_1_0() {
            enc.start_class_slice("::Ice::Object", None, true, false);
            enc.end_class_slice();
        }
    }
    fn decode_slices(&mut self, _dec: &mut Decoder) -> Result<()> {
        Ok(())
    }
}

/// An instance known only by an interface it implements (Slice's deprecated "interface by
/// value"): it carries the interface's type id and no data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterfaceByValue {
    /// The interface's type id, e.g. `::Test::I`.
    pub type_id: &'static str,
}

impl InterfaceByValue {
    /// An instance for the interface with this type id.
    pub fn new(type_id: &'static str) -> Self {
        InterfaceByValue { type_id }
    }
}

impl ClassValue for InterfaceByValue {
    fn ice_id(&self) -> &'static str {
        self.type_id
    }
    fn part_checker(&self) -> fn(TypeId) -> bool {
        |t| t == TypeId::of::<Self>()
    }
    fn part(&self, t: TypeId) -> Option<&dyn Any> {
        (t == TypeId::of::<Self>()).then_some(self as &dyn Any)
    }
    fn part_mut(&mut self, t: TypeId) -> Option<&mut dyn Any> {
        (t == TypeId::of::<Self>()).then_some(self as &mut dyn Any)
    }
    fn encode_slices(&self, enc: &mut Encoder) {
        enc.start_class_slice(self.type_id, None, true, false);
        enc.end_class_slice();
    }
    fn decode_slices(&mut self, dec: &mut Decoder) -> Result<()> {
        dec.start_class_slice()?;
        dec.end_class_slice()
    }
}

/// A slice of a type this program does not know, kept to be written back (Ice's SliceInfo).
#[derive(Debug, Clone, Default)]
pub struct SliceInfo {
    /// The slice's type id (or the compact id as decimal text).
    pub type_id: String,
    /// The compact id it was sent with, if any.
    pub compact_id: Option<i32>,
    /// The slice's members as they were on the wire (without the optional end marker).
    pub bytes: bytes::Bytes,
    /// The instances its indirection table referred to.
    instances: Vec<Arc<ClassCell>>,
    /// It had optional members.
    pub has_optional_members: bool,
    /// It was the least derived slice.
    pub is_last_slice: bool,
}

impl PartialEq for SliceInfo {
    /// Same type and bytes, and the same instances in its table.
    fn eq(&self, other: &Self) -> bool {
        self.type_id == other.type_id
            && self.compact_id == other.compact_id
            && self.bytes == other.bytes
            && self.has_optional_members == other.has_optional_members
            && self.is_last_slice == other.is_last_slice
            && self.instances.len() == other.instances.len()
            && self.instances.iter().zip(&other.instances).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

impl SliceInfo {
    /// A kept slice of a user exception (its table's instances come from the decoder).
    pub(crate) fn exception_slice(
        type_id: String,
        bytes: bytes::Bytes,
        instances: Vec<Arc<ClassCell>>,
        has_optional_members: bool,
        is_last_slice: bool,
    ) -> Self {
        SliceInfo { type_id, compact_id: None, bytes, instances, has_optional_members, is_last_slice }
    }
}

/// What a handle knows about its instance without locking it.
#[derive(Clone, Copy)]
struct TypeInfo {
    ice_id: &'static str,
    has_part: fn(TypeId) -> bool,
}

/// The shared cell behind every [`Class`] handle.
pub(crate) struct ClassCell {
    value: RwLock<Option<Box<dyn ClassValue>>>,
    info: std::sync::OnceLock<TypeInfo>,
    /// Slices of more derived types nobody here knows (`["preserve-slice"]`), most derived first.
    sliced: std::sync::Mutex<Vec<SliceInfo>>,
}

impl fmt::Debug for ClassCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClassCell({:p})", self)
    }
}

impl ClassCell {
    fn empty() -> Arc<Self> {
        Arc::new(ClassCell {
            value: RwLock::new(None),
            info: std::sync::OnceLock::new(),
            sliced: std::sync::Mutex::new(Vec::new()),
        })
    }

    fn with(value: Box<dyn ClassValue>) -> Arc<Self> {
        let cell = ClassCell::empty();
        cell.fill(value);
        cell
    }

    /// Stores the instance (once, when it is created or decoded).
    fn fill(&self, value: Box<dyn ClassValue>) {
        let _ = self.info.set(TypeInfo { ice_id: value.ice_id(), has_part: value.part_checker() });
        *self.value.write().unwrap_or_else(|p| p.into_inner()) = Some(value);
    }

    fn has_part(&self, t: TypeId) -> bool {
        self.info.get().map(|i| (i.has_part)(t)).unwrap_or(false)
    }
    fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as *const () as usize
    }
}

/// A reference to a class instance whose static type is `T` (`Class<dyn ClassValue>`, alias
/// [`AnyClass`], for Slice's `Value`/`Object` by value). Cloning it clones the reference, not
/// the instance; equality is identity.
pub struct Class<T: ?Sized + 'static = dyn ClassValue> {
    cell: Arc<ClassCell>,
    _type: PhantomData<fn() -> Box<T>>,
}

/// A reference to an instance of any class.
pub type AnyClass = Class<dyn ClassValue>;

impl<T: ?Sized> Clone for Class<T> {
    fn clone(&self) -> Self {
        Class { cell: self.cell.clone(), _type: PhantomData }
    }
}

impl<T: ?Sized> PartialEq for Class<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

impl<T: ?Sized> Eq for Class<T> {}

impl<T: ?Sized> fmt::Debug for Class<T> {
    /// Prints the type and address only: graphs may be cyclic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.cell.info.get().map(|i| i.ice_id).unwrap_or("?");
        write!(f, "Class({id} @ {:#x})", self.cell.key())
    }
}

impl<T: ?Sized> Class<T> {
    /// The Slice type id of the instance's most derived known type.
    pub fn ice_id(&self) -> &'static str {
        self.cell.info.get().map(|i| i.ice_id).unwrap_or("::Ice::Object")
    }

    /// The slices of more derived types this program does not know that were kept with the
    /// instance (its type is marked `["preserve-slice"]`), most derived first (Ice's
    /// `ice_getSlicedData`).
    pub fn preserved_slices(&self) -> Vec<SliceInfo> {
        self.cell.sliced.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// True when both refer to the same instance.
    pub fn ptr_eq(&self, other: &Class<impl ?Sized>) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }

    /// This reference with no static type.
    pub fn to_any(&self) -> AnyClass {
        Class { cell: self.cell.clone(), _type: PhantomData }
    }

    /// This reference as a `U`, if the instance is one (a `U` or derived from it).
    ///
    /// It takes no lock, so it may be used while the instance is being written to.
    pub fn downcast<U: ClassType>(&self) -> Option<Class<U>> {
        self.cell.has_part(TypeId::of::<U>()).then(|| Class { cell: self.cell.clone(), _type: PhantomData })
    }

    /// Read access to the whole instance, as its dynamic type.
    pub fn read_any(&self) -> ClassReadGuard<'_, dyn ClassValue> {
        ClassReadGuard { guard: self.cell.value.read().unwrap_or_else(|p| p.into_inner()), _type: PhantomData }
    }
}

impl<T: ClassType> Class<T> {
    /// A new instance.
    pub fn new(value: T) -> Self {
        Class { cell: ClassCell::with(Box::new(value)), _type: PhantomData }
    }

    /// Read access to the instance as a `T`.
    pub fn read(&self) -> ClassReadGuard<'_, T> {
        ClassReadGuard { guard: self.cell.value.read().unwrap_or_else(|p| p.into_inner()), _type: PhantomData }
    }

    /// Write access to the instance as a `T`.
    pub fn write(&self) -> ClassWriteGuard<'_, T> {
        ClassWriteGuard { guard: self.cell.value.write().unwrap_or_else(|p| p.into_inner()), _type: PhantomData }
    }
}

impl AnyClass {
    /// A new instance of any class.
    pub fn from_value(value: Box<dyn ClassValue>) -> Self {
        Class { cell: ClassCell::with(value), _type: PhantomData }
    }
}

impl<T: ClassType> From<Class<T>> for AnyClass {
    fn from(c: Class<T>) -> Self {
        c.to_any()
    }
}

/// Read access to an instance (see [`Class::read`]).
pub struct ClassReadGuard<'a, T: ?Sized> {
    guard: RwLockReadGuard<'a, Option<Box<dyn ClassValue>>>,
    _type: PhantomData<fn() -> Box<T>>,
}

/// Write access to an instance (see [`Class::write`]).
pub struct ClassWriteGuard<'a, T: ?Sized> {
    guard: RwLockWriteGuard<'a, Option<Box<dyn ClassValue>>>,
    _type: PhantomData<fn() -> Box<T>>,
}

// A `Class<T>` is only ever made for an instance that has a `T` part: by `Class::new`, by
// `downcast` after checking, or by the decoder, which checks every reference's static type
// before it returns. The expects below state that invariant.
const FILLED: &str = "a class reference always refers to a decoded instance of its static type";

impl<T: ClassType> std::ops::Deref for ClassReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().and_then(|v| v.part(TypeId::of::<T>())).and_then(|p| p.downcast_ref()).expect(FILLED)
    }
}

impl std::ops::Deref for ClassReadGuard<'_, dyn ClassValue> {
    type Target = dyn ClassValue;
    fn deref(&self) -> &(dyn ClassValue + 'static) {
        self.guard.as_deref().expect(FILLED)
    }
}

impl<T: ClassType> std::ops::Deref for ClassWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().and_then(|v| v.part(TypeId::of::<T>())).and_then(|p| p.downcast_ref()).expect(FILLED)
    }
}

impl<T: ClassType> std::ops::DerefMut for ClassWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().and_then(|v| v.part_mut(TypeId::of::<T>())).and_then(|p| p.downcast_mut()).expect(FILLED)
    }
}

/// Slice flags (`Protocol.h`).
pub(crate) mod flags {
    pub(crate) const TYPE_ID_STRING: u8 = 0x01;
    pub(crate) const TYPE_ID_INDEX: u8 = 0x02;
    pub(crate) const TYPE_ID_COMPACT: u8 = 0x03;
    pub(crate) const TYPE_ID_MASK: u8 = 0x03;
    pub(crate) const HAS_OPTIONAL_MEMBERS: u8 = 0x04;
    pub(crate) const HAS_INDIRECTION_TABLE: u8 = 0x08;
    pub(crate) const HAS_SLICE_SIZE: u8 = 0x10;
    pub(crate) const IS_LAST_SLICE: u8 = 0x20;
}

mod read;
mod write;

pub(crate) use read::ClassReadState;
pub use read::CLASS_GRAPH_DEPTH_MAX;
pub(crate) use write::ClassWriteState;
