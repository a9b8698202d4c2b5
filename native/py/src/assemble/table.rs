//! The assembler's per-trace, per-span bookkeeping. `assemble/assembler.py` keeps the
//! public API, the bounds' errors and the calls to its consumer; this table keeps the state
//! and does every per-span loop.
//!
//! What it holds per trace: the `SpanRecord`s (the objects, handed back as they came) with
//! the few fields the bookkeeping reads, taken once from the tuple when the span is added
//! (ids, parent, whether it is an `invoke_agent`, start, end, size); the root candidates'
//! arrival times; content records waiting for their spans; bytes. Per table: the traces in
//! arrival order (eviction and `close_all` take the oldest first), an index of traces by
//! when each is next due (a completion scan touches only what is due: the Python scan
//! walked every trace in flight on every tick), and the decision cache.
//!
//! The table never calls the consumer: what a call did (spans accepted, late spans, runs
//! closed) comes back as data, in the order it happened, and the assembler hands it on.
//! Records are read whole before any state changes, so a record that cannot be read leaves
//! the table as it was.

use faultgate_core::assemble::decided::{DecidedRun, DecisionCache, Kind};
use faultgate_core::model::ids::{IdMap, IdSet, SpanId, TraceId};
use super::ids::{IdToPy, Time};
use super::guarded;
use super::partition::{partition, Partition};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyFrozenSet, PyList, PyString, PyTuple};
use std::collections::{BTreeMap, BTreeSet};

// SpanRecord's fields by position (model/records.py; tests/assemble holds these to _fields).
pub const TRACE_ID: usize = 0;
pub const SPAN_ID: usize = 1;
pub const PARENT_ID: usize = 2;
pub const START_NS: usize = 4;
pub const END_NS: usize = 5;
pub const OPERATION: usize = 8;
pub const SIZE: usize = 17;
const INVOKE_AGENT: &str = "invoke_agent";

// What `due` says a due trace needs (`Assembler.advance` maps these to completions).
const MAX_DURATION: u8 = 0;
const GRACE: u8 = 1;
const ORPHAN: u8 = 2;

pub struct Span {
    pub obj: Py<PyAny>,
    pub id: SpanId,
    pub parent: Option<SpanId>, // None when the record's parent_id is None or ""
    pub agent: bool,
    pub start: Time,
    pub end: Time,
    pub size: i64,
}

struct Content {
    obj: Py<PyAny>,
    size: i64,
}

pub struct Trace {
    id: TraceId,
    tid: Py<PyAny>, // the trace id string, as the trace's first record carried it
    seq: u64,
    first_ns: i128,
    last_ns: i128,
    slots: Vec<Option<Span>>, // arrival order; a span that left is a hole until compaction
    index: IdMap<SpanId, u32>,
    live: usize,
    roots: Vec<(u32, i128)>, // root candidates still waiting: (slot, arrival)
    bytes: i128,
    contents: IdMap<SpanId, Vec<Content>>,
    content_count: usize,
    due: Option<i128>, // this trace's key in the table's due index
}

impl Trace {
    pub fn live_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().enumerate().filter(|(_, s)| s.is_some()).map(|(i, _)| i as u32)
    }

    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub fn span(&self, slot: u32) -> &Span {
        self.slots[slot as usize].as_ref().expect("a live slot")
    }

    pub fn slot_of(&self, id: &SpanId) -> Option<u32> {
        self.index.get(id).copied()
    }

    /// When ``advance`` next has something to do with this trace: its maximum duration, its
    /// first root's grace, or (no root) its idle time.
    fn due_at(&self, grace: i128, longest: i128, idle: i128) -> i128 {
        let waiting = match self.roots.iter().map(|(_, at)| *at).min() {
            Some(at) => at.saturating_add(grace),
            None => self.last_ns.saturating_add(idle),
        };
        self.first_ns.saturating_add(longest).min(waiting)
    }

    /// Drops the holes once they outnumber the spans, so a trace whose runs leave one by one
    /// never walks many more slots than it has spans.
    fn compact(&mut self) {
        if self.slots.len() <= 2 * self.live.max(8) {
            return;
        }
        let mut moved: Vec<u32> = vec![u32::MAX; self.slots.len()];
        let old = std::mem::take(&mut self.slots);
        for (i, s) in old.into_iter().enumerate() {
            if let Some(s) = s {
                moved[i] = self.slots.len() as u32;
                self.slots.push(Some(s));
            }
        }
        for v in self.index.values_mut() {
            *v = moved[*v as usize];
        }
        for r in self.roots.iter_mut() {
            r.0 = moved[r.0 as usize];
        }
    }
}

