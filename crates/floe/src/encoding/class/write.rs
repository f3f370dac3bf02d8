//! Writing class instances: the encoder's per-encapsulation class state, instance ids and
//! back-references, slices with their sizes and indirection tables, and 1.0's pending values.

use std::collections::HashMap;
use std::sync::Arc;

use super::{flags, Class, ClassCell, ClassValue, SliceInfo, UnknownSlicedValue};
use crate::encoding::{Encode, Encoder};

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
        let sliced = self.format() == crate::encoding::FormatType::Sliced;
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
            if self.format() == crate::encoding::FormatType::Sliced && !self.encoding().is_1_0() && !slices.is_empty() {
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
        let sliced = self.format() == crate::encoding::FormatType::Sliced;
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
            self.write_u8(crate::encoding::OPTIONAL_END_MARKER);
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

impl Encoder {
    /// Writes the kept slices of an exception's unknown more derived types before its own
    /// slices (sliced format only; in the compact format the exception goes out as its own
    /// type, as with Ice).
    pub fn write_preserved_exception_slices(&mut self, slices: &[SliceInfo]) {
        if self.encoding().is_1_0() || self.format() != crate::encoding::FormatType::Sliced {
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

impl<T: ?Sized> Encode for Option<Class<T>> {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_class(self.as_ref());
    }
}
