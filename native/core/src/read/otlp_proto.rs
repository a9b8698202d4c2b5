//! The OTLP protobuf reader: an `ExportTraceServiceRequest`'s bytes -> its spans' records
//! (conventions.rs builds their fields).
//!
//! Why it exists: reading a span through upb's Python objects made one Python object per
//! `KeyValue` and `AnyValue` and cost about 11 CPU us per span (bench/README.md). Here the
//! bytes are walked once, attribute values are read where they lie, and a record keeps
//! only what some reader of records needs.
//!
//! The bytes were accepted first (accept.rs: exactly what upb accepts), so they are a valid
//! request: this reader agrees with upb's reading of it, field by field:
//! - a known field number with an unexpected wire type is an unknown field, skipped;
//! - a scalar field that appears twice keeps its last value;
//! - a singular message field that appears twice is merged (its occurrences read as one
//!   message, in order), as protobuf merges them; repeated fields append;
//! - an `AnyValue` whose oneof is set twice keeps the last member, and merges two
//!   occurrences of the same message member (`array_value`, `kvlist_value`);
//! - an enum (`Status.code`) is the varint's low 32 bits as a signed int, as upb reads it.
//!
//! Anything that is not protobuf at all is an error instead of a guess.

use std::borrow::Cow;

use super::attrs::{Attr, Attrs};
use super::bounds::{check_any_value, Over};
use super::content_events::{self, Event};
use super::key_set::KeySet;
use super::conventions::{self, read_names, read_prefixes, Built, Kept, SpanHead};
use crate::model::ids::{SpanId, TraceId};
use crate::error::{Error, Result};
use crate::model::record::SpanRecord;
use crate::model::value::{DictBuilder, Text, Value};
use crate::pyfmt::strs::code_points;
use crate::wire::{repeated, utf8, Fields, Value as Wire, MAX_DEPTH};

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;
/// Where a span's evaluation results are kept among its attributes (read/events.py): not an
/// OTel attribute name, so it cannot collide with one.
pub const EVALUATIONS: &str = "@evaluations";

/// The span attributes some reader of records needs: those records keep (`kept`: what the
/// service's checks, the run's facts and the verdict read) and those the conventions build
/// them from (read_names, read_prefixes). The others are never read: a span carries a
/// dozen no check reads (model names, request ids, temperatures), and held until its run's
/// verdict they were a third of a record's memory.
pub struct Projection {
    names: KeySet,
    prefixes: Vec<Vec<u8>>,
    pub kept: KeySet,
}

impl Projection {
    pub fn new(kept: impl IntoIterator<Item = Vec<u8>>) -> Projection {
        let kept: KeySet = kept.into_iter().collect();
        let mut names = kept.clone();
        names.extend(read_names().map(|n| n.as_bytes().to_vec()));
        Projection { names, prefixes: read_prefixes().map(|p| p.as_bytes().to_vec()).collect(), kept }
    }

    pub fn wants(&self, key: &[u8]) -> bool {
        self.names.contains(key) || self.prefixes.iter().any(|p| key.starts_with(p))
    }
}

