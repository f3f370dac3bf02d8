//! Reading class instances: the decoder's per-encapsulation class state, instance and type
//! ids, factories, unknown slices kept or skipped, the depth limit and the cycle check.

use std::any::TypeId;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use super::{
    flags, AnyClass, Class, ClassCell, ClassFactory, ClassType, SliceInfo, UnknownSlicedValue, ValueFactories,
};
use crate::encoding::error::{DecodeError, Result};
use crate::encoding::{Decode, Decoder};

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
    /// How deep instances may nest (`Ice.ClassGraphDepthMax`).
    depth_max: usize,
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
            depth_max: self.depth_max,
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
        let depth_max = self.class_graph_depth_max;
        let value_factories = self.value_factories.clone();
        self.classes.get_or_insert_with(|| {
            let mut state = ClassReadState::default();
            state.value_factories = value_factories;
            state.next_id = first_id;
            state.owner = true;
            state.accept_cycles = accept_cycles;
            state.depth_max = depth_max;
            Box::new(state)
        })
    }

    /// How deep class instances may nest in what this decoder reads (Ice's
    /// `Ice.ClassGraphDepthMax`; [`CLASS_GRAPH_DEPTH_MAX`] by default, as in Ice 3.7): a
    /// deeper graph is a marshal error, which keeps a hostile peer from exhausting the stack.
    pub fn set_class_graph_depth_max(&mut self, max: usize) {
        self.class_graph_depth_max = max;
        if let Some(state) = self.classes.as_mut() {
            state.depth_max = max;
        }
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
            if state.depth > state.depth_max {
                return Err(DecodeError::Malformed("class graph deeper than Ice.ClassGraphDepthMax"));
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
                if v == crate::encoding::OPTIONAL_END_MARKER {
                    break;
                }
                if v >> 3 == 30 {
                    self.read_size()?;
                }
                self.skip_optional(crate::encoding::OptionalFormat::from_bits(v))?;
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