/// One record as read from its tuple.
struct Read<'py> {
    obj: Bound<'py, PyAny>,
    tid_obj: Bound<'py, PyAny>,
    tid: TraceId,
    sid: SpanId,
    parent: Option<SpanId>,
    agent: bool,
    start: Time,
    end: Time,
    size: i64,
}

impl Read<'_> {
    fn root_candidate(&self) -> bool {
        self.agent || self.parent.is_none()
    }
}

fn text<'a>(v: &'a Bound<'_, PyAny>, what: &str) -> PyResult<&'a str> {
    match v.downcast::<PyString>() {
        Ok(s) => s.to_str(),
        Err(_) => Err(PyTypeError::new_err(format!("a record's {what} must be a str, not {}", v.get_type().name()?))),
    }
}

fn record<'a, 'py>(obj: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyTuple>> {
    match obj.downcast::<PyTuple>() {
        Ok(t) if t.len() > SIZE => Ok(t),
        _ => Err(PyTypeError::new_err(format!("the assembler takes SpanRecords, not {}", obj.get_type().name()?))),
    }
}

fn size_of(t: &Bound<'_, PyTuple>) -> PyResult<i64> {
    t.get_item(SIZE)?.extract::<i64>().map_err(|_| PyTypeError::new_err("a record's size must be an int"))
}

/// A record's trace id: the previous record's when it is the same string object (a
/// request's records share their trace's id string), else parsed.
fn trace_id_of(tid_obj: &Bound<'_, PyAny>, previous: Option<(&Bound<'_, PyAny>, &TraceId)>) -> PyResult<TraceId> {
    match previous {
        Some((obj, id)) if obj.is(tid_obj) => Ok(id.clone()),
        _ => Ok(TraceId::parse(text(tid_obj, "trace_id")?)),
    }
}

fn read<'py>(obj: &Bound<'py, PyAny>, previous: Option<&Read<'py>>) -> PyResult<Read<'py>> {
    let t = record(obj)?;
    let tid_obj = t.get_item(TRACE_ID)?;
    let tid = trace_id_of(&tid_obj, previous.map(|r| (&r.tid_obj, &r.tid)))?;
    let sid = SpanId::parse(text(&t.get_item(SPAN_ID)?, "span_id")?);
    let p = t.get_item(PARENT_ID)?;
    let parent = if p.is_none() {
        None
    } else {
        Some(text(&p, "parent_id")?).filter(|p| !p.is_empty()).map(SpanId::parse)
    };
    let op = t.get_item(OPERATION)?;
    let agent = match op.downcast::<PyString>() {
        Ok(s) => s.to_str()? == INVOKE_AGENT,
        Err(_) => false,
    };
    Ok(Read {
        start: Time::read(&t.get_item(START_NS)?),
        end: Time::read(&t.get_item(END_NS)?),
        size: size_of(t)?,
        obj: obj.clone(),
        tid_obj,
        tid,
        sid,
        parent,
        agent,
    })
}

fn read_all<'py>(batch: &Bound<'py, PyList>) -> PyResult<Vec<Read<'py>>> {
    let mut out: Vec<Read<'py>> = Vec::with_capacity(batch.len());
    for o in batch.iter() {
        let r = read(&o, out.last())?;
        out.push(r);
    }
    Ok(out)
}

fn trace_ids(ids: &Bound<'_, PyAny>) -> PyResult<Vec<TraceId>> {
    ids.try_iter()?.map(|t| Ok(TraceId::parse(text(&t?, "trace id")?))).collect()
}