/// The occurrences of a field, in order: almost always one, held without allocating.
pub enum Many<'a> {
    None,
    One(&'a [u8]),
    More(Vec<&'a [u8]>),
}

impl<'a> Many<'a> {
    fn push(&mut self, b: &'a [u8]) {
        *self = match std::mem::replace(self, Many::None) {
            Many::None => Many::One(b),
            Many::One(a) => Many::More(vec![a, b]),
            Many::More(mut v) => {
                v.push(b);
                Many::More(v)
            }
        };
    }

    pub fn as_slice(&self) -> &[&'a [u8]] {
        match self {
            Many::None => &[],
            Many::One(b) => std::slice::from_ref(b),
            Many::More(v) => v,
        }
    }
}

/// A message's length-delimited field `single` (its last occurrence) and the occurrences
/// of field `many`: a `KeyValue`'s key and value (1, 2), an event's name and attributes (2, 3).
fn one_and_many(msg: &[u8], single: u64, many: u64) -> Result<(&[u8], Many<'_>)> {
    let mut one: &[u8] = b"";
    let mut all = Many::None;
    let mut f = Fields::new(msg);
    while let Some((n, v)) = f.next()? {
        if let Wire::Bytes(b) = v {
            if n == single {
                one = b;
            } else if n == many {
                all.push(b);
            }
        }
    }
    Ok((one, all))
}

/// A `KeyValue`'s key and its value's occurrences.
pub fn key_value(kv: &[u8]) -> Result<(&[u8], Many<'_>)> {
    match plain_key_value(kv) {
        Some((key, value)) => Ok((key, Many::One(value))),
        None => one_and_many(kv, 1, 2),
    }
}

/// The key and value of a `KeyValue` of the usual shape (its key, then its value, each
/// once, lengths of one byte), or None for the general walk: most of a span's fields are
/// attributes, and the walk's loop cost twice this.
fn plain_key_value(kv: &[u8]) -> Option<(&[u8], &[u8])> {
    let [0x0a, n, rest @ ..] = kv else { return None };
    let (key, rest) = rest.split_at_checked(usize::from(*n)).filter(|_| *n < 0x80)?;
    let [0x12, m, value @ ..] = rest else { return None };
    (usize::from(*m) == value.len() && *m < 0x80).then_some((key, value))
}

/// The `AnyValue` of its occurrences (merged), strings and bytes where they lie.
pub fn any_value<'a>(chunks: &[&'a [u8]], depth: u32) -> Result<Value<'a>> {
    if depth > MAX_DEPTH {
        return Err(Error::Malformed("values nested too deep".into()));
    }
    // most values are one short string, once
    if let [[0x0a, n, text @ ..]] = chunks {
        if usize::from(*n) == text.len() && *n < 0x80 {
            return Ok(Value::Str(Cow::Borrowed(utf8(text)?.as_bytes())));
        }
    }
    let mut member = Value::Null;
    let mut parts: Vec<&'a [u8]> = Vec::new(); // of the array or kvlist member, merged
    let mut list = false;
    for chunk in chunks {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            match (n, v) {
                (1, Wire::Bytes(b)) => (member, list) = (Value::Str(Cow::Borrowed(utf8(b)?.as_bytes())), false),
                (2, Wire::Varint(x)) => (member, list) = (Value::Bool(x != 0), false),
                (3, Wire::Varint(x)) => (member, list) = (Value::Int(x as i64), false),
                (4, Wire::Fixed64(x)) => (member, list) = (Value::Float(f64::from_bits(x)), false),
                (5, Wire::Bytes(b)) => {
                    if !(list && matches!(member, Value::List(_))) {
                        parts.clear();
                    }
                    parts.push(b);
                    (member, list) = (Value::List(Vec::new()), true);
                }
                (6, Wire::Bytes(b)) => {
                    if !(list && matches!(member, Value::Dict(_))) {
                        parts.clear();
                    }
                    parts.push(b);
                    (member, list) = (Value::Dict(Vec::new()), true);
                }
                (7, Wire::Bytes(b)) => (member, list) = (Value::Bytes(Cow::Borrowed(b)), false),
                _ => {}
            }
        }
    }
    Ok(match member {
        // ArrayValue.values and KeyValueList.values are both field 1
        Value::List(_) => {
            let mut out = Vec::new();
            for part in parts {
                for b in repeated(part, 1)? {
                    out.push(any_value(&[b], depth + 1)?);
                }
            }
            Value::List(out)
        }
        Value::Dict(_) => {
            let mut d = DictBuilder::default();
            for part in parts {
                for kv in repeated(part, 1)? {
                    let (key, value) = key_value(kv)?;
                    d.insert(Cow::Borrowed(utf8(key)?.as_bytes()), any_value(value.as_slice(), depth + 1)?);
                }
            }
            Value::Dict(d.items)
        }
        other => other,
    })
}

