//! The OTLP protobuf readers for Python: `read_spans`, the core's reader
//! (native/core/src/read/otlp_proto.rs) giving `SpanRecord`s, and `read_logs`, an
//! `ExportLogsServiceRequest`'s bytes -> one tuple per log record for read/otlp_logs.py.

use std::collections::HashMap;

use faultgate_core::read::bounds::check_any_value;
use faultgate_core::read::conventions::Kept;
use faultgate_core::read::otlp_proto::{self as core, key_value, resource_and_scopes};
use faultgate_core::wire::{repeated, utf8, Fields, Malformed, Value, MAX_DEPTH};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::convert::{OrRaise, Strings};
use crate::records::{from_built, Head, Ids};

// String values this short are shared like keys (operation, model, tool and agent names,
// finish reasons, status words repeat across spans); longer ones are content, rarely equal.
const SHARED_VALUE_BYTES: usize = 32;

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;

/// `Projection(kept)`: the span attributes some reader of records needs (the core's
/// `Projection`).
#[pyclass(frozen)]
pub struct Projection(core::Projection);

#[pymethods]
impl Projection {
    #[new]
    fn new(kept: Vec<String>) -> Self {
        Projection(core::Projection::new(kept.into_iter().map(String::into_bytes)))
    }
}

/// A Python exception, or the core's error to raise as one.
struct Raise(PyErr);

impl From<faultgate_core::error::Error> for Raise {
    fn from(e: faultgate_core::error::Error) -> Raise {
        Raise(crate::convert::py_err(e))
    }
}

impl From<PyErr> for Raise {
    fn from(e: PyErr) -> Raise {
        Raise(e)
    }
}

impl From<std::convert::Infallible> for Raise {
    fn from(e: std::convert::Infallible) -> Raise {
        match e {}
    }
}

/// ``read_spans(data, version_key, event_name, projection=None) -> (records, rejected,
/// first_problem)``: the ``SpanRecord`` of every span of the request in wire order, but
/// those whose ids are malformed or whose attributes are past a bound (the core's
/// read/bounds.rs): those are listed (``rejected``: each one's ``(i, j, k, reason)``,
/// reason ``invalid_span`` or ``too_deep``) and the first is named.
/// Each record is made straight from what the core's conventions built of the request's
/// bytes.
#[pyfunction]
#[pyo3(signature = (data, version_key, event_name, projection=None))]
fn read_spans<'py>(py: Python<'py>, data: &[u8], version_key: &str, event_name: &str,
                   projection: Option<PyRef<'py, Projection>>)
    -> PyResult<(Bound<'py, PyList>, Vec<core::Rejection>, String)> {
    let projection = projection.as_deref().map(|p| &p.0);
    guarded(|| {
        let out = PyList::empty(py);
        let (mut strings, mut ids) = (Strings::default(), Ids::default());
        let kept = match projection {
            Some(p) => Kept::Names(&p.kept),
            None => Kept::All,
        };
        let (rejected, first) = core::each_span(data, version_key, event_name, projection, |h, built| {
            let parent = match &h.parent_id {
                Some(p) => ids.span(py, p),
                None => py.None().into_bound(py),
            };
            let head = Head {
                trace_id: ids.trace(py, &h.trace_id),
                span_id: ids.span(py, &h.span_id),
                parent,
                name: strings.text(py, h.name)?.into_any(),
                start: h.start_ns.into_pyobject(py)?.into_any(),
                end: h.end_ns.into_pyobject(py)?.into_any(),
                status_code: h.status_code.into_pyobject(py)?.into_any(),
                message: strings.text(py, h.status_message)?.into_any(),
            };
            out.append(from_built(py, &mut strings, head, &built, &kept, &[])?)?;
            Ok::<(), Raise>(())
        }).map_err(|r| r.0)?;
        Ok((out, rejected, first))
    })
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
        return Err(Malformed("values nested too deep")).or_raise();
    }
    let mut member = Member::Unset;
    for chunk in chunks {
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next().or_raise()? {
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
                for b in repeated(part, 1).or_raise()? {
                    out.append(any_value(keys, &[b], depth + 1)?)?;
                }
            }
            out.into_any().unbind()
        }
        Member::KvList(parts) => {
            let out = PyDict::new(py);
            for part in parts {
                fill(keys, &out, &repeated(part, 1).or_raise()?, depth + 1, None)?;
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
            PyString::new(self.py, utf8(b).or_raise()?).into_any().unbind()
        })
    }

    fn get(&mut self, key: &'a [u8]) -> PyResult<Bound<'py, PyString>> {
        if let Some(k) = self.seen.get(key) {
            return Ok(k.clone());
        }
        // bounded by the request: at most one entry per KeyValue in it. Not interned
        // (`PyString::intern`): CPython 3.12.0-3.12.4 made every interned string immortal,
        // and keys come from the wire; sharing within a request is almost all the gain.
        let k = PyString::new(self.py, utf8(key).or_raise()?);
        self.seen.insert(key, k.clone());
        Ok(k)
    }
}

