//! The decision cache: which spans of a decided trace went with which run, outside the
//! Python heap.
//!
//! A span that arrives after its run's verdict must be recognised as late (or as a retry of
//! one already decided), so the assembler remembers, per decided trace, each span id with
//! the root span id of its run, and the parents those spans named that never arrived. Tens
//! of thousands of traces stay here for the life of the process: as Python objects (a dict
//! of id strings per trace, then a `bytearray` of packed records) every full collection had
//! to consider them, and each cost ~490-1,800 B of the Python heap. Here they are Rust
//! values the collector never sees.
//!
//! Two forms, as before, with the same answers and the same accounting (`bytes`, which
//! `assemble.decision_cache_bytes` bounds, counts what the Python forms cost, so the bound
//! holds as many traces as it did; the native forms cost less):
//! - **packed**: every id is OTLP hex (a span id of 16 lowercase hex digits): pairs of
//!   numbers (span, root), searched linearly; a root of zero is the empty root (a run whose
//!   root never arrived), as the packed bytes read it back before.
//! - **wide**: any other id, or more than `PACKED_MAX` records (a linear search is bounded):
//!   hash maps.

use super::ids::{IdMap, IdSet, SpanId, TraceId};
use std::collections::VecDeque;

/// Records a packed trace holds before it becomes maps: a lookup searches its records, so a
/// trace that late spans keep growing stays O(1).
pub const PACKED_MAX: usize = 512;
/// What the Python forms cost, the accounting `bytes` keeps (tracemalloc, CPython 3.11): a
/// packed trace's slot, link, id string and bytearray header...
pub const PACKED_TRACE_BYTES: i128 = 220;
/// ... and each of its 17-byte records (kind, span id, root id) ...
pub const RECORD_BYTES: i128 = 17;
/// ... and a record kept in the dicts: a dict slot and a 16-character id string.
pub const WIDE_ENTRY_BYTES: i128 = 170;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Span,
    Parent,
}

enum Form {
    Packed { spans: Vec<(u64, u64)>, parents: Vec<(u64, u64)> },
    Wide { spans: IdMap<SpanId, SpanId>, parents: IdMap<SpanId, SpanId> },
}

struct Entry {
    seq: u64,
    form: Form,
}

fn packed_id(id: &SpanId) -> Option<u64> {
    match id {
        SpanId::Hex(v) => Some(*v),
        SpanId::Text(_) => None,
    }
}

/// A root as a packed record holds it: the empty root is zero.
fn packed_root(id: &SpanId) -> Option<u64> {
    if id.is_empty() {
        Some(0)
    } else {
        packed_id(id)
    }
}

fn unpacked_root(v: u64) -> SpanId {
    if v == 0 {
        SpanId::empty()
    } else {
        SpanId::Hex(v)
    }
}

impl Form {
    fn records(&self) -> usize {
        match self {
            Form::Packed { spans, parents } => spans.len() + parents.len(),
            Form::Wide { spans, parents } => spans.len() + parents.len(),
        }
    }

    fn cost(&self) -> i128 {
        match self {
            Form::Packed { .. } => PACKED_TRACE_BYTES + RECORD_BYTES * self.records() as i128,
            Form::Wide { .. } => PACKED_TRACE_BYTES + WIDE_ENTRY_BYTES * self.records() as i128,
        }
    }

    fn lookup(&self, id: &SpanId, kind: Kind) -> Option<SpanId> {
        match self {
            Form::Packed { spans, parents } => {
                let key = packed_id(id)?;
                let records = if kind == Kind::Span { spans } else { parents };
                records.iter().find(|(s, _)| *s == key).map(|(_, r)| unpacked_root(*r))
            }
            Form::Wide { spans, parents } => (if kind == Kind::Span { spans } else { parents }).get(id).cloned(),
        }
    }
}

pub struct DecisionCache {
    pub max_traces: usize,
    pub max_bytes: i128,
    traces: IdMap<TraceId, Entry>,
    // oldest first; an entry whose seq no longer matches its trace's was moved to the end
    order: VecDeque<(u64, TraceId)>,
    next_seq: u64,
    pub bytes: i128,
    pub evictions: u64,
}

impl DecisionCache {
    pub fn new(max_traces: usize, max_bytes: i128) -> DecisionCache {
        DecisionCache {
            max_traces,
            max_bytes,
            traces: IdMap::default(),
            order: VecDeque::new(),
            next_seq: 0,
            bytes: 0,
            evictions: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.traces.len()
    }

    pub fn contains(&self, trace: &TraceId) -> bool {
        self.traces.contains_key(trace)
    }

    pub fn lookup(&self, trace: &TraceId, id: &SpanId, kind: Kind) -> Option<SpanId> {
        self.traces.get(trace)?.form.lookup(id, kind)
    }

    /// "packed", "wide" or None: which form a trace is kept in (for tests).
    pub fn form(&self, trace: &TraceId) -> Option<&'static str> {
        self.traces.get(trace).map(|e| match e.form {
            Form::Packed { .. } => "packed",
            Form::Wide { .. } => "wide",
        })
    }

    /// Trace ids, oldest first.
    pub fn order(&self) -> Vec<&TraceId> {
        self.order
            .iter()
            .filter(|(seq, t)| self.traces.get(t).is_some_and(|e| e.seq == *seq))
            .map(|(_, t)| t)
            .collect()
    }

