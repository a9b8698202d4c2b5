//! The OTLP readers' decoding half: an `ExportTraceServiceRequest`'s bytes -> one tuple per
//! span of exactly what `read/otlp_proto.py` builds records from, and an
//! `ExportLogsServiceRequest`'s -> one per log record for `read/otlp_logs.py`.
//!
//! Why it exists: reading a span through upb's Python objects made one Python object per
//! `KeyValue` and `AnyValue` and cost about 11 CPU us per span of the bench's workload
//! (bench/README.md), most of a span's read. Here the bytes are walked once and only the
//! fields a record needs become Python objects.
//!
//! The bytes were parsed by upb first (the receiver forwards that parse), so they are a
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

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::collections::{HashMap, HashSet};

use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

// upb refuses messages nested deeper than 100; this bound only keeps the stack safe if a
// caller ever hands over bytes upb did not parse.
const MAX_DEPTH: u32 = 128;

// String values this short are shared like keys (operation, model, tool and agent names,
// finish reasons, status words repeat across spans); longer ones are content, rarely equal.
const SHARED_VALUE_BYTES: usize = 32;

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const GROUP_START: u8 = 3;
const GROUP_END: u8 = 4;
const FIXED32: u8 = 5;

struct Malformed(&'static str);

impl From<Malformed> for PyErr {
    fn from(m: Malformed) -> PyErr {
        PyValueError::new_err(format!("not a protobuf message: {}", m.0))
    }
}

type Result<T> = std::result::Result<T, Malformed>;

/// One message's bytes, field by field.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Other,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Fields { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut out: u64 = 0;
        for i in 0..10 {
            let b = *self.buf.get(self.pos).ok_or(Malformed("truncated varint"))?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(Malformed("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or(Malformed("truncated field"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn fixed64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// Skips a group up to its end tag, nested groups included.
    fn skip_group(&mut self, number: u64, depth: u32) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Malformed("groups nested too deep"));
        }
        loop {
            if self.pos >= self.buf.len() {
                return Err(Malformed("unterminated group"));
            }
            let tag = self.varint()?;
            let (n, wt) = (tag >> 3, (tag & 7) as u8);
            match wt {
                GROUP_END if n == number => return Ok(()),
                GROUP_END => return Err(Malformed("mismatched end group")),
                GROUP_START => self.skip_group(n, depth + 1)?,
                _ => {
                    self.value(wt)?;
                }
            }
        }
    }

    fn value(&mut self, wt: u8) -> Result<Value<'a>> {
        Ok(match wt {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => Value::Fixed64(self.fixed64()?),
            LEN => {
                let n = self.varint()?;
                Value::Bytes(self.take(usize::try_from(n).map_err(|_| Malformed("length too large"))?)?)
            }
            FIXED32 => {
                self.take(4)?;
                Value::Other
            }
            _ => return Err(Malformed("invalid wire type")),
        })
    }

    /// The next field as (number, value); unknown groups are skipped on the way.
    fn next(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        loop {
            if self.pos >= self.buf.len() {
                return Ok(None);
            }
            let tag = self.varint()?;
            let (n, wt) = (tag >> 3, (tag & 7) as u8);
            if n == 0 {
                return Err(Malformed("field number 0"));
            }
            match wt {
                GROUP_START => self.skip_group(n, 0)?,
                GROUP_END => return Err(Malformed("end group without a start")),
                _ => return Ok(Some((n, self.value(wt)?))),
            }
        }
    }
}

fn utf8(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_err(|_| Malformed("a string field is not UTF-8"))
}

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