fn span_id_of<'py>(py: Python<'py>, obj: &Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
    obj.bind(py).downcast::<PyTuple>()?.get_item(SPAN_ID)
}

/// The runs a trace gave up, as ``take`` found them (slots into the trace).
struct Taken {
    root: Option<u32>, // None: the orphan run of what no root claimed
    members: Vec<u32>,
    arrived: i128,
    ordered: bool, // members sorted in Run.spans' order
}

#[pyclass(module = "faultgate_stream._native")]
pub struct TraceTable {
    traces: Vec<Option<Trace>>,
    free: Vec<u32>,
    by_id: IdMap<TraceId, u32>,
    order: BTreeMap<u64, u32>,       // seq -> slot: the traces in arrival order
    due: BTreeSet<(i128, u64, u32)>, // (due at, seq, slot)
    next_seq: u64,
    grace: i128,
    longest: i128,
    idle: i128,
    max_spans: usize,
    spans: usize,
    bytes: i128,
    decided: DecisionCache,
    /// content records merged into their spans, and those whose span never came
    #[pyo3(get)]
    contents_joined: u64,
    #[pyo3(get)]
    contents_unjoined: u64,
    /// partitions computed, and the steps their walks took (tests hold these linear)
    #[pyo3(get)]
    partitions: u64,
    #[pyo3(get)]
    partition_steps: u64,
    /// traces a completion scan looked at (``due``): only those that were due
    #[pyo3(get)]
    scanned: u64,
}

impl TraceTable {
    fn trace(&self, slot: u32) -> &Trace {
        self.traces[slot as usize].as_ref().expect("a live trace")
    }

    fn trace_mut(&mut self, slot: u32) -> &mut Trace {
        self.traces[slot as usize].as_mut().expect("a live trace")
    }