    /// Remember the spans of runs just decided (root, members as (span id, parent id)), and
    /// the parents they named that are not among the decided spans. An empty list still
    /// enters the trace (the Python cache did so too: a scan that closed nothing of a trace
    /// made its entry).
    pub fn decide(&mut self, trace: &TraceId, runs: &[(SpanId, Vec<(&SpanId, Option<&SpanId>)>)]) {
        let mut known: IdSet<&SpanId> = IdSet::default();
        let mut spans: Vec<(SpanId, SpanId)> = Vec::new();
        for (root, members) in runs {
            for (sid, _) in members {
                known.insert(*sid);
                spans.push(((*sid).clone(), root.clone()));
            }
        }
        let mut parents: Vec<(SpanId, SpanId)> = Vec::new();
        let mut named: IdSet<&SpanId> = IdSet::default();
        for (root, members) in runs {
            for (_, parent) in members {
                if let Some(p) = parent {
                    if !known.contains(p) && named.insert(*p) {
                        parents.push(((*p).clone(), root.clone()));
                    }
                }
            }
        }
        self.add(trace, spans, parents);
        self.trim(Some(trace));
    }

    /// Remember a late span of a decided run (its children are late too).
    pub fn late(&mut self, trace: &TraceId, id: SpanId, root: SpanId) {
        self.add(trace, vec![(id, root)], Vec::new());
        if self.bytes > self.max_bytes {
            self.trim(Some(trace));
        }
    }

    fn add(&mut self, trace: &TraceId, mut spans: Vec<(SpanId, SpanId)>, mut parents: Vec<(SpanId, SpanId)>) {
        if !self.traces.contains_key(trace) {
            let seq = self.next_seq;
            self.next_seq += 1;
            let form = Form::Packed { spans: Vec::new(), parents: Vec::new() };
            self.traces.insert(trace.clone(), Entry { seq, form });
            self.order.push_back((seq, trace.clone()));
            self.bytes += PACKED_TRACE_BYTES;
        } else {
            // an id already remembered keeps its first run; a parent that was decided itself
            // is a span, not a missing parent
            let form = &self.traces[trace].form;
            spans.retain(|(sid, _)| form.lookup(sid, Kind::Span).is_none());
            parents.retain(|(sid, _)| form.lookup(sid, Kind::Span).is_none() && form.lookup(sid, Kind::Parent).is_none());
        }
        if spans.is_empty() && parents.is_empty() {
            return;
        }
        let entry = self.traces.get_mut(trace).expect("entered above");
        let n = (spans.len() + parents.len()) as i128;
        if let Form::Packed { spans: ps, parents: pp } = &mut entry.form {
            let fits = ps.len() + pp.len() + spans.len() + parents.len() <= PACKED_MAX;
            let packable = spans.iter().chain(parents.iter()).all(|(s, r)| packed_id(s).is_some() && packed_root(r).is_some());
            if fits && packable {
                for (s, r) in &spans {
                    ps.push((packed_id(s).unwrap_or(0), packed_root(r).unwrap_or(0)));
                }
                for (s, r) in &parents {
                    pp.push((packed_id(s).unwrap_or(0), packed_root(r).unwrap_or(0)));
                }
                self.bytes += RECORD_BYTES * n;
                return;
            }
            // widen: every record becomes a map entry
            let mut ws = IdMap::with_capacity_and_hasher(ps.len(), Default::default());
            let mut wp = IdMap::with_capacity_and_hasher(pp.len(), Default::default());
            for (s, r) in ps.iter() {
                ws.insert(SpanId::Hex(*s), unpacked_root(*r));
            }
            for (s, r) in pp.iter() {
                wp.insert(SpanId::Hex(*s), unpacked_root(*r));
            }
            self.bytes += (WIDE_ENTRY_BYTES - RECORD_BYTES) * (ps.len() + pp.len()) as i128;
            entry.form = Form::Wide { spans: ws, parents: wp };
        }
        if let Form::Wide { spans: ws, parents: wp } = &mut entry.form {
            for (s, r) in spans {
                ws.entry(s).or_insert(r);
            }
            for (s, r) in parents {
                wp.entry(s).or_insert(r);
            }
            self.bytes += WIDE_ENTRY_BYTES * n;
        }
    }

    /// Forget the oldest decided traces while over either bound. The trace being added to
    /// is forgotten last: its own late spans may be what filled the cache, and it then goes
    /// too rather than grow past the bound.
    pub fn trim(&mut self, keep: Option<&TraceId>) {
        while !self.traces.is_empty() && (self.traces.len() > self.max_traces || self.bytes > self.max_bytes) {
            let Some((seq, tid)) = self.order.pop_front() else { return };
            let current = self.traces.get(&tid).map(|e| e.seq);
            if current != Some(seq) {
                continue; // moved to the end since: its newer place is further on
            }
            if Some(&tid) == keep && self.traces.len() > 1 {
                let seq = self.next_seq;
                self.next_seq += 1;
                if let Some(e) = self.traces.get_mut(&tid) {
                    e.seq = seq;
                }
                self.order.push_back((seq, tid));
                continue;
            }
            if let Some(e) = self.traces.remove(&tid) {
                self.bytes -= e.form.cost();
                self.evictions += 1;
            }
        }
    }
}