/// `KeyValue`s as a dict's items, the last of a repeated key winning.
fn attributes<'a>(kvs: &[&'a [u8]]) -> Result<DictBuilder<'a>> {
    let mut d = DictBuilder::default();
    for kv in kvs {
        let (key, value) = key_value(kv)?;
        d.insert(Cow::Borrowed(utf8(key)?.as_bytes()), any_value(value.as_slice(), 0)?);
    }
    Ok(d)
}

/// The first value of `key` among a resource's attributes (its occurrences merged).
fn resource_value<'a>(chunks: &[&'a [u8]], key: &str) -> Result<Value<'a>> {
    for chunk in chunks {
        for kv in repeated(chunk, 1)? {
            let (k, value) = key_value(kv)?;
            if utf8(k)? == key {
                return any_value(value.as_slice(), 0);
            }
        }
    }
    Ok(Value::Null)
}

/// `str(v).lower()`: Python's full lower-casing (a final sigma, `İ` to `i̇`), a lone
/// surrogate left as it is.
pub fn lower(t: &[u8]) -> Vec<u8> {
    if t.is_ascii() {
        return t.to_ascii_lowercase();
    }
    match std::str::from_utf8(t) {
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => {
            // split around the surrogates: neither cased nor case-ignorable, so a sigma's
            // context ends at one as at a segment's end
            let mut out = Vec::with_capacity(t.len());
            let mut segment = Vec::new();
            for cp in code_points(t) {
                if (0xD800..=0xDFFF).contains(&cp) {
                    out.extend(String::from_utf8(std::mem::take(&mut segment)).unwrap_or_default().to_lowercase().bytes());
                    crate::pyfmt::strs::push_code_point(&mut out, cp);
                } else {
                    crate::pyfmt::strs::push_code_point(&mut segment, cp);
                }
            }
            out.extend(String::from_utf8(segment).unwrap_or_default().to_lowercase().bytes());
            out
        }
    }
}

/// One evaluation result from an event's attributes (read/events.py's `_result`): (name,
/// label, score), or None when it names no evaluation.
pub fn evaluation<'a>(attrs: &Value<'a>) -> Option<Value<'static>> {
    let name = attrs.get("gen_ai.evaluation.name")?;
    if !name.truthy() {
        return None;
    }
    let label = match attrs.get("gen_ai.evaluation.score.label") {
        Some(l) if l.truthy() => lower(&l.py_str()),
        _ => Vec::new(),
    };
    let score = match attrs.get("gen_ai.evaluation.score.value") {
        Some(Value::Int(x)) => Value::Float(*x as f64),
        Some(Value::Float(x)) => Value::Float(*x),
        _ => Value::Null,
    };
    Some(Value::Tuple(vec![Value::Str(Cow::Owned(name.py_str().into_owned())), Value::Str(Cow::Owned(label)), score]))
}

/// The results of a span's events named `event_name`, or None when none gives one.
fn evaluations(events: &[&[u8]], event_name: &str) -> Result<Option<Value<'static>>> {
    let mut out = Vec::new();
    for event in events {
        let (name, kvs) = one_and_many(event, 2, 3)?;
        if utf8(name)? == event_name {
            if let Some(r) = evaluation(&Value::Dict(attributes(kvs.as_slice())?.items)) {
                out.push(r);
            }
        }
    }
    Ok(if out.is_empty() { None } else { Some(Value::Tuple(out)) })
}

/// One span as the wire has it, its attributes read (only those `projection` wants).
struct Row<'a> {
    place: (usize, usize, usize),
    trace_id: &'a [u8],
    span_id: &'a [u8],
    parent: &'a [u8],
    name: &'a [u8],
    start: u64,
    end: u64,
    code: i32,
    message: &'a [u8],
    attrs: Attrs<'a>,
    /// The attributes a projection left out, (key, value's occurrences) as the wire has
    /// them: they may still say what the span is (unread.rs), when no convention claimed it.
    left_out: Vec<(&'a [u8], Many<'a>)>,
    evaluations: Option<Value<'static>>,
    over: Option<Over>, // its attributes are past a bound (bounds.rs): rejected, not read
    /// its events that may carry GenAI content (content_events.rs), None when it has none
    content: Option<Vec<Event<'a>>>,
}

