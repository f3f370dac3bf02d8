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

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::error::{DecodeError, Result};
use super::{Decode, Decoder, Encode, Encoder};

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

impl Encoder {
    /// Writes the kept slices of an exception's unknown more derived types before its own
    /// slices (sliced format only; in the compact format the exception goes out as its own
    /// type, as with Ice).
    pub fn write_preserved_exception_slices(&mut self, slices: &[SliceInfo]) {
        if self.encoding().is_1_0() || self.format() != super::FormatType::Sliced {
            return;
        }
        for info in slices {
            self.start_exception_slice(&info.type_id, info.is_last_slice, info.has_optional_members);
            self.write_raw(&info.bytes);
            if let Some(Some(slice)) = self.class_state().slices.last_mut() {
                for (i, instance) in info.instances.iter().enumerate() {
                    slice.table_index.insert(instance.key(), i + 1);
                }
                slice.table = info.instances.clone();
            }
            self.end_exception_slice();
        }
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

// ---- encoding

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

/// One slice being written.
#[derive(Debug, Default)]
struct WriteSlice {
    flags_pos: usize,
    size_pos: Option<usize>,
    /// Sliced format: instances referenced from this slice, in table order.
    table: Vec<Arc<ClassCell>>,
    table_index: HashMap<usize, usize>,
}

/// What an encoder remembers about classes within one encapsulation.
#[derive(Debug, Default)]
pub(crate) struct ClassWriteState {
    /// Instance ids by cell (1.1: from 2; 1.0: from 1).
    ids: HashMap<usize, i32>,
    next_id: i32,
    /// Type ids already written, with their index (from 1).
    type_ids: HashMap<String, usize>,
    /// 1.0: instances referenced but not written yet.
    pending: Vec<(i32, Arc<ClassCell>)>,
    /// Class slices being written, innermost last (one per instance being written).
    slices: Vec<Option<WriteSlice>>,
    /// The next slice to start is the first of its instance.
    first_slice: bool,
    /// The instance being written started with kept slices of unknown types.
    wrote_preserved: bool,
}

impl Encoder {
    fn class_state(&mut self) -> &mut ClassWriteState {
        let first_id = if self.encoding().is_1_0() { 1 } else { 2 };
        self.classes.get_or_insert_with(|| Box::new(ClassWriteState { next_id: first_id, ..Default::default() }))
    }

    /// Writes a reference to a class instance (`None`: null).
    pub fn write_class<T: ?Sized>(&mut self, value: Option<&Class<T>>) {
        let Some(value) = value else {
            if self.encoding().is_1_0() {
                self.write_i32(0);
            } else {
                self.write_size(0);
            }
            return;
        };
        let cell = value.cell.clone();
        if self.encoding().is_1_0() {
            let state = self.class_state();
            let key = cell.key();
            let id = match state.ids.get(&key) {
                Some(id) => *id,
                None => {
                    let id = state.next_id;
                    state.next_id += 1;
                    state.ids.insert(key, id);
                    state.pending.push((id, cell));
                    id
                }
            };
            self.write_i32(-id);
            return;
        }
        // 1.1, inside a slice of the sliced format: an index into the slice's table.
        let sliced = self.format() == super::FormatType::Sliced;
        if sliced {
            if let Some(Some(slice)) = self.class_state().slices.last_mut() {
                let key = cell.key();
                let index = match slice.table_index.get(&key) {
                    Some(i) => *i,
                    None => {
                        slice.table.push(cell);
                        let i = slice.table.len();
                        slice.table_index.insert(key, i);
                        i
                    }
                };
                self.write_size(index);
                return;
            }
        }
        self.write_instance(cell);
    }

    /// 1.1: a back-reference, or `1` and the instance's slices.
    fn write_instance(&mut self, cell: Arc<ClassCell>) {
        let state = self.class_state();
        let key = cell.key();
        if let Some(id) = state.ids.get(&key) {
            let id = *id;
            self.write_size(id as usize);
            return;
        }
        let id = state.next_id;
        state.next_id += 1;
        state.ids.insert(key, id);
        self.write_size(1);
        self.write_instance_slices(&cell);
    }

    fn write_instance_slices(&mut self, cell: &Arc<ClassCell>) {
        let state = self.class_state();
        let outer_first = std::mem::replace(&mut state.first_slice, true);
        let outer_preserved = std::mem::replace(&mut state.wrote_preserved, false);
        state.slices.push(None);
        // Kept slices of unknown types go first, and only in the sliced format (otherwise the
        // instance is sliced to the types known here, as with Ice).
        let slices = cell.sliced.lock().map(|s| s.clone()).unwrap_or_default();
        {
            if self.format() == super::FormatType::Sliced && !self.encoding().is_1_0() && !slices.is_empty() {
                for info in &slices {
                    self.start_class_slice(
                        &info.type_id,
                        info.compact_id,
                        info.is_last_slice,
                        info.has_optional_members,
                    );
                    self.write_raw(&info.bytes);
                    if let Some(Some(slice)) = self.class_state().slices.last_mut() {
                        for (i, instance) in info.instances.iter().enumerate() {
                            slice.table_index.insert(instance.key(), i + 1);
                        }
                        slice.table = info.instances.clone();
                    }
                    self.end_class_slice();
                }
                self.class_state().wrote_preserved = true;
            }
        }
        let guard = cell.value.read().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(v) => v.encode_slices(self),
            None => UnknownSlicedValue::default().encode_slices(self),
        }
        drop(guard);
        self.end_class_instance_1_0();
        let state = self.class_state();
        state.slices.pop();
        state.first_slice = outer_first;
        state.wrote_preserved = outer_preserved;
    }

    /// True while writing an instance whose kept slices of unknown types were written first.
    pub fn wrote_preserved_slices(&mut self) -> bool {
        self.classes.as_ref().is_some_and(|s| s.wrote_preserved)
    }

    /// Starts a slice of a class instance: its type id (`compact_id` is used instead when
    /// given, in 1.1), `last` for the least derived slice, `has_optionals` when optional
    /// members follow (1.1).
    pub fn start_class_slice(&mut self, type_id: &str, compact_id: Option<i32>, last: bool, has_optionals: bool) {
        if self.encoding().is_1_0() {
            self.write_type_id_1_0(type_id);
            let size_pos = self.len();
            self.write_i32(0);
            let slot = self.class_state().slices.last_mut();
            if let Some(slot) = slot {
                *slot = Some(WriteSlice { flags_pos: usize::MAX, size_pos: Some(size_pos), ..Default::default() });
            }
            return;
        }
        let sliced = self.format() == super::FormatType::Sliced;
        let first = std::mem::replace(&mut self.class_state().first_slice, false);
        let mut f = 0u8;
        if last {
            f |= flags::IS_LAST_SLICE;
        }
        if has_optionals {
            f |= flags::HAS_OPTIONAL_MEMBERS;
        }
        if sliced {
            f |= flags::HAS_SLICE_SIZE;
        }
        let flags_pos = self.len();
        self.write_u8(0);
        if first || sliced {
            if let Some(compact) = compact_id {
                f |= flags::TYPE_ID_COMPACT;
                self.write_size(compact as usize);
            } else {
                let state = self.class_state();
                match state.type_ids.get(type_id) {
                    Some(index) => {
                        let index = *index;
                        f |= flags::TYPE_ID_INDEX;
                        self.write_size(index);
                    }
                    None => {
                        let index = state.type_ids.len() + 1;
                        state.type_ids.insert(type_id.to_string(), index);
                        f |= flags::TYPE_ID_STRING;
                        self.write_str(type_id);
                    }
                }
            }
        }
        self.as_mut_slice()[flags_pos] = f;
        let size_pos = sliced.then(|| {
            let p = self.len();
            self.write_i32(0);
            p
        });
        if let Some(slot) = self.class_state().slices.last_mut() {
            *slot = Some(WriteSlice { flags_pos, size_pos, ..Default::default() });
        }
    }

    fn write_type_id_1_0(&mut self, type_id: &str) {
        let state = self.class_state();
        match state.type_ids.get(type_id) {
            Some(index) => {
                let index = *index;
                self.write_bool(true);
                self.write_size(index);
            }
            None => {
                let index = state.type_ids.len() + 1;
                state.type_ids.insert(type_id.to_string(), index);
                self.write_bool(false);
                self.write_str(type_id);
            }
        }
    }

    /// Ends the slice opened by [`Encoder::start_class_slice`]: the optional end marker, the
    /// slice size, and (sliced format) the indirection table. Encoding 1.0 ends the instance
    /// with the `::Ice::Object` slice after the last one.
    pub fn end_class_slice(&mut self) {
        let slice = self.class_state().slices.last_mut().and_then(Option::take);
        let Some(slice) = slice else { return };
        if self.encoding().is_1_0() {
            if let Some(size_pos) = slice.size_pos {
                let size = (self.len() - size_pos) as i32;
                self.patch_i32(size_pos, size);
            }
            return;
        }
        let f = self.as_slice()[slice.flags_pos];
        if f & flags::HAS_OPTIONAL_MEMBERS != 0 {
            self.write_u8(super::OPTIONAL_END_MARKER);
        }
        if let Some(size_pos) = slice.size_pos {
            let size = (self.len() - size_pos) as i32;
            self.patch_i32(size_pos, size);
        }
        self.write_indirection_table(slice);
    }

    /// Writes a sliced-format slice's indirection table after it, if it has one.
    fn write_indirection_table(&mut self, slice: WriteSlice) {
        if slice.table.is_empty() {
            return;
        }
        let f = self.as_slice()[slice.flags_pos];
        self.as_mut_slice()[slice.flags_pos] = f | flags::HAS_INDIRECTION_TABLE;
        self.write_size(slice.table.len());
        // Table entries are written like references outside any slice.
        self.class_state().slices.push(None);
        for cell in slice.table {
            self.write_instance(cell);
        }
        self.class_state().slices.pop();
    }

    /// A slice of a user exception in the sliced format (1.1): class members it holds go to its
    /// indirection table.
    pub(crate) fn open_exception_table(&mut self, flags_pos: usize, size_pos: Option<usize>) {
        self.class_state().slices.push(Some(WriteSlice { flags_pos, size_pos, ..Default::default() }));
    }

    /// Ends an exception slice opened with [`Encoder::open_exception_table`] (after its size was
    /// patched): writes the table.
    pub(crate) fn close_exception_table(&mut self) {
        let slice = self.classes.as_mut().and_then(|s| s.slices.pop()).flatten();
        if let Some(slice) = slice {
            self.write_indirection_table(slice);
        }
    }

    /// Encoding 1.0: ends an instance written with its slices by writing the `::Ice::Object`
    /// slice (an empty facet map).
    fn end_class_instance_1_0(&mut self) {
        if !self.encoding().is_1_0() {
            return;
        }
        self.write_type_id_1_0("::Ice::Object");
        let size_pos = self.len();
        self.write_i32(0);
        self.write_size(0);
        let size = (self.len() - size_pos) as i32;
        self.patch_i32(size_pos, size);
    }

    /// Ends the classes of an encapsulation: encoding 1.0 writes the instances referenced so
    /// far (and those they reference), then `size 0`. Generated code calls it after the
    /// parameters (or exception) of operations whose signature uses classes; encoding 1.1
    /// writes nothing.
    pub fn write_pending_values(&mut self) {
        if !self.encoding().is_1_0() {
            return;
        }
        loop {
            let pending = std::mem::take(&mut self.class_state().pending);
            if pending.is_empty() {
                break;
            }
            self.write_size(pending.len());
            for (id, cell) in pending {
                self.write_i32(id);
                self.write_instance_slices(&cell);
            }
        }
        self.write_size(0);
    }
}

impl<T: ?Sized> Encode for Option<Class<T>> {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_class(self.as_ref());
    }
}

