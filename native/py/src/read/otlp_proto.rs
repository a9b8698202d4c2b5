//! The OTLP readers' decoding half: an `ExportTraceServiceRequest`'s bytes -> its spans'
//! records (conventions.rs builds them), and an `ExportLogsServiceRequest`'s -> one tuple
//! per log record for `read/otlp_logs.py`.
//!
//! Why it exists: reading a span through upb's Python objects made one Python object per
//! `KeyValue` and `AnyValue` and cost about 11 CPU us per span of the bench's workload
//! (bench/README.md), most of a span's read; building the record in Python from a dict of
//! every attribute cost about 8 more. Here the bytes are walked once, attribute values are
//! read where they lie, and only the record and what it keeps become Python objects.
//!
//! The bytes were accepted first (read/accept.rs: exactly what upb accepts), so they are a
//! valid request: this reader agrees with upb's reading of it, field by field:
//! - a known field number with an unexpected wire type is an unknown field, skipped;
//! - a scalar field that appears twice keeps its last value;
//! - a singular message field that appears twice is merged (its occurrences read as one
//!   message, in order), as protobuf merges them; repeated fields append;
//! - an `AnyValue` whose oneof is set twice keeps the last member, and merges two
//!   occurrences of the same message member (`array_value`, `kvlist_value`);
//! - an enum (`Status.code`) is the varint's low 32 bits as a signed int, as upb reads it.
//!
//! Anything that is not protobuf at all raises `ValueError` instead of a guess.

use pyo3::prelude::*;
use std::borrow::Cow;
use std::collections::HashSet;

use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::read::attrs::{Attr, Attrs};
use crate::read::conventions::{self, read_names, read_prefixes, Kept, Span};
use crate::read::value::{from_py, DictBuilder, FastMap, Strings, V};
use crate::wire::{repeated, utf8, Fields, Malformed, Result, Value, MAX_DEPTH};

// String values this short are shared like keys (operation, model, tool and agent names,
// finish reasons, status words repeat across spans); longer ones are content, rarely equal.
const SHARED_VALUE_BYTES: usize = 32;

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;

