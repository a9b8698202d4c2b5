//! The decision cache: which spans of a decided trace went with which run, outside the
//! Python heap.
//!
//! A span that arrives after its run's verdict must be recognised as late (or as a retry of
//! one already decided), so the assembler remembers, per decided trace, each span id with
//! the root span id of its run, and the parents those spans named that never arrived. Tens
//! of thousands of traces stay here for the life of the process: as Python objects (a dict
//! of id strings per trace, then a `bytearray` of packed records in an `OrderedDict`) every
//! full collection traversed them, and each cost ~400-1,800 B of the Python heap. Here they
//! are Rust values the collector never sees, ~200 B for a 16-span trace.
//!
//! Two forms, as before, with the same answers and the same accounting (`bytes`, which
//! `assemble.decision_cache_bytes` bounds, counts what the Python forms cost, so the bound
//! holds as many traces as it did):
//! - **packed**: every id is OTLP hex (16 lowercase hex digits, a number): one allocation
//!   per trace holding the run roots once (a trace has one or a few) and each span or
//!   missing parent as its id and the place of its root among them (two bytes); searched
//!   linearly. A
//!   root of zero is the empty root (a run whose root never arrived), as the packed bytes
//!   read it back before.
//! - **wide**: any other id, or more than `PACKED_MAX` records (a linear search is
//!   bounded): hash maps.
//!
//! The traces sit in a slab, linked oldest first; a trace id maps to its slot.

use crate::model::ids::{IdMap, IdSet, SpanId, TraceId};

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

const NONE: u32 = u32::MAX; // no slot

/// A run just decided: its root and its members as (span id, parent id).
pub type DecidedRun<'a> = (SpanId, Vec<(&'a SpanId, Option<&'a SpanId>)>);
/// Packed records: (id, root) pairs.
type Pairs = Vec<(u64, u64)>;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Span,
    Parent,
}

/// A packed trace: `[roots, spans, parents, root ids.., span ids.., parent ids.., root
/// places (16 bits each, spans' then parents', four to a word)..]`. A trace has at most
/// `PACKED_MAX` records, so at most as many roots.
struct Packed(Box<[u64]>);

impl Packed {
    fn counts(&self) -> (usize, usize, usize) {
        (self.0[0] as usize, self.0[1] as usize, self.0[2] as usize)
    }

    fn build(spans: &[(u64, u64)], parents: &[(u64, u64)]) -> Packed {
        let mut roots: Vec<u64> = Vec::new();
        let places: Vec<u64> = spans
            .iter()
            .chain(parents)
            .map(|(_, r)| {
                roots.iter().position(|x| x == r).unwrap_or_else(|| {
                    roots.push(*r);
                    roots.len() - 1
                }) as u64
            })
            .collect();
        let mut words = Vec::with_capacity(3 + roots.len() + places.len() + places.len().div_ceil(4));
        words.extend([roots.len() as u64, spans.len() as u64, parents.len() as u64]);
        words.extend(&roots);
        words.extend(spans.iter().chain(parents).map(|(s, _)| *s));
        words.extend(places.chunks(4).map(|c| c.iter().rev().fold(0u64, |w, p| (w << 16) | (p & 0xffff))));
        Packed(words.into_boxed_slice())
    }

    /// Every record: (span, root) and (parent, root).
    fn records(&self) -> (Pairs, Pairs) {
        let (r, s, p) = self.counts();
        let all: Vec<(u64, u64)> = (0..s + p).map(|i| (self.0[3 + r + i], self.root(i))).collect();
        let (spans, parents) = all.split_at(s);
        (spans.to_vec(), parents.to_vec())
    }

    fn root(&self, i: usize) -> u64 {
        let (r, s, p) = self.counts();
        let word = self.0[3 + r + s + p + i / 4];
        let place = (word >> (16 * (i % 4))) & 0xffff;
        self.0[3 + place as usize]
    }

    fn lookup(&self, id: u64, kind: Kind) -> Option<u64> {
        let (r, s, p) = self.counts();
        let (from, n) = if kind == Kind::Span { (0, s) } else { (s, p) };
        let ids = &self.0[3 + r + from..3 + r + from + n];
        ids.iter().position(|x| *x == id).map(|i| self.root(from + i))
    }
}

struct Wide {
    spans: IdMap<SpanId, SpanId>,
    parents: IdMap<SpanId, SpanId>,
}

enum Form {
    Packed(Packed),
    Wide(Box<Wide>),
}