impl<T: ClassType> Decode for Option<Class<T>> {
    const MIN_WIRE_SIZE: usize = 1;
    fn decode(dec: &mut Decoder) -> Result<Self> {
        dec.read_class::<T>()
    }
}

impl Decode for Option<AnyClass> {
    const MIN_WIRE_SIZE: usize = 1;
    fn decode(dec: &mut Decoder) -> Result<Self> {
        dec.read_any_class(None)
    }
}

// ---- decoding

/// The header of a class slice as read from the wire.
#[derive(Debug, Clone, Default)]
struct ReadSlice {
    flags: u8,
    type_id: Option<String>,
    /// Position just after the slice's members (and optionals), when the size is known.
    end: Option<usize>,
    /// Where the slice's members start.
    start: usize,
    /// The compact id the type was sent as.
    compact_id: Option<i32>,
    /// Position after the indirection table, which was read at the start of the slice.
    after_table: Option<usize>,
    /// An exception slice's table not read yet: it starts here.
    table_at: Option<usize>,
    table: Vec<Arc<ClassCell>>,
}

/// What a decoder remembers about classes within one encapsulation.
#[derive(Debug, Default)]
pub(crate) struct ClassReadState {
    /// This state (not a clone of it) decides what happens to the instances on drop.
    owner: bool,
    /// Graphs with cycles are accepted (`Ice.AcceptClassCycles`).
    accept_cycles: bool,
    /// The instances being decoded, innermost last (cell keys).
    stack: Vec<usize>,
    /// References from an instance to another: (from, to) cell keys.
    edges: Vec<(usize, usize)>,
    /// Every reference was read and checked: the graph now belongs to the program.
    complete: bool,
    cells: HashMap<i32, Arc<ClassCell>>,
    next_id: i32,
    type_ids: Vec<String>,
    /// The factory for references whose static type is `Value` (set by generated code).
    default_factory: Option<ClassFactory>,
    /// Factories the program registered, asked first.
    value_factories: Option<Arc<ValueFactories>>,
    /// 1.0: factories to create pending instances with, by id.
    factories: HashMap<i32, ClassFactory>,
    /// 1.0: how deep in the graph each instance was first referenced.
    ref_depths: HashMap<i32, usize>,
    /// Static types to check once every instance is read: (cell, type, type name).
    checks: Vec<(Arc<ClassCell>, Option<TypeId>, &'static str)>,
    /// The slice being read in each instance being decoded, innermost last.
    slices: Vec<Option<ReadSlice>>,
    /// The header of the first slice, read while looking for a known type.
    first: Option<ReadSlice>,
    /// The factory of each instance being decoded, innermost last: the instances in the
    /// indirection tables of its later slices are created with it too.
    instance_factories: Vec<ClassFactory>,
    depth: usize,
}

impl Clone for ClassReadState {
    fn clone(&self) -> Self {
        ClassReadState {
            owner: false,
            accept_cycles: self.accept_cycles,
            stack: self.stack.clone(),
            edges: self.edges.clone(),
            complete: self.complete,
            cells: self.cells.clone(),
            next_id: self.next_id,
            type_ids: self.type_ids.clone(),
            default_factory: self.default_factory,
            value_factories: self.value_factories.clone(),
            factories: self.factories.clone(),
            ref_depths: self.ref_depths.clone(),
            checks: self.checks.clone(),
            slices: self.slices.clone(),
            first: self.first.clone(),
            instance_factories: self.instance_factories.clone(),
            depth: self.depth,
        }
    }
}

impl Drop for ClassReadState {
    /// Instances of a decoding that failed (or was abandoned) are emptied, so that cycles
    /// among them cannot keep them alive.
    fn drop(&mut self) {
        if self.owner && !self.complete {
            for cell in self.cells.values() {
                if let Ok(mut v) = cell.value.try_write() {
                    v.take();
                }
                if let Ok(mut s) = cell.sliced.try_lock() {
                    s.clear();
                }
            }
        }
    }
}

impl ClassReadState {
    /// True when the references recorded so far form a cycle.
    fn has_cycle(&self) -> bool {
        let mut next: HashMap<usize, Vec<usize>> = HashMap::new();
        for (a, b) in &self.edges {
            next.entry(*a).or_default().push(*b);
        }
        // Iterative depth-first search: 0 unseen, 1 on the path, 2 done.
        let mut state: HashMap<usize, u8> = HashMap::new();
        for &start in next.keys() {
            if state.get(&start).copied().unwrap_or(0) != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            state.insert(start, 1);
            while let Some((node, i)) = stack.pop() {
                let children = next.get(&node).map(Vec::as_slice).unwrap_or(&[]);
                if i < children.len() {
                    stack.push((node, i + 1));
                    let child = children[i];
                    match state.get(&child).copied().unwrap_or(0) {
                        1 => return true,
                        0 => {
                            state.insert(child, 1);
                            stack.push((child, 0));
                        }
                        _ => {}
                    }
                } else {
                    state.insert(node, 2);
                }
            }
        }
        false
    }