/// The `AnyValue` of its occurrences (merged), as the plain Python value the reader keeps.
fn any_value<'a, 'py>(keys: &mut Keys<'a, 'py>, chunks: &[&'a [u8]], depth: u32) -> PyResult<PyObject> {
    let py = keys.py;
    enum Member<'a> {
        Unset,
        Str(&'a [u8]),
        Bool(bool),
        Int(i64),
        Double(f64),
        Bytes(&'a [u8]),
        Array(Vec<&'a [u8]>),
        KvList(Vec<&'a [u8]>),
    }
    if depth > MAX_DEPTH {
        return Err(Malformed("values nested too deep").into());
    }
    let mut member = Member::Unset;
    for chunk in chunks {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            member = match (n, v) {
                (1, Value::Bytes(b)) => Member::Str(b),
                (2, Value::Varint(x)) => Member::Bool(x != 0),
                (3, Value::Varint(x)) => Member::Int(x as i64),
                (4, Value::Fixed64(x)) => Member::Double(f64::from_bits(x)),
                (5, Value::Bytes(b)) => match member {
                    Member::Array(mut parts) => {
                        parts.push(b);
                        Member::Array(parts)
                    }
                    _ => Member::Array(vec![b]),
                },
                (6, Value::Bytes(b)) => match member {
                    Member::KvList(mut parts) => {
                        parts.push(b);
                        Member::KvList(parts)
                    }
                    _ => Member::KvList(vec![b]),
                },
                (7, Value::Bytes(b)) => Member::Bytes(b),
                _ => member,
            };
        }
    }
    Ok(match member {
        Member::Unset => py.None(),
        Member::Str(b) => keys.text(b)?,
        Member::Bool(x) => x.into_pyobject(py)?.to_owned().into_any().unbind(),
        Member::Int(x) => x.into_pyobject(py)?.into_any().unbind(),
        Member::Double(x) => x.into_pyobject(py)?.into_any().unbind(),
        Member::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
        // ArrayValue.values and KeyValueList.values are both field 1
        Member::Array(parts) => {
            let out = PyList::empty(py);
            for part in parts {
                for b in repeated(part, 1)? {
                    out.append(any_value(keys, &[b], depth + 1)?)?;
                }
            }
            out.into_any().unbind()
        }
        Member::KvList(parts) => {
            let out = PyDict::new(py);
            for part in parts {
                fill(keys, &out, &repeated(part, 1)?, depth + 1, None)?;
            }
            out.into_any().unbind()
        }
    })
}

/// The `AnyValue` of its occurrences (merged), as the conventions read it: strings and
/// bytes where they lie in the request.
fn value_of<'a, 'py>(py: Python<'py>, chunks: &[&'a [u8]], depth: u32) -> PyResult<V<'a, 'py>> {
    if depth > MAX_DEPTH {
        return Err(Malformed("values nested too deep").into());
    }
    let mut member = V::Null;
    let mut parts: Vec<&'a [u8]> = Vec::new(); // of the array or kvlist member, merged
    let mut list = false;
    for chunk in chunks {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            match (n, v) {
                (1, Value::Bytes(b)) => (member, list) = (V::Str(Cow::Borrowed(utf8(b)?.as_bytes())), false),
                (2, Value::Varint(x)) => (member, list) = (V::Bool(x != 0), false),
                (3, Value::Varint(x)) => (member, list) = (V::Int(x as i64), false),
                (4, Value::Fixed64(x)) => (member, list) = (V::Float(f64::from_bits(x)), false),
                (5, Value::Bytes(b)) => {
                    if !(list && matches!(member, V::List(_))) {
                        parts.clear();
                    }
                    parts.push(b);
                    (member, list) = (V::List(Vec::new()), true);
                }
                (6, Value::Bytes(b)) => {
                    if !(list && matches!(member, V::Dict(_))) {
                        parts.clear();
                    }
                    parts.push(b);
                    (member, list) = (V::Dict(Vec::new()), true);
                }
                (7, Value::Bytes(b)) => (member, list) = (V::Bytes(Cow::Borrowed(b)), false),
                _ => {}
            }
        }
    }
    Ok(match member {
        // ArrayValue.values and KeyValueList.values are both field 1
        V::List(_) => {
            let mut out = Vec::new();
            for part in parts {
                for b in repeated(part, 1)? {
                    out.push(value_of(py, &[b], depth + 1)?);
                }
            }
            V::List(out)
        }
        V::Dict(_) => {
            let mut d = DictBuilder::default();
            for part in parts {
                for kv in repeated(part, 1)? {
                    let (key, value) = key_value(kv)?;
                    d.insert(Cow::Borrowed(utf8(key)?.as_bytes()), value_of(py, value.as_slice(), depth + 1)?);
                }
            }
            V::Dict(d.items)
        }
        other => other,
    })
}

/// Attribute keys, short string values and ids seen in this request, one Python string
/// each: a request's spans repeat the same few keys and names, a trace's spans its id and
/// siblings their parent's, and every record then shares them instead of holding copies
/// (bench/held_memory.py: 1,625 -> 1,409 B per span held once short values were shared).
/// Bounded by the request.
struct Keys<'a, 'py> {
    py: Python<'py>,
    seen: FastMap<&'a [u8], Bound<'py, PyString>>,
    ids: FastMap<&'a [u8], PyObject>,
}

impl<'a, 'py> Keys<'a, 'py> {
    /// An id as lowercase hex: "" when absent (empty), None when malformed (not ``n``
    /// bytes, or all zero), as the OTLP specification defines a valid id.
    fn id(&mut self, raw: &'a [u8], n: usize) -> PyObject {
        let py = self.py;
        if raw.is_empty() {
            return PyString::new(py, "").into_any().unbind();
        }
        if raw.len() != n || raw.iter().all(|&b| b == 0) {
            return py.None();
        }
        self.ids
            .entry(raw)
            .or_insert_with(|| {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let mut hex = [0u8; 2 * TRACE_ID_BYTES];
                for (i, &b) in raw.iter().enumerate() {
                    hex[2 * i] = HEX[(b >> 4) as usize];
                    hex[2 * i + 1] = HEX[(b & 15) as usize];
                }
                let hex = std::str::from_utf8(&hex[..2 * n]).expect("hex digits");
                PyString::new(py, hex).into_any().unbind()
            })
            .clone_ref(py)
    }

    /// A string value or a span's name: shared when short (``SHARED_VALUE_BYTES``).
    fn text(&mut self, b: &'a [u8]) -> PyResult<PyObject> {
        Ok(if b.len() <= SHARED_VALUE_BYTES {
            self.get(b)?.into_any().unbind()
        } else {
            PyString::new(self.py, utf8(b)?).into_any().unbind()
        })
    }

    fn get(&mut self, key: &'a [u8]) -> Result<Bound<'py, PyString>> {
        if let Some(k) = self.seen.get(key) {
            return Ok(k.clone());
        }
        // bounded by the request: at most one entry per KeyValue in it. Not interned
        // (`PyString::intern`): CPython 3.12.0-3.12.4 made every interned string immortal,
        // and keys come from the wire; sharing within a request is almost all the gain.
        let k = PyString::new(self.py, utf8(key)?);
        self.seen.insert(key, k.clone());
        Ok(k)
    }
}

/// The occurrences of a field, in order: almost always one, held without allocating.
enum Many<'a> {
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

    fn as_slice(&self) -> &[&'a [u8]] {
        match self {
            Many::None => &[],
            Many::One(b) => std::slice::from_ref(b),
            Many::More(v) => v,
        }
    }
}

/// A message's length-delimited field ``single`` (its last occurrence) and the occurrences
/// of field ``many``: a `KeyValue`'s key and value (1, 2), an event's name and attributes (2, 3).
fn one_and_many(msg: &[u8], single: u64, many: u64) -> Result<(&[u8], Many<'_>)> {
    let mut one: &[u8] = b"";
    let mut all = Many::None;
    let mut f = Fields::new(msg);
    while let Some((n, v)) = f.next()? {
        if let Value::Bytes(b) = v {
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
fn key_value(kv: &[u8]) -> Result<(&[u8], Many<'_>)> {
    one_and_many(kv, 1, 2)
}


/// `KeyValue`s into ``out``, the last of a repeated key winning; only the keys
/// ``projection`` wants when there is one.
fn fill<'a, 'py>(keys: &mut Keys<'a, 'py>, out: &Bound<'py, PyDict>, kvs: &[&'a [u8]], depth: u32,
                 projection: Option<&Projection>) -> PyResult<()> {
    for kv in kvs {
        let (key, value) = key_value(kv)?;
        if projection.map_or(true, |p| p.wants(key)) {
            out.set_item(keys.get(key)?, any_value(keys, value.as_slice(), depth)?)?;
        }
    }
    Ok(())
}

fn attributes<'a, 'py>(keys: &mut Keys<'a, 'py>, kvs: &[&'a [u8]], projection: Option<&Projection>)
    -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(keys.py);
    fill(keys, &out, kvs, 0, projection)?;
    Ok(out)
}

/// ``Projection(kept)``: the span attributes some reader of records needs: those records
/// keep (``kept``: what the service's checks, the run's facts and the verdict read) and
/// those the conventions build them from (read_names, read_prefixes). The others never
/// become Python objects: a span carries a dozen no check reads (model names, request ids,
/// temperatures), and held until its run's verdict they were a third of a record's memory.
#[pyclass(frozen)]
pub struct Projection {
    names: HashSet<Vec<u8>, foldhash::fast::RandomState>,
    prefixes: Vec<Vec<u8>>,
    kept: HashSet<Vec<u8>, foldhash::fast::RandomState>,
}

#[pymethods]
impl Projection {
    #[new]
    fn new(kept: Vec<String>) -> Self {
        let kept: HashSet<Vec<u8>, _> = kept.into_iter().map(String::into_bytes).collect();
        let mut names = kept.clone();
        names.extend(read_names().map(|n| n.as_bytes().to_vec()));
        Projection { names, prefixes: read_prefixes().map(|p| p.as_bytes().to_vec()).collect(), kept }
    }
}

impl Projection {
    fn wants(&self, key: &[u8]) -> bool {
        self.names.contains(key) || self.prefixes.iter().any(|p| key.starts_with(p))
    }
}

/// The first value of ``key`` among a resource's attributes (its occurrences merged).
fn resource_value<'a, 'py>(keys: &mut Keys<'a, 'py>, chunks: &[&'a [u8]], key: &str) -> PyResult<PyObject> {
    for chunk in chunks {
        for kv in repeated(chunk, 1)? {
            let (k, value) = key_value(kv)?;
            if utf8(k)? == key {
                return any_value(keys, value.as_slice(), 0);
            }
        }
    }
    Ok(keys.py.None())
}

/// The attributes of a span's events named ``event_name``, or None when it has none.
fn named_events<'a, 'py>(keys: &mut Keys<'a, 'py>, events: &[&'a [u8]], event_name: &str)
    -> PyResult<Option<Bound<'py, PyList>>> {
    let py = keys.py;
    let mut out: Option<Bound<'py, PyList>> = None;
    for event in events {
        let (name, kvs) = one_and_many(event, 2, 3)?;
        if utf8(name)? == event_name {
            out.get_or_insert_with(|| PyList::empty(py)).append(attributes(keys, kvs.as_slice(), None)?)?;
        }
    }
    Ok(out)
}

/// One span as the wire has it, its attributes read (only those ``projection`` wants).
struct Row<'a, 'py> {
    place: (usize, usize, usize),
    trace_id: &'a [u8],
    span_id: &'a [u8],
    parent: &'a [u8],
    name: &'a [u8],
    start: u64,
    end: u64,
    code: i32,
    message: &'a [u8],
    attrs: Attrs<'a, 'py>,
    evaluations: Option<Bound<'py, PyList>>,
}

fn span_row<'a, 'py>(keys: &mut Keys<'a, 'py>, span: &'a [u8], place: (usize, usize, usize), event_name: &str,
                     projection: Option<&Projection>) -> PyResult<Row<'a, 'py>> {
    let py = keys.py;
    let (mut trace_id, mut span_id, mut parent, mut name): (&[u8], &[u8], &[u8], &[u8]) = (b"", b"", b"", b"");
    let (mut start, mut end) = (0u64, 0u64);
    // sized for a typical span: growing these was a tenth of the allocations per span
    let mut kvs = Vec::with_capacity(16);
    let mut events = Many::None;
    let mut status = Many::None;
    let mut f = Fields::new(span);
    while let Some((n, v)) = f.next()? {
        match (n, v) {
            (1, Value::Bytes(b)) => trace_id = b,
            (2, Value::Bytes(b)) => span_id = b,
            (4, Value::Bytes(b)) => parent = b,
            (5, Value::Bytes(b)) => name = b,
            (7, Value::Fixed64(x)) => start = x,
            (8, Value::Fixed64(x)) => end = x,
            (9, Value::Bytes(b)) => kvs.push(b),
            (11, Value::Bytes(b)) => events.push(b),
            (15, Value::Bytes(b)) => status.push(b),
            _ => {}
        }
    }
    let (mut code, mut message): (i32, &[u8]) = (0, b"");
    for chunk in status.as_slice() {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            match (n, v) {
                (2, Value::Bytes(b)) => message = b,
                (3, Value::Varint(x)) => code = x as i32, // the low 32 bits, signed
                _ => {}
            }
        }
    }
    utf8(name)?;
    utf8(message)?;
    // a repeated key keeps its first place and its last value, as a dict does
    let mut attrs = Attrs::with_capacity(kvs.len());
    for kv in kvs {
        let (key, value) = key_value(kv)?;
        if projection.map_or(true, |p| p.wants(key)) {
            let key = Cow::Borrowed(utf8(key)?.as_bytes());
            attrs.set(Attr { key, key_py: None, val: value_of(py, value.as_slice(), 0)?, val_py: None });
        }
    }
    let evaluations = match events {
        Many::None => None,
        _ => named_events(keys, events.as_slice(), event_name)?,
    };
    Ok(Row { place, trace_id, span_id, parent, name, start, end, code, message, attrs, evaluations })
}

/// ``read_spans(data, version_key, event_name, projection=None) -> (records, rejected,
/// first_problem)``: the ``SpanRecord`` of every span of the request in wire order, but
/// those whose ids are malformed: those are counted (``rejected``) and the first is named.
/// A root or agent span takes its resource's ``version_key`` attribute when it has none of
/// its own; a span's ``event_name`` events are read into its evaluations (read/events.py).
/// With a ``projection``, only the span attributes it wants are read and records keep only
/// its ``kept`` ones; without, every attribute is read and records keep all but content.
#[pyfunction]
#[pyo3(signature = (data, version_key, event_name, projection=None))]
fn read_spans<'py>(py: Python<'py>, data: &[u8], version_key: &str, event_name: &str,
                   projection: Option<PyRef<'py, Projection>>)
    -> PyResult<(Bound<'py, PyList>, usize, String)> {
    let projection = projection.as_deref();
    guarded(|| {
        let mut keys = Keys { py, seen: FastMap::default(), ids: FastMap::default() };
        let mut versions = Vec::new();
        let mut rows = Vec::new();
        let mut request = Fields::new(data);
        let mut i = 0usize;
        while let Some((n, v)) = request.next()? {
            let rs = match (n, v) {
                (1, Value::Bytes(rs)) => rs,
                _ => continue,
            };
            let (resource, scope_entries) = resource_and_scopes(rs)?;
            let version = resource_value(&mut keys, &resource, version_key)?.into_bound(py);
            versions.push((from_py(&version, 0)?, version));
            for (j, scope) in scope_entries.into_iter().enumerate() {
                for (k, span) in repeated(scope, 2)?.into_iter().enumerate() {
                    rows.push(span_row(&mut keys, span, (i, j, k), event_name, projection)?);
                }
            }
            i += 1;
        }
        let out = PyList::empty(py);
        let (mut rejected, mut first) = (0usize, String::new());
        let records = conventions::records(py)?;
        let mut strings = Strings::new();
        let kept = match projection {
            Some(p) => Kept::Names(&p.kept),
            None => Kept::All,
        };
        for row in rows {
            // ids come as hex: "" when absent, None when malformed (wrong length, all zero)
            let tid = keys.id(row.trace_id, TRACE_ID_BYTES).into_bound(py);
            let sid = keys.id(row.span_id, SPAN_ID_BYTES).into_bound(py);
            let parent = keys.id(row.parent, SPAN_ID_BYTES).into_bound(py);
            let problem = if !tid.is_truthy()? {
                "trace_id is not 16 bytes, or is all zero"
            } else if !sid.is_truthy()? {
                "span_id is not 8 bytes, or is all zero"
            } else if parent.is_none() {
                "parent_span_id is not 8 bytes"
            } else {
                ""
            };
            if !problem.is_empty() {
                rejected += 1;
                if first.is_empty() {
                    let (i, j, k) = row.place;
                    first = format!("resource_spans[{i}].scope_spans[{j}].spans[{k}]: {problem}");
                }
                continue;
            }
            let has_parent = !row.parent.is_empty();
            let mut attrs = row.attrs;
            let (version, version_py) = &versions[row.place.0];
            if version.truthy()?
                && (!has_parent || attrs.get("gen_ai.operation.name").is_some_and(|op| op.eq_str("invoke_agent")))
                && !attrs.has(version_key)
            {
                attrs.set(Attr {
                    key: Cow::Owned(version_key.as_bytes().to_vec()),
                    key_py: None,
                    val: version.clone(),
                    val_py: Some(version_py.clone()),
                });
            }
            if let Some(evaluations) = row.evaluations {
                let results = records.from_attributes.bind(py).call1((evaluations,))?;
                if results.is_truthy()? {
                    attrs.set(Attr {
                        key: Cow::Owned(records.evaluations_key.as_bytes().to_vec()),
                        key_py: None,
                        val: V::Py(results.clone()),
                        val_py: Some(results),
                    });
                }
            }
            let name_py = keys.text(row.name)?.into_bound(py);
            let span = Span {
                trace_id: tid,
                span_id: sid,
                parent: if has_parent { parent } else { py.None().into_bound(py) },
                has_parent,
                name: Cow::Borrowed(row.name),
                name_py,
                start: row.start.into_pyobject(py)?.into_any(),
                end: row.end.into_pyobject(py)?.into_any(),
                status_code: row.code.into_pyobject(py)?.into_any(),
                failed: row.code == 2,
                message: Cow::Borrowed(row.message),
                message_py: strings.text(py, row.message)?.into_any(),
            };
            let fields = conventions::build(py, &span, attrs)?;
            out.append(records.record(py, &mut strings, &span, fields, &kept)?)?;
        }
        Ok((out, rejected, first))
    })
}

/// A ``ResourceSpans``' (or ``ResourceLogs``') resource occurrences and scope entries.
fn resource_and_scopes(rs: &[u8]) -> Result<(Vec<&[u8]>, Vec<&[u8]>)> {
    let mut resource = Vec::new();
    let mut scope_entries = Vec::new();
    let mut f = Fields::new(rs);
    while let Some((n, v)) = f.next()? {
        match (n, v) {
            (1, Value::Bytes(b)) => resource.push(b),
            (2, Value::Bytes(b)) => scope_entries.push(b),
            _ => {}
        }
    }
    Ok((resource, scope_entries))
}

/// ``read_logs(data) -> scopes``: an ``ExportLogsServiceRequest``'s (i, j, rows) for
/// resource_logs[i].scope_logs[j], one row per log record (``log_row``).
#[pyfunction]
fn read_logs<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
    guarded(|| {
        let scopes = PyList::empty(py);
        let mut keys = Keys { py, seen: FastMap::default(), ids: FastMap::default() };
        let mut request = Fields::new(data);
        let mut i = 0usize;
        while let Some((n, v)) = request.next()? {
            let rl = match (n, v) {
                (1, Value::Bytes(rl)) => rl,
                _ => continue,
            };
            // the logs request has the traces request's shape: field 1 of the request, of
            // its entries' scope entries (field 2) and of their items (field 2)
            let (_, scope_entries) = resource_and_scopes(rl)?;
            for (j, scope) in scope_entries.into_iter().enumerate() {
                let rows = PyList::empty(py);
                for item in repeated(scope, 2)? {
                    rows.append(log_row(&mut keys, item)?)?;
                }
                scopes.append((i, j, rows))?;
            }
            i += 1;
        }
        Ok(scopes)
    })
}

/// Runs `f`; a panic is an ordinary error (python/guard.rs).
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("the compiled OTLP reader", f)
}

/// One log record's row: (trace_id, span_id, time, observed time, event_name, attributes,
/// body); ids as ``Keys::id`` gives them, the body None when absent (as when empty).
fn log_row<'a, 'py>(keys: &mut Keys<'a, 'py>, record: &'a [u8]) -> PyResult<Bound<'py, PyTuple>> {
    let py = keys.py;
    let (mut trace_id, mut span_id, mut event_name): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let (mut time, mut observed) = (0u64, 0u64);
    let mut kvs = Vec::new();
    let mut body = Vec::new();
    let mut f = Fields::new(record);
    while let Some((n, v)) = f.next()? {
        match (n, v) {
            (1, Value::Fixed64(x)) => time = x,
            (11, Value::Fixed64(x)) => observed = x,
            (5, Value::Bytes(b)) => body.push(b),
            (6, Value::Bytes(b)) => kvs.push(b),
            (9, Value::Bytes(b)) => trace_id = b,
            (10, Value::Bytes(b)) => span_id = b,
            (12, Value::Bytes(b)) => event_name = b,
            _ => {}
        }
    }
    let attrs = attributes(keys, &kvs, None)?;
    let body = any_value(keys, &body, 0)?;
    PyTuple::new(py, [
        keys.id(trace_id, TRACE_ID_BYTES),
        keys.id(span_id, SPAN_ID_BYTES),
        time.into_pyobject(py)?.into_any().unbind(),
        observed.into_pyobject(py)?.into_any().unbind(),
        PyString::new(py, utf8(event_name)?).into_any().unbind(),
        attrs.into_any().unbind(),
        body,
    ])
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_spans, m)?)?;
    m.add_function(wrap_pyfunction!(read_logs, m)?)?;
    m.add_class::<Projection>()
}