/// Attribute keys, short string values and ids seen in this request, one Python string
/// each: a request's spans repeat the same few keys and names, a trace's spans its id and
/// siblings their parent's, and every record then shares them instead of holding copies
/// (bench/held_memory.py: 1,625 -> 1,409 B per span held once short values were shared).
/// Bounded by the request.
struct Keys<'a, 'py> {
    py: Python<'py>,
    seen: HashMap<&'a [u8], Bound<'py, PyString>>,
    ids: HashMap<&'a [u8], PyObject>,
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
                let hex: String = raw.iter().flat_map(|&b| [HEX[(b >> 4) as usize] as char, HEX[(b & 15) as usize] as char]).collect();
                PyString::new(py, &hex).into_any().unbind()
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

/// A message's length-delimited field ``single`` (its last occurrence) and the occurrences
/// of field ``many``: a `KeyValue`'s key and value (1, 2), an event's name and attributes (2, 3).
fn one_and_many(msg: &[u8], single: u64, many: u64) -> Result<(&[u8], Vec<&[u8]>)> {
    let mut one: &[u8] = b"";
    let mut all = Vec::new();
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
fn key_value(kv: &[u8]) -> Result<(&[u8], Vec<&[u8]>)> {
    one_and_many(kv, 1, 2)
}

/// The occurrences of length-delimited field ``number`` of a message, in order.
fn repeated(msg: &[u8], number: u64) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut f = Fields::new(msg);
    while let Some((n, v)) = f.next()? {
        if let (true, Value::Bytes(b)) = (n == number, v) {
            out.push(b);
        }
    }
    Ok(out)
}

/// `KeyValue`s into ``out``, the last of a repeated key winning; only the keys
/// ``projection`` wants when there is one.
fn fill<'a, 'py>(keys: &mut Keys<'a, 'py>, out: &Bound<'py, PyDict>, kvs: &[&'a [u8]], depth: u32,
                 projection: Option<&Projection>) -> PyResult<()> {
    for kv in kvs {
        let (key, value) = key_value(kv)?;
        if projection.map_or(true, |p| p.wants(key)) {
            out.set_item(keys.get(key)?, any_value(keys, &value, depth)?)?;
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

/// ``Projection(names, prefixes)``: the span attributes some reader of records needs, by
/// name or by prefix (read/projection.py). The others never become Python objects: a span
/// carries a dozen no check reads (model names, request ids, temperatures), and held until
/// its run's verdict they were a third of a record's memory.
#[pyclass(frozen)]
struct Projection {
    names: HashSet<Vec<u8>>,
    prefixes: Vec<Vec<u8>>,
}

#[pymethods]
impl Projection {
    #[new]
    fn new(names: Vec<String>, prefixes: Vec<String>) -> Self {
        Projection {
            names: names.into_iter().map(String::into_bytes).collect(),
            prefixes: prefixes.into_iter().map(String::into_bytes).collect(),
        }
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
                return any_value(keys, &value, 0);
            }
        }
    }
    Ok(keys.py.None())
}

/// The attributes of a span's events named ``event_name``, or None when it has none.
fn named_events<'a, 'py>(keys: &mut Keys<'a, 'py>, events: &[&'a [u8]], event_name: &str) -> PyResult<PyObject> {
    let py = keys.py;
    let mut out: Option<Bound<'py, PyList>> = None;
    for event in events {
        let (name, kvs) = one_and_many(event, 2, 3)?;
        if utf8(name)? == event_name {
            out.get_or_insert_with(|| PyList::empty(py)).append(attributes(keys, &kvs, None)?)?;
        }
    }
    Ok(out.map_or_else(|| py.None(), |l| l.into_any().unbind()))
}

/// One span's row: (trace_id, span_id, parent_span_id, name, start, end, status code,
/// status message, attributes, named events); ids as ``Keys::id`` gives them.
fn span_row<'a, 'py>(keys: &mut Keys<'a, 'py>, span: &'a [u8], event_name: &str, projection: Option<&Projection>)
    -> PyResult<Bound<'py, PyTuple>> {
    let py = keys.py;
    let (mut trace_id, mut span_id, mut parent, mut name): (&[u8], &[u8], &[u8], &[u8]) = (b"", b"", b"", b"");
    let (mut start, mut end) = (0u64, 0u64);
    let mut kvs = Vec::new();
    let mut events = Vec::new();
    let mut status = Vec::new();
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
    for chunk in status {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            match (n, v) {
                (2, Value::Bytes(b)) => message = b,
                (3, Value::Varint(x)) => code = x as i32, // the low 32 bits, signed
                _ => {}
            }
        }
    }
    let attrs = attributes(keys, &kvs, projection)?;
    let events = if events.is_empty() { py.None() } else { named_events(keys, &events, event_name)? };
    PyTuple::new(py, [
        keys.id(trace_id, TRACE_ID_BYTES),
        keys.id(span_id, SPAN_ID_BYTES),
        keys.id(parent, SPAN_ID_BYTES),
        keys.text(name)?,
        start.into_pyobject(py)?.into_any().unbind(),
        end.into_pyobject(py)?.into_any().unbind(),
        code.into_pyobject(py)?.into_any().unbind(),
        PyString::new(py, utf8(message)?).into_any().unbind(),
        attrs.into_any().unbind(),
        events,
    ])
}

/// ``read_spans(data, version_key, event_name, projection=None) -> (versions, scopes)``:
/// ``versions[i]`` is the first ``version_key`` attribute of resource_spans[i]'s resource
/// (None when absent); ``scopes`` lists (i, j, rows) for resource_spans[i].scope_spans[j],
/// one row per span (``span_row``) in wire order, with only the span attributes
/// ``projection`` wants (every one without it). Events' attributes are all kept.
#[pyfunction]
#[pyo3(signature = (data, version_key, event_name, projection=None))]
fn read_spans<'py>(py: Python<'py>, data: &[u8], version_key: &str, event_name: &str,
                   projection: Option<PyRef<'py, Projection>>)
    -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let projection = projection.as_deref();
    guarded(|| read_request(py, data, version_key, |keys, span| span_row(keys, span, event_name, projection)))
}