    /// True while a class instance is being read.
    pub(crate) fn in_instance(&self) -> bool {
        !self.slices.is_empty()
    }

    /// False inside a class slice that announced no optional members.
    pub(crate) fn optionals_allowed(&self) -> bool {
        match self.slices.last() {
            Some(Some(s)) => s.flags & flags::HAS_OPTIONAL_MEMBERS != 0,
            _ => true,
        }
    }
}

/// How deep instances may nest while decoding (`Ice.ClassGraphDepthMax`'s default).
pub const CLASS_GRAPH_DEPTH_MAX: usize = 100;

fn unknown_factory() -> ClassFactory {
    ClassFactory { create: |_| None, compact: |_| None }
}

impl Decoder {
    fn class_state(&mut self) -> &mut ClassReadState {
        let first_id = if self.encoding().is_1_0() { 1 } else { 2 };
        let accept_cycles = self.accept_class_cycles;
        let value_factories = self.value_factories.clone();
        self.classes.get_or_insert_with(|| {
            let mut state = ClassReadState::default();
            state.value_factories = value_factories;
            state.next_id = first_id;
            state.owner = true;
            state.accept_cycles = accept_cycles;
            Box::new(state)
        })
    }

    /// Whether class graphs with cycles are accepted (Ice's `Ice.AcceptClassCycles`, off by
    /// default: a cycle is a marshal error, since reference-counted cycles are never freed
    /// unless the program breaks them).
    pub fn set_accept_class_cycles(&mut self, accept: bool) {
        self.accept_class_cycles = accept;
        if let Some(state) = self.classes.as_mut() {
            state.accept_cycles = accept;
        }
    }