/// `KeyValue`s into ``out``, the last of a repeated key winning; only the keys
/// ``projection`` wants when there is one.
fn fill<'a, 'py>(keys: &mut Keys<'a, 'py>, out: &Bound<'py, PyDict>, kvs: &[&'a [u8]], depth: u32,
                 projection: Option<&Projection>) -> PyResult<()> {
    for kv in kvs {
        let (key, value) = key_value(kv).or_raise()?;
        if projection.map_or(true, |p| p.0.wants(key)) {
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

/// ``read_logs(data) -> scopes``: an ``ExportLogsServiceRequest``'s (i, j, rows) for
/// resource_logs[i].scope_logs[j], one row per log record (``log_row``).
#[pyfunction]
fn read_logs<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
    guarded(|| {
        let scopes = PyList::empty(py);
        let mut keys = Keys { py, seen: FastMap::default(), ids: FastMap::default() };
        let mut request = Fields::new(data);
        let mut i = 0usize;
        while let Some((n, v)) = request.next().or_raise()? {
            let rl = match (n, v) {
                (1, Value::Bytes(rl)) => rl,
                _ => continue,
            };
            // the logs request has the traces request's shape: field 1 of the request, of
            // its entries' scope entries (field 2) and of their items (field 2)
            let (_, scope_entries) = resource_and_scopes(rl).or_raise()?;
            for (j, scope) in scope_entries.into_iter().enumerate() {
                let rows = PyList::empty(py);
                for item in repeated(scope, 2).or_raise()? {
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
/// body, over); ids as ``Keys::id`` gives them, the body None when absent (as when empty);
/// ``over`` names the bound its body and attributes are past (the core's read/bounds.rs),
/// "" when within them: then neither is read (attributes ``{}``, body None).
fn log_row<'a, 'py>(keys: &mut Keys<'a, 'py>, record: &'a [u8]) -> PyResult<Bound<'py, PyTuple>> {
    let py = keys.py;
    let (mut trace_id, mut span_id, mut event_name): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let (mut time, mut observed) = (0u64, 0u64);
    let mut kvs = Vec::new();
    let mut body = Vec::new();
    let mut f = Fields::new(record);
    while let Some((n, v)) = f.next().or_raise()? {
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
    let mut seen = 0usize;
    let mut over = check_any_value(&body, &mut seen).or_raise()?;
    for kv in &kvs {
        if over.is_err() {
            break;
        }
        over = check_any_value(key_value(kv).or_raise()?.1.as_slice(), &mut seen).or_raise()?;
    }
    let (attrs, body, over) = match over {
        Ok(()) => (attributes(keys, &kvs, None)?, any_value(keys, &body, 0)?, String::new()),
        Err(o) => (PyDict::new(py), py.None(), o.message()),
    };
    PyTuple::new(py, [
        keys.id(trace_id, TRACE_ID_BYTES),
        keys.id(span_id, SPAN_ID_BYTES),
        time.into_pyobject(py)?.into_any().unbind(),
        observed.into_pyobject(py)?.into_any().unbind(),
        PyString::new(py, utf8(event_name).or_raise()?).into_any().unbind(),
        attrs.into_any().unbind(),
        body,
        PyString::new(py, &over).into_any().unbind(),
    ])
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_spans, m)?)?;
    m.add_function(wrap_pyfunction!(read_logs, m)?)?;
    m.add_class::<Projection>()
}