/// `(name, attributes)` of a span's events that may carry GenAI content
/// (content_events.rs), or None when it has none.
fn content_events<'a>(events: &[&'a [u8]]) -> Result<Option<Vec<Event<'a>>>> {
    let mut out: Option<Vec<Event<'a>>> = None;
    for event in events {
        let (name, kvs) = one_and_many(event, 2, 3)?;
        if content_events::is_content_event(name) {
            let name = Cow::Borrowed(utf8(name)?.as_bytes());
            out.get_or_insert_with(Vec::new).push((name, Value::Dict(attributes(kvs.as_slice())?.items)));
        }
    }
    Ok(out)
}

fn span_row<'a>(span: &'a [u8], place: (usize, usize, usize), event_name: &str, projection: Option<&Projection>)
    -> Result<Row<'a>> {
    let (mut trace_id, mut span_id, mut parent, mut name): (&[u8], &[u8], &[u8], &[u8]) = (b"", b"", b"", b"");
    let (mut start, mut end) = (0u64, 0u64);
    // sized for a typical span: growing these was a tenth of the allocations per span
    let mut kvs = Vec::with_capacity(16);
    let mut events = Many::None;
    let mut status = Many::None;
    let mut f = Fields::new(span);
    while let Some((n, v)) = f.next()? {
        match (n, v) {
            (1, Wire::Bytes(b)) => trace_id = b,
            (2, Wire::Bytes(b)) => span_id = b,
            (4, Wire::Bytes(b)) => parent = b,
            (5, Wire::Bytes(b)) => name = b,
            (7, Wire::Fixed64(x)) => start = x,
            (8, Wire::Fixed64(x)) => end = x,
            (9, Wire::Bytes(b)) => kvs.push(b),
            (11, Wire::Bytes(b)) => events.push(b),
            (15, Wire::Bytes(b)) => status.push(b),
            _ => {}
        }
    }
    let (mut code, mut message): (i32, &[u8]) = (0, b"");
    for chunk in status.as_slice() {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            match (n, v) {
                (2, Wire::Bytes(b)) => message = b,
                (3, Wire::Varint(x)) => code = x as i32, // the low 32 bits, signed
                _ => {}
            }
        }
    }
    utf8(name)?;
    utf8(message)?;
    // a repeated key keeps its first place and its last value, as a dict does
    let mut attrs = Attrs::with_capacity(kvs.len());
    let mut left_out = Vec::new();
    // every attribute is bounded, the span's and its events', read or not: whether a span
    // is taken must not hang on which attributes the checks of the day read
    let mut seen = 0usize;
    let mut over = None;
    'events: for event in events.as_slice() {
        for kv in repeated(event, 3)? {
            if let Err(o) = check_any_value(key_value(kv)?.1.as_slice(), &mut seen)? {
                over = Some(o);
                break 'events;
            }
        }
    }
    for &kv in &kvs {
        let (key, value) = key_value(kv)?;
        if over.is_none() {
            over = check_any_value(value.as_slice(), &mut seen)?.err();
        }
        if over.is_some() {
            return Ok(Row { place, trace_id, span_id, parent, name, start, end, code, message,
                            attrs: Attrs::with_capacity(0), left_out: Vec::new(), evaluations: None, over,
                            content: None });
        }
        if projection.is_none_or(|p| p.wants(key)) {
            let key = Cow::Borrowed(utf8(key)?.as_bytes());
            attrs.set(Attr { key, val: any_value(value.as_slice(), 0)?, origin: None });
        } else {
            left_out.push((key, value));
        }
    }
    if over.is_some() {  // an event's attributes, past a bound, and a span with no attributes
        return Ok(Row { place, trace_id, span_id, parent, name, start, end, code, message, attrs, left_out,
                        evaluations: None, over, content: None });
    }
    let (evaluations, content) = match events {
        Many::None => (None, None),
        _ => (evaluations(events.as_slice(), event_name)?, content_events(events.as_slice())?),
    };
    Ok(Row { place, trace_id, span_id, parent, name, start, end, code, message, attrs, left_out, evaluations, over: None,
             content })
}