    /// Registered value factories to ask first when creating instances (a communicator gives
    /// its own to the decoders it makes).
    pub fn set_value_factories(&mut self, factories: Option<Arc<ValueFactories>>) {
        if let Some(state) = self.classes.as_mut() {
            state.value_factories = factories.clone();
        }
        self.value_factories = factories;
    }

    /// Sets the factory that creates instances for references of static type `Value` (generated
    /// code passes its compilation unit's factory before reading parameters with classes).
    pub fn set_class_factory(&mut self, factory: ClassFactory) {
        self.class_state().default_factory = Some(factory);
    }

    /// Reads a reference to an instance of `T` (or of a type derived from it).
    pub fn read_class<T: ClassType>(&mut self) -> Result<Option<Class<T>>> {
        let Some(cell) = self.read_class_cell(T::FACTORY)? else { return Ok(None) };
        match cell.info.get() {
            // Already decoded: check its type now.
            Some(info) if !(info.has_part)(TypeId::of::<T>()) => {
                return Err(DecodeError::UnexpectedClass { expected: T::TYPE_ID, got: info.ice_id })
            }
            Some(_) => {}
            // Still to come (1.0, or a cycle): checked by `read_pending_values`.
            None => self.class_state().checks.push((cell.clone(), Some(TypeId::of::<T>()), T::TYPE_ID)),
        }
        Ok(Some(Class { cell, _type: PhantomData }))
    }