    fn new_trace(&mut self, id: TraceId, tid: Py<PyAny>, now: i128) -> u32 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let t = Trace {
            id: id.clone(),
            tid,
            seq,
            first_ns: now,
            last_ns: now,
            slots: Vec::new(),
            index: IdMap::with_capacity_and_hasher(16, Default::default()),
            live: 0,
            roots: Vec::new(),
            bytes: 0,
            contents: IdMap::default(),
            content_count: 0,
            due: None,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.traces[s as usize] = Some(t);
                s
            }
            None => {
                self.traces.push(Some(t));
                (self.traces.len() - 1) as u32
            }
        };
        self.by_id.insert(id, slot);
        self.order.insert(seq, slot);
        slot
    }

    fn remove_trace(&mut self, slot: u32) -> Trace {
        let t = self.traces[slot as usize].take().expect("a live trace");
        if let Some(at) = t.due {
            self.due.remove(&(at, t.seq, slot));
        }
        self.order.remove(&t.seq);
        self.by_id.remove(&t.id);
        self.free.push(slot);
        t
    }

    /// Puts the trace in the due index at its current deadline (a slot no longer in use is
    /// left alone).
    fn reindex(&mut self, slot: u32) {
        let (grace, longest, idle) = (self.grace, self.longest, self.idle);
        let Some(t) = self.traces[slot as usize].as_mut() else { return };
        let at = t.due_at(grace, longest, idle);
        if t.due == Some(at) {
            return;
        }
        let seq = t.seq;
        if let Some(old) = t.due.replace(at) {
            self.due.remove(&(old, seq, slot));
        }
        self.due.insert((at, seq, slot));
    }

    fn slot(&self, tid: &Bound<'_, PyAny>) -> PyResult<u32> {
        let id = TraceId::parse(text(tid, "trace id")?);
        self.by_id.get(&id).copied().ok_or_else(|| PyKeyError::new_err(tid.clone().unbind()))
    }

    /// Removes the runs of a trace: all of them (``due_before`` None), or those whose root
    /// arrived by that time; what no root claimed goes with an all-runs close, as one orphan
    /// run. Returns them as `Assembler` builds its `Run`s from: ``(root span id, members,
    /// root, root arrival, merges, outside, ordered)`` each, ``root`` None for the orphan
    /// run, ``merges`` the content records to merge into members (by index) or None,
    /// ``outside`` the ids of spans above every agent that leave with this run, or None,
    /// ``ordered`` whether the members are in ``Run.spans``' order already.
    fn take_runs<'py>(&mut self, py: Python<'py>, slot: u32, due_before: Option<i128>, remember: bool)
        -> PyResult<Bound<'py, PyList>> {
        let mut steps = 0;
        let p: Partition = partition(py, self.trace(slot), &mut steps)?;
        self.partitions += 1;
        self.partition_steps += steps;
        let t = self.traces[slot as usize].as_mut().expect("a live trace");
        if due_before.is_some() {
            // candidates that are not run roots now (a nested agent, a span above every
            // agent) never will be: forget their arrival so the scan does not partition this
            // trace again on every tick until its real root is due
            t.roots.retain(|(s, _)| p.runs.iter().any(|(r, _)| r == s));
        }
        let mut taken: Vec<Taken> = Vec::new();
        for (root, members) in &p.runs {
            let arrived = t.roots.iter().find(|(s, _)| s == root).map_or(0, |(_, at)| *at);
            if let Some(before) = due_before {
                if arrived == 0 || arrived > before {
                    continue;
                }
            }
            taken.push(Taken { root: Some(*root), members: members.clone(), arrived, ordered: false });
        }
        let closing_all = due_before.is_none();
        if closing_all && (!p.unattached.is_empty() || (!p.outside.is_empty() && taken.is_empty())) {
            let members = if p.unattached.is_empty() { p.outside.clone() } else { p.unattached.clone() };
            taken.push(Taken { root: None, members, arrived: 0, ordered: false });
        }
        let runs_taken = taken.iter().filter(|r| r.root.is_some()).count();
        let outside_leaves = !taken.is_empty()
            && !p.outside.is_empty()
            && (closing_all || (runs_taken == p.runs.len() && p.unattached.is_empty()));
        // members in (start, span id) order, the order of Run.spans, when every start is an
        // int: then Run need not sort them again (``ordered``; a sort keyed in Python was
        // ~2.5 µs a run). Span ids compare as their text does: a hex id as the number it
        // spells, others byte by byte (UTF-8 keeps code point order).
        for run in taken.iter_mut() {
            let slots = &t.slots;
            let span = |s: u32| slots[s as usize].as_ref().expect("a member");
            if run.members.iter().all(|s| span(*s).start.int().is_some()) {
                run.members.sort_by(|a, b| {
                    let (x, y) = (span(*a), span(*b));
                    x.start.int().cmp(&y.start.int()).then_with(|| x.id.cmp(&y.id))
                });
                run.ordered = true;
            }
        }
        let out = PyList::empty(py);
        let last = taken.len();
        for (n, run) in taken.iter().enumerate() {
            let members = PyList::empty(py);
            let merges = PyList::empty(py);
            for (i, s) in run.members.iter().enumerate() {
                let span = t.slots[*s as usize].as_ref().expect("a member");
                members.append(span.obj.bind(py))?;
                // content records join their spans as the run leaves
                if t.contents.is_empty() {
                    continue;
                }
                if let Some(held) = t.contents.remove(&span.id) {
                    if held.is_empty() {
                        continue;
                    }
                    self.contents_joined += held.len() as u64;
                    t.content_count -= held.len();
                    let gone: i128 = held.iter().map(|c| i128::from(c.size)).sum();
                    t.bytes -= gone;
                    self.bytes -= gone;
                    let objs = PyList::new(py, held.iter().map(|c| c.obj.bind(py)))?;
                    merges.append((i, objs))?;
                }
            }
            let (root_id, root) = match run.root {
                Some(r) => {
                    let obj = &t.span(r).obj;
                    (span_id_of(py, obj)?, obj.bind(py).clone())
                }
                None => (PyString::new(py, "").into_any(), py.None().into_bound(py)),
            };
            let merges = if merges.is_empty() { py.None().into_bound(py) } else { merges.into_any() };
            let outside = if outside_leaves && n + 1 == last {
                let ids: PyResult<Vec<Bound<'py, PyAny>>> =
                    p.outside.iter().map(|s| span_id_of(py, &t.span(*s).obj)).collect();
                PyFrozenSet::new(py, ids?.iter())?.into_any()
            } else {
                py.None().into_bound(py)
            };
            out.append((root_id, members, root, run.arrived, merges, outside, run.ordered))?;
        }
        if remember {
            let runs: Vec<DecidedRun<'_>> = taken
                .iter()
                .map(|r| {
                    let root = r.root.map_or_else(SpanId::empty, |s| t.span(s).id.clone());
                    let members = r.members.iter().map(|s| (&t.span(*s).id, t.span(*s).parent.as_ref())).collect();
                    (root, members)
                })
                .collect();
            self.decided.decide(&t.id, &runs);
        }
        let mut gone: Vec<u32> = taken.iter().flat_map(|r| r.members.iter().copied()).collect();
        if outside_leaves {
            gone.extend(p.outside.iter().copied()); // no run is left that they could sit above
        }
        for s in gone {
            if let Some(span) = t.slots[s as usize].take() {
                t.index.remove(&span.id);
                t.live -= 1;
                t.bytes -= i128::from(span.size);
                self.bytes -= i128::from(span.size);
                self.spans -= 1;
            }
        }
        // roots no longer in the buffer (taken above) cannot be due again
        let slots = &t.slots;
        t.roots.retain(|(s, _)| slots[*s as usize].is_some());
        if t.live == 0 {
            // content whose span never came (or came in another request that was refused)
            self.contents_unjoined += t.content_count as u64;
            let held: i128 = t.contents.values().flatten().map(|c| i128::from(c.size)).sum();
            self.bytes -= held;
            self.remove_trace(slot);
        } else {
            t.compact();
            self.reindex(slot);
        }
        Ok(out)
    }
}