/// An id's bytes: None when malformed (not `n` bytes, or all zero), as the OTLP
/// specification defines a valid id; empty bytes are an absent id (a parent's).
fn id_bytes(raw: &[u8], n: usize) -> Option<&[u8]> {
    if raw.is_empty() || (raw.len() == n && raw.iter().any(|&b| b != 0)) {
        Some(raw)
    } else {
        None
    }
}

fn trace_id(raw: &[u8]) -> TraceId {
    TraceId::Hex(u64::from_be_bytes(raw[..8].try_into().expect("8 bytes")),
                 u64::from_be_bytes(raw[8..].try_into().expect("8 bytes")))
}

fn span_id(raw: &[u8]) -> SpanId {
    SpanId::Hex(u64::from_be_bytes(raw.try_into().expect("8 bytes")))
}

/// A rejected span: its place in the request (resource_spans[i].scope_spans[j].spans[k])
/// and its reason (a faultgate_receiver_rejected_spans label).
pub type Rejection = (usize, usize, usize, &'static str);

/// What a request read to: its records in wire order, those whose ids are malformed or whose
/// attributes are past a bound (bounds.rs) left out (`rejected`), and the first of those named.
pub struct Read {
    pub records: Vec<SpanRecord>,
    pub rejected: Vec<Rejection>,
    pub first_problem: String,
}

/// A span's own fields, as the reader hands them on with what the conventions built.
pub struct Head<'a> {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent_id: Option<SpanId>,
    pub name: &'a [u8],
    pub start_ns: u64,
    pub end_ns: u64,
    pub status_code: i32,
    pub status_message: &'a [u8],
}

/// The records of a request's bytes. A root or agent span takes its resource's
/// `version_key` attribute when it has none of its own; a span's `event_name` events are
/// read into its evaluations. With a `projection`, only the span attributes it wants are
/// read and records keep only its `kept` ones; without, every attribute is read and
/// records keep all but content.
pub fn read_spans(data: &[u8], version_key: &str, event_name: &str, projection: Option<&Projection>) -> Result<Read> {
    let kept = match projection {
        Some(p) => Kept::Names(&p.kept),
        None => Kept::All,
    };
    let mut records = Vec::new();
    let (rejected, first_problem) = each_span(data, version_key, event_name, projection, |h, built| {
        records.push(SpanRecord {
            trace_id: h.trace_id,
            span_id: h.span_id,
            parent_id: h.parent_id,
            name: h.name.into(),
            start_ns: i128::from(h.start_ns),
            end_ns: i128::from(h.end_ns),
            status_code: i64::from(h.status_code),
            status_message: h.status_message.into(),
            fields: built.into_fields(&kept),
        });
        Ok::<(), Error>(())
    })?;
    Ok(Read { records, rejected, first_problem })
}