    /// Reads a reference to an instance of any class, creating instances with `factory`
    /// (types it does not know are sliced to the most derived type it knows).
    pub fn read_any_class(&mut self, factory: Option<ClassFactory>) -> Result<Option<AnyClass>> {
        let factory = factory.or(self.class_state().default_factory).unwrap_or_else(unknown_factory);
        let cell = self.read_class_cell(factory)?;
        Ok(cell.map(|cell| {
            self.class_state().checks.push((cell.clone(), None, "::Ice::Object"));
            Class { cell, _type: PhantomData }
        }))
    }

    fn read_class_cell(&mut self, factory: ClassFactory) -> Result<Option<Arc<ClassCell>>> {
        let cell = self.read_class_cell_inner(factory)?;
        if let Some(cell) = &cell {
            let state = self.class_state();
            if let Some(&from) = state.stack.last() {
                state.edges.push((from, cell.key()));
            }
        }
        Ok(cell)
    }

    fn read_class_cell_inner(&mut self, factory: ClassFactory) -> Result<Option<Arc<ClassCell>>> {
        if self.encoding().is_1_0() {
            let id = self.read_i32()?;
            if id == 0 {
                return Ok(None);
            }
            if id > 0 {
                return Err(DecodeError::Malformed("a 1.0 class reference must be negative"));
            }
            let id = id.checked_neg().ok_or(DecodeError::Malformed("class id out of range"))?;
            let state = self.class_state();
            state.factories.entry(id).or_insert(factory);
            let depth = state.depth;
            state.ref_depths.entry(id).or_insert(depth);
            let cell = state.cells.entry(id).or_insert_with(ClassCell::empty).clone();
            return Ok(Some(cell));
        }
        // 1.1 inside a sliced slice with an indirection table: an index into it.
        let in_table =
            matches!(self.class_state().slices.last(), Some(Some(s)) if s.flags & flags::HAS_INDIRECTION_TABLE != 0);
        if in_table {
            self.read_pending_table()?;
            let index = self.read_size()?;
            if index == 0 {
                return Ok(None);
            }
            let Some(Some(slice)) = self.class_state().slices.last() else { unreachable!("checked above") };
            return slice
                .table
                .get(index - 1)
                .cloned()
                .map(Some)
                .ok_or(DecodeError::Malformed("indirection table index out of range"));
        }
        self.read_instance(factory)
    }

    /// 1.1: `0` (null), a back-reference, or `1` and an inline instance.
    fn read_instance(&mut self, factory: ClassFactory) -> Result<Option<Arc<ClassCell>>> {
        let n = self.read_size()?;
        match n {
            0 => Ok(None),
            1 => {
                let state = self.class_state();
                let id = state.next_id;
                state.next_id += 1;
                let cell = ClassCell::empty();
                state.cells.insert(id, cell.clone());
                self.read_instance_body(&cell, factory)?;
                Ok(Some(cell))
            }
            id => {
                let id = i32::try_from(id).map_err(|_| DecodeError::Malformed("class id out of range"))?;
                self.class_state()
                    .cells
                    .get(&id)
                    .cloned()
                    .map(Some)
                    .ok_or(DecodeError::Malformed("back-reference to an unknown class instance"))
            }
        }
    }