/// ``read_logs(data) -> scopes``: an ``ExportLogsServiceRequest``'s (i, j, rows) for
/// resource_logs[i].scope_logs[j], one row per log record (``log_row``).
#[pyfunction]
fn read_logs<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
    guarded(|| read_request(py, data, "", log_row).map(|(_, scopes)| scopes))
}

// A panic would reach Python as pyo3's PanicException, a BaseException that the receivers'
// `except Exception` does not take: it must arrive as an ordinary error (a bug of ours,
// counted as an internal error), never end a worker thread.
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(PyRuntimeError::new_err("the compiled OTLP reader panicked")))
}

/// An export request of either signal: field 1 of the request, of its entries' scope
/// entries (field 2) and of their items (field 2) have the same shape in traces and logs.
fn read_request<'a, 'py>(py: Python<'py>, data: &'a [u8], version_key: &str,
                         mut row: impl FnMut(&mut Keys<'a, 'py>, &'a [u8]) -> PyResult<Bound<'py, PyTuple>>)
    -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let versions = PyList::empty(py);
    let scopes = PyList::empty(py);
    let mut keys = Keys { py, seen: HashMap::new(), ids: HashMap::new() };
    let mut request = Fields::new(data);
    let mut i = 0usize;
    while let Some((n, v)) = request.next()? {
        let rs = match (n, v) {
            (1, Value::Bytes(rs)) => rs,
            _ => continue,
        };
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
        if !version_key.is_empty() {
            versions.append(resource_value(&mut keys, &resource, version_key)?)?;
        }
        for (j, scope) in scope_entries.into_iter().enumerate() {
            let rows = PyList::empty(py);
            for item in repeated(scope, 2)? {
                rows.append(row(&mut keys, item)?)?;
            }
            scopes.append((i, j, rows))?;
        }
        i += 1;
    }
    Ok((versions, scopes))
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

/// What a record in flight costs before its attributes: the record, its id, its times and
/// the assembler's and evaluator's entries for it. Measured with bench/held_memory.py
/// (tracemalloc) on bench/live.py's workload: 650 puts the estimate within a few percent of
/// the measured bytes, where 200 made it about half.
const RECORD_BYTES: usize = 650;

/// ``Survey(indexed, flattened)(name, attrs) -> (size, any indexed, any flattened)``: one pass
/// over a span's attributes for read/conventions.py, whichever reader built them: the
/// record's approximate size (``RECORD_BYTES`` + the name's length + every key's, and every
/// string value's, other values 8; lengths in code points, as Python's ``len``), and whether any
/// key starts with one of the ``indexed`` prefixes, or of the ``flattened`` ones. It was a
/// third of building a record in Python.
#[pyclass(frozen)]
struct Survey {
    indexed: Vec<String>,
    flattened: Vec<String>,
}

#[pymethods]
impl Survey {
    #[new]
    fn new(indexed: Vec<String>, flattened: Vec<String>) -> Self {
        Survey { indexed, flattened }
    }

    fn __call__(&self, name: &Bound<'_, PyAny>, attrs: &Bound<'_, PyDict>) -> PyResult<(usize, bool, bool)> {
        let mut size = RECORD_BYTES + name.len()?;
        let (mut indexed, mut flattened) = (false, false);
        for (k, v) in attrs.iter() {
            let key = k.downcast::<PyString>()?;
            size += key.len()? + v.downcast::<PyString>().map_or(Ok(8), |s| s.len())?;
            if !(indexed && flattened) {
                // lossy: a key may hold a lone surrogate (OTLP/JSON escapes); the prefixes
                // are ASCII, so the test is the same
                let key = key.to_string_lossy();
                indexed = indexed || self.indexed.iter().any(|p| key.starts_with(p.as_str()));
                flattened = flattened || self.flattened.iter().any(|p| key.starts_with(p.as_str()));
            }
        }
        Ok((size, indexed, flattened))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_spans, m)?)?;
    m.add_function(wrap_pyfunction!(read_logs, m)?)?;
    m.add_class::<Survey>()?;
    m.add_class::<Projection>()?;
    m.add("RECORD_BYTES", RECORD_BYTES)
}