/// Each valid span of a request, in wire order, with what the conventions built of it
/// (borrowing the request's bytes), to `each`; returns the spans rejected, each one's
/// place and reason (``invalid_span``: its ids are malformed; ``too_deep``: its attributes,
/// its own or its events', are past a bound), and the first of those named.
pub fn each_span<'a, E: From<Error>>(data: &'a [u8], version_key: &str, event_name: &str,
                                     projection: Option<&Projection>,
                                     mut each: impl FnMut(Head<'a>, Built<'a>) -> std::result::Result<(), E>)
    -> std::result::Result<(Vec<Rejection>, String), E> {
    let (mut rejected, mut first_problem) = (Vec::new(), String::new());
    // each span is taken as it is read: its resource's version is read before its scopes
    let mut take = |row: Row<'a>, version: &Value<'a>| -> std::result::Result<(), E> {
        let (reason, problem): (&'static str, Cow<'static, str>) =
            if id_bytes(row.trace_id, TRACE_ID_BYTES).is_none_or(<[u8]>::is_empty) {
                ("invalid_span", "trace_id is not 16 bytes, or is all zero".into())
            } else if id_bytes(row.span_id, SPAN_ID_BYTES).is_none_or(<[u8]>::is_empty) {
                ("invalid_span", "span_id is not 8 bytes, or is all zero".into())
            } else if id_bytes(row.parent, SPAN_ID_BYTES).is_none() {
                ("invalid_span", "parent_span_id is not 8 bytes".into())
            } else if let Some(over) = &row.over {
                ("too_deep", format!("attributes (its own and its events'): {}", over.message()).into())
            } else {
                ("", "".into())
            };
        if !problem.is_empty() {
            let (i, j, k) = row.place;
            rejected.push((i, j, k, reason));
            if first_problem.is_empty() {
                first_problem = format!("resource_spans[{i}].scope_spans[{j}].spans[{k}]: {problem}");
            }
            return Ok(());
        }
        let has_parent = !row.parent.is_empty();
        let mut attrs = row.attrs;
        if version.truthy()
            && (!has_parent || attrs.get("gen_ai.operation.name").is_some_and(|op| op.eq_str("invoke_agent")))
            && !attrs.has(version_key)
        {
            attrs.set(Attr { key: Cow::Owned(version_key.as_bytes().to_vec()), val: version.clone(), origin: None });
        }
        if let Some(evaluations) = row.evaluations {
            attrs.set(Attr { key: Cow::Borrowed(EVALUATIONS.as_bytes()), val: evaluations, origin: None });
        }
        if let Some(events) = &row.content {
            content_events::add_to(row.name, &mut attrs, events)?;
        }
        let head = SpanHead {
            name: Text::Borrowed(row.name),
            has_parent,
            failed: row.code == 2,
            message: Cow::Borrowed(row.message),
            instant: row.start == row.end,
        };
        let built = conventions::build_seen(&head, attrs, |sniff| {
            for (key, value) in &row.left_out {
                let v = if sniff.needs_value(key) { Some(any_value(value.as_slice(), 0)?) } else { None };
                sniff.key(key, v.as_ref(), false);
            }
            Ok(())
        })?;
        each(Head {
            trace_id: trace_id(row.trace_id),
            span_id: span_id(row.span_id),
            parent_id: has_parent.then(|| span_id(row.parent)),
            name: row.name,
            start_ns: row.start,
            end_ns: row.end,
            status_code: row.code,
            status_message: row.message,
        }, built)?;
        Ok(())
    };
    let mut request = Fields::new(data);
    let mut i = 0usize;
    while let Some((n, v)) = request.next().map_err(|m| E::from(m.into()))? {
        let rs = match (n, v) {
            (1, Wire::Bytes(rs)) => rs,
            _ => continue,
        };
        let (resource, scope_entries) = resource_and_scopes(rs)?;
        let version = resource_value(&resource, version_key)?;
        for (j, scope) in scope_entries.into_iter().enumerate() {
            for (k, span) in repeated(scope, 2).map_err(|m| E::from(m.into()))?.into_iter().enumerate() {
                take(span_row(span, (i, j, k), event_name, projection)?, &version)?;
            }
        }
        i += 1;
    }
    Ok((rejected, first_problem))
}