    /// Reads an instance's slices into `cell`: skips slices of unknown types (when they have
    /// sizes) until one `factory` knows, creates it and lets it read the rest.
    fn read_instance_body(&mut self, cell: &Arc<ClassCell>, factory: ClassFactory) -> Result<()> {
        {
            let state = self.class_state();
            state.depth += 1;
            if state.depth > CLASS_GRAPH_DEPTH_MAX {
                return Err(DecodeError::Malformed("class graph deeper than Ice.ClassGraphDepthMax (100)"));
            }
            state.slices.push(None);
            state.stack.push(cell.key());
            state.instance_factories.push(factory);
        }
        let result = self.read_instance_slices(cell, factory);
        let state = self.class_state();
        state.slices.pop();
        state.stack.pop();
        state.instance_factories.pop();
        state.depth -= 1;
        result
    }

    fn read_instance_slices(&mut self, cell: &Arc<ClassCell>, factory: ClassFactory) -> Result<()> {
        let mut most_derived: Option<String> = None;
        // Slices of unknown types, kept in case the instance's type preserves them (1.1).
        let mut skipped: Vec<SliceInfo> = Vec::new();
        loop {
            let header = self.read_class_slice_header(true, &factory)?;
            let type_id = header.type_id.clone().unwrap_or_default();
            if most_derived.is_none() {
                most_derived = Some(type_id.clone());
            }
            if type_id == "::Ice::Object" && self.encoding().is_1_0() {
                // 1.0: every slice was unknown.
                self.skip_class_slice(header)?;
                let value = Box::new(UnknownSlicedValue { unknown_type_id: most_derived.unwrap_or_default() });
                cell.fill(value);
                return Ok(());
            }
            let registered = self.class_state().value_factories.as_ref().and_then(|f| f.create(&type_id));
            if let Some(mut value) = registered.or_else(|| (factory.create)(&type_id)) {
                self.class_state().first = Some(header);
                let result = value.decode_slices(self);
                self.class_state().first = None;
                result?;
                if self.encoding().is_1_0() {
                    self.read_object_slice_1_0()?;
                }
                if value.preserves_slices() && !skipped.is_empty() {
                    *cell.sliced.lock().unwrap_or_else(|p| p.into_inner()) = skipped;
                }
                cell.fill(value);
                return Ok(());
            }
            let last = header.flags & flags::IS_LAST_SLICE != 0;
            let Some(end) = header.end else {
                return Err(DecodeError::UnknownSliceWithoutSize { type_id });
            };
            if !self.encoding().is_1_0() {
                let has_optionals = header.flags & flags::HAS_OPTIONAL_MEMBERS != 0;
                // The optional end marker is not kept: it is written again with the slice.
                let members_end = if has_optionals { end.saturating_sub(1).max(header.start) } else { end };
                skipped.push(SliceInfo {
                    type_id: type_id.clone(),
                    compact_id: header.compact_id,
                    bytes: self.buffer().slice(header.start..members_end),
                    instances: header.table.clone(),
                    has_optional_members: has_optionals,
                    is_last_slice: last,
                });
            }
            self.skip_class_slice(header)?;
            if last {
                let value = Box::new(UnknownSlicedValue { unknown_type_id: most_derived.unwrap_or_default() });
                if !skipped.is_empty() {
                    *cell.sliced.lock().unwrap_or_else(|p| p.into_inner()) = skipped;
                }
                cell.fill(value);
                return Ok(());
            }
        }
    }

    fn read_object_slice_1_0(&mut self) -> Result<()> {
        let header = self.read_class_slice_header(false, &unknown_factory())?;
        if header.type_id.as_deref() != Some("::Ice::Object") {
            return Err(DecodeError::Malformed("a 1.0 class instance must end with the ::Ice::Object slice"));
        }
        let facets = self.read_size()?;
        if facets != 0 {
            return Err(DecodeError::Malformed("class instances with facets are not supported"));
        }
        Ok(())
    }