#[pymethods]
impl TraceTable {
    /// Deadlines in nanoseconds of the injected clock; the decision cache's two bounds.
    #[new]
    fn new(grace_ns: i128, longest_ns: i128, idle_ns: i128, max_spans_per_trace: usize, decision_cache: usize,
           decision_cache_bytes: i128) -> Self {
        TraceTable {
            traces: Vec::new(),
            free: Vec::new(),
            by_id: IdMap::default(),
            order: BTreeMap::new(),
            due: BTreeSet::new(),
            next_seq: 0,
            grace: grace_ns,
            longest: longest_ns,
            idle: idle_ns,
            max_spans: max_spans_per_trace,
            spans: 0,
            bytes: 0,
            decided: DecisionCache::new(decision_cache, decision_cache_bytes),
            contents_joined: 0,
            contents_unjoined: 0,
            partitions: 0,
            partition_steps: 0,
            scanned: 0,
        }
    }

    #[getter]
    fn traces(&self) -> usize {
        self.by_id.len()
    }

    #[getter]
    fn spans(&self) -> usize {
        self.spans
    }

    #[getter]
    fn bytes(&self) -> i128 {
        self.bytes
    }

    #[getter]
    fn decided_traces(&self) -> usize {
        self.decided.len()
    }

    #[getter]
    fn decided_bytes(&self) -> i128 {
        self.decided.bytes
    }

    #[getter]
    fn decided_evictions(&self) -> u64 {
        self.decided.evictions
    }