struct Entry {
    id: TraceId,
    older: u32,
    newer: u32,
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
            Form::Packed(p) => {
                let (_, s, p) = p.counts();
                s + p
            }
            Form::Wide(w) => w.spans.len() + w.parents.len(),
        }
    }

    fn cost(&self) -> i128 {
        match self {
            Form::Packed(_) => PACKED_TRACE_BYTES + RECORD_BYTES * self.records() as i128,
            Form::Wide(_) => PACKED_TRACE_BYTES + WIDE_ENTRY_BYTES * self.records() as i128,
        }
    }

    fn lookup(&self, id: &SpanId, kind: Kind) -> Option<SpanId> {
        match self {
            Form::Packed(p) => p.lookup(packed_id(id)?, kind).map(unpacked_root),
            Form::Wide(w) => (if kind == Kind::Span { &w.spans } else { &w.parents }).get(id).cloned(),
        }
    }
}

pub struct DecisionCache {
    pub max_traces: usize,
    pub max_bytes: i128,
    slots: IdMap<TraceId, u32>,
    entries: Vec<Entry>,
    free: Vec<u32>,
    oldest: u32,
    newest: u32,
    pub bytes: i128,
    pub evictions: u64,
}

impl DecisionCache {
    pub fn new(max_traces: usize, max_bytes: i128) -> DecisionCache {
        DecisionCache {
            max_traces,
            max_bytes,
            slots: IdMap::default(),
            entries: Vec::new(),
            free: Vec::new(),
            oldest: NONE,
            newest: NONE,
            bytes: 0,
            evictions: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn contains(&self, trace: &TraceId) -> bool {
        self.slots.contains_key(trace)
    }

    fn entry(&self, trace: &TraceId) -> Option<&Entry> {
        self.slots.get(trace).map(|s| &self.entries[*s as usize])
    }

    pub fn lookup(&self, trace: &TraceId, id: &SpanId, kind: Kind) -> Option<SpanId> {
        self.entry(trace)?.form.lookup(id, kind)
    }

    /// "packed", "wide" or None: which form a trace is kept in (for tests).
    pub fn form(&self, trace: &TraceId) -> Option<&'static str> {
        self.entry(trace).map(|e| match e.form {
            Form::Packed(_) => "packed",
            Form::Wide(_) => "wide",
        })
    }

    /// Trace ids, oldest first.
    pub fn order(&self) -> Vec<&TraceId> {
        let mut out = Vec::with_capacity(self.len());
        let mut at = self.oldest;
        while at != NONE {
            let e = &self.entries[at as usize];
            out.push(&e.id);
            at = e.newer;
        }
        out
    }

    fn unlink(&mut self, slot: u32) {
        let (older, newer) = {
            let e = &self.entries[slot as usize];
            (e.older, e.newer)
        };
        if older == NONE {
            self.oldest = newer;
        } else {
            self.entries[older as usize].newer = newer;
        }
        if newer == NONE {
            self.newest = older;
        } else {
            self.entries[newer as usize].older = older;
        }
    }

    fn link_newest(&mut self, slot: u32) {
        {
            let e = &mut self.entries[slot as usize];
            e.older = self.newest;
            e.newer = NONE;
        }
        if self.newest == NONE {
            self.oldest = slot;
        } else {
            self.entries[self.newest as usize].newer = slot;
        }
        self.newest = slot;
    }

    /// Remember the spans of runs just decided (root, members as (span id, parent id)), and
    /// the parents they named that are not among the decided spans. An empty list still
    /// enters the trace (the Python cache did so too: a scan that closed nothing of a trace
    /// made its entry).
    pub fn decide(&mut self, trace: &TraceId, runs: &[DecidedRun<'_>]) {
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
        let slot = match self.slots.get(trace) {
            Some(s) => {
                // an id already remembered keeps its first run; a parent that was decided
                // itself is a span, not a missing parent
                let form = &self.entries[*s as usize].form;
                spans.retain(|(sid, _)| form.lookup(sid, Kind::Span).is_none());
                parents.retain(|(sid, _)| {
                    form.lookup(sid, Kind::Span).is_none() && form.lookup(sid, Kind::Parent).is_none()
                });
                *s
            }
            None => {
                let entry = Entry {
                    id: trace.clone(),
                    older: NONE,
                    newer: NONE,
                    form: Form::Packed(Packed::build(&[], &[])),
                };
                let slot = match self.free.pop() {
                    Some(s) => {
                        self.entries[s as usize] = entry;
                        s
                    }
                    None => {
                        self.entries.push(entry);
                        (self.entries.len() - 1) as u32
                    }
                };
                self.slots.insert(trace.clone(), slot);
                self.link_newest(slot);
                self.bytes += PACKED_TRACE_BYTES;
                slot
            }
        };
        if spans.is_empty() && parents.is_empty() {
            return;
        }
        let n = (spans.len() + parents.len()) as i128;
        let entry = &mut self.entries[slot as usize];
        if let Form::Packed(packed) = &entry.form {
            let fits = packed.counts().1 + packed.counts().2 + spans.len() + parents.len() <= PACKED_MAX;
            let ids = |v: &[(SpanId, SpanId)]| -> Option<Pairs> {
                v.iter().map(|(s, r)| Some((packed_id(s)?, packed_root(r)?))).collect()
            };
            let (old_spans, old_parents) = packed.records();
            if fits {
                if let (Some(mut s), Some(mut p)) = (ids(&spans), ids(&parents)) {
                    s.splice(0..0, old_spans.iter().copied());
                    p.splice(0..0, old_parents.iter().copied());
                    entry.form = Form::Packed(Packed::build(&s, &p));
                    self.bytes += RECORD_BYTES * n;
                    return;
                }
            }
            // widen: every record becomes a map entry
            let mut wide = Wide {
                spans: IdMap::with_capacity_and_hasher(old_spans.len(), Default::default()),
                parents: IdMap::with_capacity_and_hasher(old_parents.len(), Default::default()),
            };
            for (s, r) in &old_spans {
                wide.spans.insert(SpanId::Hex(*s), unpacked_root(*r));
            }
            for (s, r) in &old_parents {
                wide.parents.insert(SpanId::Hex(*s), unpacked_root(*r));
            }
            self.bytes += (WIDE_ENTRY_BYTES - RECORD_BYTES) * (old_spans.len() + old_parents.len()) as i128;
            entry.form = Form::Wide(Box::new(wide));
        }
        if let Form::Wide(wide) = &mut entry.form {
            for (s, r) in spans {
                wide.spans.entry(s).or_insert(r);
            }
            for (s, r) in parents {
                wide.parents.entry(s).or_insert(r);
            }
            self.bytes += WIDE_ENTRY_BYTES * n;
        }
    }

    /// Forget the oldest decided traces while over either bound. The trace being added to
    /// is forgotten last: its own late spans may be what filled the cache, and it then goes
    /// too rather than grow past the bound.
    pub fn trim(&mut self, keep: Option<&TraceId>) {
        while self.oldest != NONE && (self.len() > self.max_traces || self.bytes > self.max_bytes) {
            let slot = self.oldest;
            if Some(&self.entries[slot as usize].id) == keep && self.len() > 1 {
                self.unlink(slot);
                self.link_newest(slot);
                continue;
            }
            self.unlink(slot);
            let e = &mut self.entries[slot as usize];
            let form = std::mem::replace(&mut e.form, Form::Packed(Packed(Box::new([]))));
            self.bytes -= form.cost();
            self.slots.remove(&e.id);
            e.id = TraceId::Text(Box::from(""));
            self.free.push(slot);
            self.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(n: u64) -> SpanId {
        SpanId::Hex(n)
    }

    #[test]
    fn a_decided_span_and_the_parent_it_named_point_at_their_run() {
        let mut c = DecisionCache::new(10, 1 << 40);
        let t = TraceId::Hex(1, 2);
        let (root, child, missing) = (hex(1), hex(2), hex(3));
        c.decide(&t, &[(root.clone(), vec![(&root, None), (&child, Some(&missing))])]);
        assert_eq!(c.form(&t), Some("packed"));
        assert_eq!(c.lookup(&t, &child, Kind::Span), Some(root.clone()));
        assert_eq!(c.lookup(&t, &missing, Kind::Parent), Some(root.clone()));
        assert_eq!(c.lookup(&t, &missing, Kind::Span), None);
        c.late(&t, hex(4), root.clone());
        assert_eq!(c.lookup(&t, &hex(4), Kind::Span), Some(root));
    }

    #[test]
    fn ids_that_are_not_hex_are_kept_wide() {
        let mut c = DecisionCache::new(10, 1 << 40);
        let t = TraceId::Text("trace".into());
        let (root, child) = (SpanId::Text("root".into()), SpanId::Text("child".into()));
        c.decide(&t, &[(root.clone(), vec![(&root, None), (&child, Some(&root))])]);
        assert_eq!(c.form(&t), Some("wide"));
        assert_eq!(c.lookup(&t, &child, Kind::Span), Some(root));
    }

    #[test]
    fn the_oldest_trace_goes_first_at_the_bound() {
        let mut c = DecisionCache::new(2, 1 << 40);
        for n in 1..=3 {
            let root = hex(n);
            c.decide(&TraceId::Hex(0, n), &[(root.clone(), vec![(&root, None)])]);
        }
        assert_eq!(c.len(), 2);
        assert_eq!(c.evictions, 1);
        assert_eq!(c.order(), vec![&TraceId::Hex(0, 2), &TraceId::Hex(0, 3)]);
        assert!(!c.contains(&TraceId::Hex(0, 1)));
    }
}