    /// Reads a slice header; in 1.1 reads the indirection table right away (it follows the
    /// slice, and the members refer to it) and comes back to the members.
    fn read_class_slice_header(&mut self, first: bool, factory: &ClassFactory) -> Result<ReadSlice> {
        if self.encoding().is_1_0() {
            let is_index = self.read_bool()?;
            let type_id = if is_index {
                let index = self.read_size()?;
                self.type_id_at(index)?
            } else {
                self.new_type_id()?
            };
            let size = self.read_i32()?;
            if size < 4 || (size as usize - 4) > self.remaining() {
                return Err(DecodeError::BadSliceSize(size));
            }
            let start = self.position();
            let end = start + size as usize - 4;
            return Ok(ReadSlice {
                flags: flags::HAS_SLICE_SIZE,
                type_id: Some(type_id),
                end: Some(end),
                start,
                ..Default::default()
            });
        }
        let f = self.read_u8()?;
        let mut compact_id = None;
        let type_id = match f & flags::TYPE_ID_MASK {
            flags::TYPE_ID_STRING => Some(self.new_type_id()?),
            flags::TYPE_ID_INDEX => {
                let index = self.read_size()?;
                Some(self.type_id_at(index)?)
            }
            flags::TYPE_ID_COMPACT => {
                let compact = self.read_size()?;
                let compact = i32::try_from(compact).map_err(|_| DecodeError::Malformed("compact id out of range"))?;
                compact_id = Some(compact);
                Some((factory.compact)(compact).map(str::to_string).unwrap_or_else(|| compact.to_string()))
            }
            _ if first => return Err(DecodeError::Malformed("the first slice of a class instance has no type id")),
            _ => None,
        };
        let end = if f & flags::HAS_SLICE_SIZE != 0 {
            let size = self.read_i32()?;
            if size < 4 || (size as usize - 4) > self.remaining() {
                return Err(DecodeError::BadSliceSize(size));
            }
            Some(self.position() + size as usize - 4)
        } else {
            None
        };
        let start = self.position();
        let mut slice = ReadSlice { flags: f, type_id, end, start, compact_id, ..Default::default() };
        if f & flags::HAS_INDIRECTION_TABLE != 0 {
            let Some(end) = end else {
                return Err(DecodeError::Malformed("an indirection table needs a sliced slice"));
            };
            let (table, after) = self.read_indirection_table(end, *factory)?;
            slice.after_table = Some(after);
            slice.table = table;
        }
        Ok(slice)
    }

    /// Reads the indirection table that starts at `end` (the end of a slice's members) and
    /// comes back to the current position. Returns the table and where it ends.
    fn read_indirection_table(&mut self, end: usize, factory: ClassFactory) -> Result<(Vec<Arc<ClassCell>>, usize)> {
        let members = self.position();
        self.seek(end)?;
        let n = self.read_seq_len(1)?;
        let mut table = Vec::with_capacity(n);
        self.class_state().slices.push(None);
        let result = (|| {
            for _ in 0..n {
                match self.read_instance(factory)? {
                    Some(cell) => {
                        // The instance whose slice this table belongs to refers to the entry
                        // (kept slices of unknown types included).
                        let state = self.class_state();
                        if let Some(&from) = state.stack.last() {
                            state.edges.push((from, cell.key()));
                        }
                        table.push(cell)
                    }
                    None => return Err(DecodeError::Malformed("null entry in an indirection table")),
                }
            }
            Ok(())
        })();
        self.class_state().slices.pop();
        result?;
        let after = self.position();
        self.seek(members)?;
        Ok((table, after))
    }

    /// An exception slice with an indirection table (sliced format): the slice's class members
    /// refer to it. The table is read when first needed, so that the generated code reading the
    /// exception has set the class factory by then.
    pub(crate) fn open_exception_table(&mut self, slice_flags: u8, end: usize) {
        let slice = ReadSlice { flags: slice_flags, end: Some(end), table_at: Some(end), ..Default::default() };
        self.class_state().slices.push(Some(slice));
    }

    /// Reads the table of the innermost slice if it was left for later.
    fn read_pending_table(&mut self) -> Result<()> {
        let pending = match self.class_state().slices.last_mut() {
            Some(Some(slice)) => slice.table_at.take(),
            _ => None,
        };
        if let Some(end) = pending {
            let factory = self.class_state().default_factory.unwrap_or_else(unknown_factory);
            let (table, after) = self.read_indirection_table(end, factory)?;
            if let Some(Some(slice)) = self.class_state().slices.last_mut() {
                slice.table = table;
                slice.after_table = Some(after);
            }
        }
        Ok(())
    }

    /// Ends an exception slice opened with [`Decoder::open_exception_table`]: reads its table
    /// if nobody did, and returns where the table ends and the table.
    pub(crate) fn close_exception_table(&mut self) -> Result<(usize, Vec<Arc<ClassCell>>)> {
        self.read_pending_table()?;
        let slice = self.class_state().slices.pop().flatten();
        match slice {
            Some(ReadSlice { after_table: Some(after), table, .. }) => Ok((after, table)),
            _ => Err(DecodeError::Malformed("no exception slice table")),
        }
    }

    fn new_type_id(&mut self) -> Result<String> {
        let id = self.read_string()?;
        self.class_state().type_ids.push(id.clone());
        Ok(id)
    }

    fn type_id_at(&mut self, index: usize) -> Result<String> {
        let ids = &self.class_state().type_ids;
        index.checked_sub(1).and_then(|i| ids.get(i)).cloned().ok_or(DecodeError::Malformed("unknown type id index"))
    }