    /// ``(new traces, bytes)`` a batch of records would add: what the bounds are checked on.
    fn room(&self, batch: &Bound<'_, PyList>) -> PyResult<(usize, i128)> {
        guarded(|| {
            let mut new: IdSet<TraceId> = IdSet::default();
            let mut bytes: i128 = 0;
            let mut previous: Option<(Bound<'_, PyAny>, TraceId)> = None;
            for obj in batch.iter() {
                let t = record(&obj)?;
                let tid_obj = t.get_item(TRACE_ID)?;
                if !previous.as_ref().is_some_and(|(o, _)| o.is(&tid_obj)) {
                    let tid = trace_id_of(&tid_obj, None)?;
                    if !self.by_id.contains_key(&tid) {
                        new.insert(tid.clone());
                    }
                    previous = Some((tid_obj, tid));
                }
                bytes += i128::from(size_of(t)?);
            }
            Ok((new.len(), bytes))
        })
    }

    /// Takes a batch of spans at ``now``. Returns ``(accepted, duplicates, late, cap hits,
    /// roots, new traces, events, decided duplicates, closed roots)``: ``roots`` and ``new
    /// traces`` whether any arrived; ``events`` in the order they happened, each
    /// ``(0, spans accepted, None)``, ``(1, late span, root span id of its run)`` or ``(2,
    /// trace id, runs)`` for a trace closed at ``max_spans_per_trace`` (``take``'s runs);
    /// ``decided duplicates`` ``(span, root span id)`` of retried decided spans and ``closed
    /// roots`` ``(span, root span id)`` of root candidates whose run the batch closed, each
    /// a list or None.
    fn add<'py>(&mut self, py: Python<'py>, batch: &Bound<'py, PyList>, now: i128) -> PyResult<Bound<'py, PyTuple>> {
        guarded(|| {
            let reads = read_all(batch)?;
            let (mut accepted, mut duplicates, mut late, mut cap_hits) = (0usize, 0usize, 0usize, 0usize);
            let (mut roots, mut new_traces) = (false, false);
            let events = PyList::empty(py);
            let mut segment = PyList::empty(py);
            let mut dups: Vec<(Bound<'py, PyAny>, SpanId)> = Vec::new();
            let mut dup_ids: IdSet<&SpanId> = IdSet::default();
            let mut late_ids: IdSet<&SpanId> = IdSet::default();
            let mut touched: Vec<u32> = Vec::new();
            let mut last: Option<(&TraceId, u32)> = None; // consecutive spans of one trace skip the lookup
            for r in &reads {
                if self.decided.contains(&r.tid) {
                    if let Some(root) = self.decided.lookup(&r.tid, &r.sid, Kind::Span) {
                        duplicates += 1;
                        dups.push((r.obj.clone(), root));
                        dup_ids.insert(&r.sid);
                        continue;
                    }
                    let mut root = r.parent.as_ref().and_then(|p| self.decided.lookup(&r.tid, p, Kind::Span));
                    if root.is_none() {
                        root = self.decided.lookup(&r.tid, &r.sid, Kind::Parent);
                    }
                    if let Some(root) = root {
                        self.decided.late(&r.tid, r.sid.clone(), root.clone());
                        late += 1;
                        late_ids.insert(&r.sid);
                        if !segment.is_empty() {
                            events.append((0, std::mem::replace(&mut segment, PyList::empty(py)), py.None()))?;
                        }
                        events.append((1, &r.obj, root.to_py(py)))?;
                        continue;
                    }
                }
                let slot = match last {
                    Some((tid, slot)) if *tid == r.tid && self.traces[slot as usize].is_some() => slot,
                    _ => match self.by_id.get(&r.tid) {
                        Some(s) => *s,
                        None => {
                            new_traces = true;
                            self.new_trace(r.tid.clone(), r.tid_obj.clone().unbind(), now)
                        }
                    },
                };
                last = Some((&r.tid, slot));
                let t = self.traces[slot as usize].as_mut().expect("a live trace");
                if t.index.contains_key(&r.sid) {
                    duplicates += 1;
                    continue;
                }
                let at = t.slots.len() as u32;
                t.slots.push(Some(Span {
                    obj: r.obj.clone().unbind(),
                    id: r.sid.clone(),
                    parent: r.parent.clone(),
                    agent: r.agent,
                    start: r.start.clone_ref(py),
                    end: r.end.clone_ref(py),
                    size: r.size,
                }));
                t.index.insert(r.sid.clone(), at);
                t.live += 1;
                t.last_ns = now;
                t.bytes += i128::from(r.size);
                self.bytes += i128::from(r.size);
                self.spans += 1;
                if r.root_candidate() {
                    t.roots.push((at, now));
                    roots = true;
                }
                accepted += 1;
                segment.append(&r.obj)?;
                if touched.last() != Some(&slot) {
                    touched.push(slot);
                }
                if t.live >= self.max_spans {
                    // the same run would hit the same bound again on retry: close it early
                    cap_hits += 1;
                    if !segment.is_empty() {
                        events.append((0, std::mem::replace(&mut segment, PyList::empty(py)), py.None()))?;
                    }
                    let tid = self.trace(slot).tid.clone_ref(py);
                    let runs = self.take_runs(py, slot, None, true)?;
                    events.append((2, tid, runs))?;
                    last = None;
                }
            }
            if !segment.is_empty() {
                events.append((0, segment, py.None()))?;
            }
            touched.sort_unstable();
            touched.dedup();
            for slot in touched {
                self.reindex(slot);
            }
            let decided_dups = if dups.is_empty() {
                py.None().into_bound(py)
            } else {
                PyList::new(py, dups.iter().map(|(o, root)| (o.clone(), root.to_py(py))))?.into_any()
            };
            let closed = if cap_hits == 0 {
                py.None().into_bound(py)
            } else {
                // root candidates of this batch whose run it closed: their verdict is out already
                let out = PyList::empty(py);
                for r in reads.iter().filter(|r| r.root_candidate()) {
                    if let Some(root) = self.decided.lookup(&r.tid, &r.sid, Kind::Span) {
                        if !late_ids.contains(&r.sid) && !dup_ids.contains(&r.sid) {
                            out.append((&r.obj, root.to_py(py)))?;
                        }
                    }
                }
                out.into_any()
            };
            PyTuple::new(py, [
                accepted.into_pyobject(py)?.into_any(),
                duplicates.into_pyobject(py)?.into_any(),
                late.into_pyobject(py)?.into_any(),
                cap_hits.into_pyobject(py)?.into_any(),
                roots.into_pyobject(py)?.to_owned().into_any(),
                new_traces.into_pyobject(py)?.to_owned().into_any(),
                events.into_any(),
                decided_dups,
                closed,
            ])
        })
    }

    /// Takes content records (GenAI log events) to merge into their spans when their run
    /// completes. Returns ``(accepted, late, duplicates, capped, new traces)``.
    fn add_contents(&mut self, py: Python<'_>, batch: &Bound<'_, PyList>, now: i128)
        -> PyResult<(usize, usize, usize, usize, bool)> {
        guarded(|| {
            let reads = read_all(batch)?;
            let (mut accepted, mut late, mut duplicates, mut capped) = (0, 0, 0, 0);
            let mut new_traces = false;
            let mut touched: Vec<u32> = Vec::new();
            for c in &reads {
                if self.decided.lookup(&c.tid, &c.sid, Kind::Span).is_some() {
                    late += 1;
                    continue;
                }
                let slot = match self.by_id.get(&c.tid) {
                    Some(s) => *s,
                    None => {
                        new_traces = true;
                        self.new_trace(c.tid.clone(), c.tid_obj.clone().unbind(), now)
                    }
                };
                touched.push(slot);
                let max_spans = self.max_spans;
                let t = self.trace_mut(slot);
                let held = t.contents.entry(c.sid.clone()).or_default();
                let mut seen = false;
                for h in held.iter() {
                    let h = h.obj.bind(py);
                    if h.is(&c.obj) || h.eq(&c.obj)? {
                        seen = true;
                        break;
                    }
                }
                if seen {
                    duplicates += 1;
                    continue;
                }
                if t.content_count >= max_spans {
                    capped += 1;
                    continue;
                }
                held.push(Content { obj: c.obj.clone().unbind(), size: c.size });
                t.content_count += 1;
                t.last_ns = now;
                t.bytes += i128::from(c.size);
                self.bytes += i128::from(c.size);
                accepted += 1;
            }
            touched.sort_unstable();
            touched.dedup();
            for slot in touched {
                self.reindex(slot);
            }
            Ok((accepted, late, duplicates, capped, new_traces))
        })
    }

    /// The traces due at ``now``, in arrival order, each ``(trace id, what is due)``: 0 its
    /// maximum duration, 1 a root's grace, 2 its idle time without a root. Only traces that
    /// are due are looked at.
    fn due<'py>(&mut self, py: Python<'py>, now: i128) -> PyResult<Vec<(Py<PyAny>, u8)>> {
        guarded(|| {
            let mut due: Vec<(u64, u32)> = self.due.range(..(now, u64::MAX, u32::MAX)).map(|(_, q, s)| (*q, *s)).collect();
            due.sort_unstable();
            self.scanned += due.len() as u64;
            let mut out = Vec::with_capacity(due.len());
            for (_, slot) in due {
                let t = self.trace(slot);
                let what = if now.saturating_sub(t.first_ns) >= self.longest {
                    MAX_DURATION
                } else if !t.roots.is_empty() {
                    GRACE
                } else {
                    ORPHAN
                };
                out.push((t.tid.clone_ref(py), what));
            }
            Ok(out)
        })
    }

    /// The earliest time a trace held is due; None when none is held.
    fn next_due(&self) -> Option<i128> {
        self.due.first().map(|(at, _, _)| *at)
    }

    /// Removes the runs of a trace (see the Rust ``take``): all of them, or with
    /// ``due_before`` those whose root arrived by then. Raises ``KeyError`` for a trace not
    /// held.
    #[pyo3(signature = (trace_id, due_before, remember = true))]
    fn take<'py>(&mut self, py: Python<'py>, trace_id: &Bound<'py, PyAny>, due_before: Option<i128>, remember: bool)
        -> PyResult<Bound<'py, PyList>> {
        guarded(|| {
            let slot = self.slot(trace_id)?;
            self.take_runs(py, slot, due_before, remember)
        })
    }