/// A `ResourceSpans`' (or `ResourceLogs`') resource occurrences and scope entries.
pub fn resource_and_scopes(rs: &[u8]) -> Result<(Vec<&[u8]>, Vec<&[u8]>)> {
    let mut resource = Vec::new();
    let mut scope_entries = Vec::new();
    let mut f = Fields::new(rs);
    while let Some((n, v)) = f.next()? {
        match (n, v) {
            (1, Wire::Bytes(b)) => resource.push(b),
            (2, Wire::Bytes(b)) => scope_entries.push(b),
            _ => {}
        }
    }
    Ok((resource, scope_entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_len_field;

    fn field(n: u64, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_len_field(&mut out, n, body);
        out
    }

    /// A `KeyValue` of a string value.
    fn kv(key: &str, value: &str) -> Vec<u8> {
        let mut out = field(1, key.as_bytes());
        out.extend(field(2, &field(1, value.as_bytes())));
        out
    }

    fn span(trace: &[u8], id: &[u8], parent: &[u8], name: &str, attrs: &[(&str, &str)], code: u64) -> Vec<u8> {
        let mut s = field(1, trace);
        s.extend(field(2, id));
        if !parent.is_empty() {
            s.extend(field(4, parent));
        }
        s.extend(field(5, name.as_bytes()));
        s.push(7 << 3 | 1);
        s.extend(1_000u64.to_le_bytes());
        s.push(8 << 3 | 1);
        s.extend(2_000u64.to_le_bytes());
        for (k, v) in attrs {
            s.extend(field(9, &kv(k, v)));
        }
        if code != 0 {
            s.extend(field(15, &[3 << 3, code as u8]));
        }
        s
    }

    fn request(resource: &[(&str, &str)], spans: &[Vec<u8>]) -> Vec<u8> {
        let mut res = Vec::new();
        for (k, v) in resource {
            res.extend(field(1, &kv(k, v)));
        }
        let mut scope = Vec::new();
        for s in spans {
            scope.extend(field(2, s));
        }
        let mut rs = field(1, &res);
        rs.extend(field(2, &scope));
        field(1, &rs)
    }

    #[test]
    fn a_request_reads_to_its_spans_records_and_names_the_first_malformed_one() {
        let trace = [7u8; 16];
        let root = span(&trace, &[1; 8], b"", "invoke_agent a", &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.output.messages", r#"[{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]"#),
            ("gen_ai.request.model", "m"),
        ], 0);
        let tool = span(&trace, &[2; 8], &[1; 8], "execute_tool search", &[
            ("gen_ai.tool.call.arguments", "{}"), ("gen_ai.tool.call.result", "[]")], 2);
        let bad = span(&trace, &[0; 8], &[1; 8], "x", &[], 0);
        let data = request(&[("service.version", "1.2")], &[root, tool, bad]);
        crate::read::accept::check_traces(&data).unwrap();
        let read = read_spans(&data, "service.version", "gen_ai.evaluation.result", None).unwrap();
        assert_eq!((read.rejected, read.first_problem.as_str()),
                   (vec![(0, 0, 2, "invalid_span")],
                    "resource_spans[0].scope_spans[0].spans[2]: span_id is not 8 bytes, or is all zero"));
        let [r, t] = &read.records[..] else { panic!("two records") };
        assert_eq!(r.trace_id.to_string(), "07".repeat(16));
        assert!(r.is_agent() && r.parent_id.is_none() && r.start_ns == 1_000 && r.end_ns == 2_000);
        assert_eq!(&*r.fields.answer, b"done");
        // the root takes its resource's version; content is not kept beside what was read of it
        let kept: Vec<&[u8]> = r.fields.attrs.iter().map(|(k, _)| k).collect();
        assert_eq!(kept, vec![&b"gen_ai.operation.name"[..], b"gen_ai.request.model", b"service.version"]);
        let tool = t.fields.tool.as_ref().unwrap();
        assert_eq!((&*tool.name, &*tool.result, t.status_code), (&b"search"[..], &b"[]"[..], 2));
        assert_eq!(t.parent_id.as_ref().unwrap().to_string(), "01".repeat(8));
    }

    #[test]
    fn a_span_whose_values_nest_past_the_bound_is_rejected_as_too_deep_and_the_others_read() {
        use crate::read::bounds::MAX_VALUE_DEPTH;
        let trace = [7u8; 16];
        // an array nested one level past the bound, as an event's attribute
        let deep = (0..=MAX_VALUE_DEPTH).fold(field(1, b"x"), |v, _| field(5, &field(1, &v)));
        let mut deep_kv = field(1, b"k");
        deep_kv.extend(field(2, &deep));
        let mut event = field(2, b"an event");
        event.extend(field(3, &deep_kv));
        let mut deep_span = span(&trace, &[3; 8], &[1; 8], "x", &[("a", "b")], 0);
        deep_span.extend(field(11, &event));
        let root = span(&trace, &[1; 8], b"", "invoke_agent a", &[("gen_ai.operation.name", "invoke_agent")], 0);
        let data = request(&[], &[root, deep_span]);
        crate::read::accept::check_traces(&data).unwrap();
        // whatever the projection: a bound does not hang on what the checks read
        let p = Projection::new([b"keep.me".to_vec()]);
        for projection in [None, Some(&p)] {
            let read = read_spans(&data, "service.version", "e", projection).unwrap();
            assert_eq!(read.rejected, vec![(0, 0, 1, "too_deep")]);
            assert!(read.first_problem.starts_with("resource_spans[0].scope_spans[0].spans[1]: attributes (its own \
                                                    and its events'): values nested more than 24 levels deep"),
                    "{}", read.first_problem);
            assert_eq!(read.records.len(), 1);
        }
    }

    #[test]
    fn a_key_value_of_any_shape_reads_as_the_general_walk_reads_it() {
        let shapes: Vec<Vec<u8>> = vec![
            [field(1, b"k"), field(2, &field(1, b"v"))].concat(),             // the usual shape
            [field(2, &field(1, b"v")), field(1, b"k")].concat(),             // value first
            [field(1, b"k"), field(2, &field(1, b"a")), field(2, &field(3, &[1]))].concat(), // two values
            [field(1, b"k"), field(1, b"k2"), field(2, &field(1, b"v"))].concat(), // two keys
            [field(1, b"k"), field(2, &field(1, &[b'v'; 200]))].concat(),     // a long value
            [field(1, &[b'k'; 130]), field(2, b"")].concat(),                 // a long key
            field(1, b"k"),                                                   // no value
            vec![],
        ];
        for kv in shapes {
            let (key, many) = key_value(&kv).ok().unwrap();
            let (k2, m2) = one_and_many(&kv, 1, 2).ok().unwrap();
            assert_eq!(key, k2);
            assert_eq!(many.as_slice(), m2.as_slice());
        }
    }

    #[test]
    fn a_short_string_value_reads_as_any_other_and_one_not_utf8_is_refused() {
        let value = field(1, "caf\u{e9}".as_bytes());
        assert_eq!(any_value(&[&value], 0).ok(), Some(Value::Str(Cow::Borrowed("caf\u{e9}".as_bytes()))));
        // set twice: the last; then an int after it: the int
        let twice = [field(1, b"a"), field(1, b"b")].concat();
        assert_eq!(any_value(&[&twice], 0).ok(), Some(Value::Str(Cow::Borrowed(b"b"))));
        assert_eq!(any_value(&[&value, &[3 << 3, 5]], 0).ok(), Some(Value::Int(5)));
        assert!(any_value(&[&field(1, &[0xff])], 0).is_err());
    }

    #[test]
    fn a_projection_keeps_only_what_the_checks_read() {
        let trace = [7u8; 16];
        let root = span(&trace, &[1; 8], b"", "invoke_agent a", &[("gen_ai.operation.name", "invoke_agent"),
                                                                    ("gen_ai.request.model", "m"), ("keep.me", "y")], 0);
        let data = request(&[], &[root]);
        let p = Projection::new([b"keep.me".to_vec()]);
        let read = read_spans(&data, "service.version", "e", Some(&p)).unwrap();
        let kept: Vec<&[u8]> = read.records[0].fields.attrs.iter().map(|(k, _)| k).collect();
        assert_eq!(kept, vec![&b"keep.me"[..]]);
        assert!(read.records[0].is_agent());
    }
}