    fn skip_class_slice(&mut self, slice: ReadSlice) -> Result<()> {
        let end = slice.after_table.or(slice.end).ok_or(DecodeError::Malformed("slice without size"))?;
        self.seek(end)
    }

    /// Starts reading one slice of an instance (the first one's header was already read by
    /// the runtime to pick the type). Returns the slice's type id when the wire carries one.
    pub fn start_class_slice(&mut self) -> Result<Option<String>> {
        let header = match self.class_state().first.take() {
            Some(h) => h,
            None => {
                // The instances in this slice's indirection table can be of any type the
                // instance's own factory knows, as in its first slice.
                let state = self.class_state();
                let factory =
                    state.instance_factories.last().copied().or(state.default_factory).unwrap_or_else(unknown_factory);
                self.read_class_slice_header(false, &factory)?
            }
        };
        let type_id = header.type_id.clone();
        if let Some(slot) = self.class_state().slices.last_mut() {
            *slot = Some(header);
        }
        Ok(type_id)
    }

    /// Ends the current slice: skips optional members nobody read, checks a sized slice's
    /// end and moves past its indirection table.
    pub fn end_class_slice(&mut self) -> Result<()> {
        let slice = self.class_state().slices.last_mut().and_then(Option::take);
        let Some(slice) = slice else { return Err(DecodeError::Malformed("no open class slice")) };
        if slice.flags & flags::HAS_OPTIONAL_MEMBERS != 0 && !self.encoding().is_1_0() {
            // Unread optional members up to the end marker, which must be there.
            loop {
                let v = self.read_u8()?;
                if v == super::OPTIONAL_END_MARKER {
                    break;
                }
                if v >> 3 == 30 {
                    self.read_size()?;
                }
                self.skip_optional(super::OptionalFormat::from_bits(v))?;
            }
        }
        if let Some(end) = slice.end {
            if self.position() != end {
                return Err(DecodeError::Malformed("class slice does not end at its size"));
            }
        }
        if let Some(after) = slice.after_table {
            self.seek(after)?;
        }
        Ok(())
    }

    /// Ends the classes of an encapsulation: encoding 1.0 reads the pending instances; then
    /// every reference read is checked against its static type. Generated code calls it after
    /// the parameters (or exception) of operations whose signature uses classes.
    pub fn read_pending_values(&mut self) -> Result<()> {
        if self.classes.is_none() {
            if self.encoding().is_1_0() {
                // No reference was read, but the (empty) list of pending values is there.
                let n = self.read_size()?;
                if n != 0 {
                    return Err(DecodeError::Malformed("pending class instances nobody refers to"));
                }
            }
            return Ok(());
        }
        if self.encoding().is_1_0() {
            loop {
                let n = self.read_seq_len(4)?;
                if n == 0 {
                    break;
                }
                for _ in 0..n {
                    let id = self.read_i32()?;
                    let state = self.class_state();
                    // An instance only slices this program skipped refer to is read all the
                    // same (and dropped with the decoder).
                    let cell = state.cells.entry(id).or_insert_with(ClassCell::empty).clone();
                    if cell.info.get().is_some() {
                        return Err(DecodeError::Malformed("class instance sent twice"));
                    }
                    let factory =
                        state.factories.get(&id).copied().or(state.default_factory).unwrap_or_else(unknown_factory);
                    // Instances come one after another in 1.0; their depth in the graph is
                    // that of the instance that first referred to them, plus one.
                    state.depth = state.ref_depths.get(&id).copied().unwrap_or(0);
                    self.read_instance_body(&cell, factory)?;
                }
            }
        }
        self.check_class_types()
    }

    /// Checks every class reference read so far against its static type (and that every
    /// instance referred to arrived). [`Decoder::read_pending_values`] does it too; generated
    /// code calls this one for operations whose only classes are optional parameters, which
    /// encoding 1.0 leaves out without a list of pending values.
    pub fn check_class_types(&mut self) -> Result<()> {
        let Some(state) = self.classes.as_mut() else { return Ok(()) };
        state.depth = 0;
        if !state.accept_cycles && state.has_cycle() {
            return Err(DecodeError::Malformed(
                "cycle detected in a class graph (set Ice.AcceptClassCycles to accept them)",
            ));
        }
        let checks = std::mem::take(&mut state.checks);
        for (cell, type_id, name) in checks {
            let Some(info) = cell.info.get() else {
                return Err(DecodeError::Malformed("class reference to an instance that never came"));
            };
            if let Some(t) = type_id {
                if !(info.has_part)(t) {
                    return Err(DecodeError::UnexpectedClass { expected: name, got: info.ice_id });
                }
            }
        }
        if let Some(state) = self.classes.as_mut() {
            state.complete = true;
        }
        Ok(())
    }
}