    /// Every trace's runs, oldest trace first: ``[(trace id, runs)]``.
    #[pyo3(signature = (remember = true))]
    fn take_all<'py>(&mut self, py: Python<'py>, remember: bool) -> PyResult<Vec<(Py<PyAny>, Bound<'py, PyList>)>> {
        guarded(|| {
            let slots: Vec<u32> = self.order.values().copied().collect();
            let mut out = Vec::with_capacity(slots.len());
            for slot in slots {
                let tid = self.trace(slot).tid.clone_ref(py);
                out.push((tid, self.take_runs(py, slot, None, remember)?));
            }
            Ok(out)
        })
    }

    /// The oldest trace held (the first to go when room is made), or None.
    fn oldest(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.order.values().next().map(|s| self.trace(*s).tid.clone_ref(py))
    }

    fn holds_any(&self, trace_ids_: &Bound<'_, PyAny>) -> PyResult<bool> {
        guarded(|| {
            Ok(trace_ids(trace_ids_)?.iter().any(|t| self.by_id.contains_key(t)))
        })
    }

    /// Forgets these traces without a verdict. Returns the spans dropped.
    fn drop_traces(&mut self, trace_ids_: &Bound<'_, PyAny>) -> PyResult<usize> {
        guarded(|| {
            let mut spans = 0;
            for tid in trace_ids(trace_ids_)? {
                if let Some(slot) = self.by_id.get(&tid).copied() {
                    let t = self.remove_trace(slot);
                    spans += t.live;
                    self.spans -= t.live;
                    self.bytes -= t.bytes;
                }
            }
            Ok(spans)
        })
    }

    // ------------------------------------------------------------ the decision cache, for tests
    /// "packed", "wide" or None: the form a decided trace is kept in.
    fn decided_form(&self, trace_id: &str) -> Option<&'static str> {
        self.decided.form(&TraceId::parse(trace_id))
    }

    fn decided_run_of<'py>(&self, py: Python<'py>, trace_id: &str, span_id: &str) -> Option<Bound<'py, PyString>> {
        self.decided.lookup(&TraceId::parse(trace_id), &SpanId::parse(span_id), Kind::Span).map(|r| r.to_py(py))
    }
}

impl Time {
    pub fn clone_ref(&self, py: Python<'_>) -> Time {
        match self {
            Time::Int(i) => Time::Int(*i),
            Time::Obj(o) => Time::Obj(o.clone_ref(py)),
        }
    }
}
