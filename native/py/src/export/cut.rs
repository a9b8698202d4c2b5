//! A received `ExportTraceServiceRequest` forwarded as it arrived, less its held roots.
//!
//! Why it exists: the forwarder took the roots it holds out of upb's parse of the request
//! and had upb serialize the rest: re-encoding every span of every request (~6% of a
//! span's CPU on the live bench's workload, bench/README.md) to send bytes the sender had
//! already written. Here the received bytes are copied, and only the entries that held a
//! root are written anew: each `ResourceSpans` and `ScopeSpans` around a cut span gets its
//! new length, everything else (other spans, resources, scopes, schema URLs, fields this
//! schema does not know, unknown groups) goes out byte for byte.
//!
//! Spans are numbered as `read_spans` numbers its records: in wire order over
//! `resource_spans` (field 1 of the request), their `scope_spans` (field 2) and their
//! `spans` (field 2); a field with another wire type is an unknown field, copied, not
//! counted, as upb and the reader take it. The bytes were accepted first (read/accept.rs), so they are
//! a valid request; anything that is not protobuf raises `ValueError`.
//!
//! For a request upb would write the same way (fields in field-number order, minimal
//! lengths, no unknown fields: what the OTel SDKs and the collector send), the cut request
//! is byte for byte what upb's serialization of the request without those spans was
//! (tests/export/test_forward.py compares them); for any other, it decodes to the same
//! message.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::intern;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::python::guard::guarded;
use crate::records::field as record;
use faultgate_core::wire::{put_len_head, utf8, Fields, Result, Value};

use crate::convert::OrRaise;

pub(super) const REQUEST_RESOURCE_SPANS: u64 = 1;
pub(super) const RESOURCE_SPANS_RESOURCE: u64 = 1;
pub(super) const RESOURCE_SPANS_SCOPE_SPANS: u64 = 2;
pub(super) const RESOURCE_SPANS_SCHEMA_URL: u64 = 3;
pub(super) const SCOPE_SPANS_SCOPE: u64 = 1;
pub(super) const SCOPE_SPANS_SPANS: u64 = 2;
pub(super) const SCOPE_SPANS_SCHEMA_URL: u64 = 3;
const SPAN_TRACE_ID: u64 = 1;
const SPAN_SPAN_ID: u64 = 2;
const SPAN_END_TIME: u64 = 8;

/// Walks the spans in reading order, each with its place: the numbering `cut` and
/// `spans_at` share with `read_spans`.
struct Numbering<'d> {
    marked: &'d [usize], // the spans to cut, or to read (ascending)
    next: usize,         // the number the next span gets
    at: usize,           // the first of ``marked`` not yet met
}

impl Numbering<'_> {
    /// True when the span now met is marked.
    fn meet(&mut self) -> bool {
        let marked = self.marked.get(self.at) == Some(&self.next);
        if marked {
            self.at += 1;
        }
        self.next += 1;
        marked
    }

    /// Every marked span has been met: the rest is copied without being walked.
    fn done(&self) -> bool {
        self.at == self.marked.len()
    }
}

/// What the cut changes in the request, in the order it lies there: a field's key and
/// length written anew (``data[at..body]`` replaced: a message inside it lost bytes), or a
/// span's field left out (``data[at..end]``).
enum Edit {
    Head { at: usize, body: usize, number: u64, len: usize },
    Drop { at: usize, end: usize },
}

fn varint_len(n: u64) -> usize {
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}

/// Bytes a field's key and length take when written anew (minimal varints, as upb writes).
fn head_len(number: u64, len: usize) -> usize {
    varint_len(number << 3 | 2) + varint_len(len as u64)
}

/// Where ``inner`` (a slice of ``outer``) starts in it.
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    inner.as_ptr() as usize - outer.as_ptr() as usize
}

/// The edits that cut the marked spans out of the messages of field ``number`` in ``msg``
/// (which starts at ``base`` in the request): ``inner`` finds each one's own edits and
/// returns how many bytes it lost; each message that lost some gets its head written
/// anew. Returns the bytes ``msg`` lost.
fn cut_in<'a>(msg: &'a [u8], base: usize, number: u64, numbering: &mut Numbering, edits: &mut Vec<Edit>,
              mut inner: impl FnMut(&'a [u8], usize, &mut Numbering, &mut Vec<Edit>) -> Result<usize>) -> Result<usize> {
    let mut lost = 0;
    let mut f = Fields::new(msg);
    while let Some((at, k, v)) = f.next_at()? {
        let (true, Value::Bytes(b)) = (k == number, v) else { continue };
        if numbering.done() {
            continue; // walked on only to refuse what is not protobuf, as upb's parse did
        }
        let body = base + offset_in(msg, b);
        let head = edits.len();
        edits.push(Edit::Drop { at: 0, end: 0 }); // its place: the head, once its length is known
        let gone = inner(b, body, numbering, edits)?;
        if gone == 0 {
            edits.truncate(head);
            continue;
        }
        let len = b.len() - gone;
        edits[head] = Edit::Head { at: base + at, body, number, len };
        lost += gone + (body - base - at) - head_len(number, len);
    }
    Ok(lost)
}

/// The spans marked in a `ScopeSpans` (at ``base``) left out: the bytes it lost.
fn cut_spans(scope: &[u8], base: usize, numbering: &mut Numbering, edits: &mut Vec<Edit>) -> Result<usize> {
    let mut lost = 0;
    let mut f = Fields::new(scope);
    while let Some((at, k, v)) = f.next_at()? {
        if let (SCOPE_SPANS_SPANS, Value::Bytes(_)) = (k, v) {
            if numbering.meet() {
                edits.push(Edit::Drop { at: base + at, end: base + f.offset() });
                lost += f.offset() - at;
            }
        }
    }
    Ok(lost)
}

/// ``data`` with ``edits`` made, written into ``out``, a buffer of exactly its new length.
///
/// # Safety
/// ``out`` must be valid for ``len`` bytes of writes; each write is checked against ``len``
/// before it is made, so the edits' arithmetic being wrong panics instead of overrunning.
unsafe fn apply(data: &[u8], edits: &[Edit], out: *mut u8, len: usize) {
    let mut w = 0;
    let mut put = |bytes: &[u8]| {
        assert!(w + bytes.len() <= len, "cut: the edits overrun the new request");
        // SAFETY: in bounds (asserted above); `data` is a Python bytes object's buffer and
        // `out` a new one's: they do not overlap
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.add(w), bytes.len()) };
        w += bytes.len();
    };
    let mut copied = 0;
    for e in edits {
        match *e {
            Edit::Head { at, body, number, len } => {
                put(&data[copied..at]);
                let mut head = Vec::with_capacity(10);
                put_len_head(&mut head, number, len);
                put(&head);
                copied = body;
            }
            Edit::Drop { at, end } => {
                put(&data[copied..at]);
                copied = end;
            }
        }
    }
    put(&data[copied..]);
    assert_eq!(w, len, "cut: the edits fall short of the new request");
}

/// A new bytes object of ``len`` bytes, written by ``apply`` (not zeroed first, as
/// `PyBytes::new_with` zeroes it: a second pass over every byte forwarded).
fn bytes_of<'py>(py: Python<'py>, data: &[u8], edits: &[Edit], len: usize) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) makes a bytes object whose n bytes are
    // ours to write until it is shared; `apply` writes every one of them (it asserts so)
    // before the object is handed out
    unsafe {
        let obj = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as pyo3::ffi::Py_ssize_t);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let obj = Bound::from_owned_ptr(py, obj);
        apply(data, edits, pyo3::ffi::PyBytes_AsString(obj.as_ptr()) as *mut u8, len);
        Ok(obj.downcast_into_unchecked())
    }
}

/// ``cut(data, drop) -> bytes``: the request without the spans numbered ``drop``
/// (ascending), in one pass that stops looking once the last of them is cut, and one copy:
/// the received bytes between the edits go straight into the new bytes object. An entry
/// emptied of its spans stays, as it stayed when upb serialized the request without them.
#[pyfunction]
fn cut<'py>(py: Python<'py>, data: &[u8], drop: Vec<usize>) -> PyResult<Bound<'py, PyBytes>> {
    if drop.windows(2).any(|w| w[0] >= w[1]) {
        return Err(PyValueError::new_err("cut: the spans to drop must be ascending"));
    }
    guarded("span export's cut", || {
        let mut numbering = Numbering { marked: &drop, next: 0, at: 0 };
        let mut edits = Vec::with_capacity(2 * drop.len() + 2);
        let lost = cut_in(data, 0, REQUEST_RESOURCE_SPANS, &mut numbering, &mut edits, |rs, base, n, e| {
            cut_in(rs, base, RESOURCE_SPANS_SCOPE_SPANS, n, e, cut_spans)
        }).or_raise()?;
        if !numbering.done() {
            return Err(PyValueError::new_err(format!("cut: the request holds {} spans", numbering.next)));
        }
        bytes_of(py, data, &edits, data.len() - lost)
    })
}

/// What a held root keeps of its request: its resource and scope encoded (their
/// occurrences concatenated: their merge, as upb parsed them), their schema URLs, the
/// span's own bytes, its end time and ids (raw).
type Piece<'py> = (Bound<'py, PyBytes>, String, Bound<'py, PyBytes>, String, Bound<'py, PyBytes>, u64,
                   Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// A message's occurrences of field ``number`` concatenated, and its last string field
/// ``schema`` (UTF-8).
fn framing(msg: &[u8], number: u64, schema: u64) -> Result<(Vec<u8>, &str)> {
    let (mut body, mut url): (Vec<u8>, &[u8]) = (Vec::new(), b"");
    let mut f = Fields::new(msg);
    while let Some((k, v)) = f.next()? {
        match (k, v) {
            (n, Value::Bytes(b)) if n == number => body.extend_from_slice(b),
            (n, Value::Bytes(b)) if n == schema => url = b,
            _ => {}
        }
    }
    Ok((body, utf8(url)?))
}

/// ``root_candidates(spans) -> [index]``: the records span export holds for their run's
/// verdict, a run's root or a nested agent (``invoke_agent``) and any span without a parent,
/// by their place among ``spans`` (a request's records, in its order).
#[pyfunction]
fn root_candidates(py: Python<'_>, spans: Vec<Bound<'_, PyTuple>>) -> PyResult<Vec<usize>> {
    guarded("span export's root_candidates", || {
        let mut out = Vec::new();
        let agent = intern!(py, faultgate_core::model::record::INVOKE_AGENT);
        for (i, s) in spans.iter().enumerate() {
            let parent = s.get_item(record::PARENT_ID)?;
            // the operation compared as Python compares it: a record may carry None there (a
            // str's text compared, not `==` with a str made for each span)
            let op = s.get_item(record::OPERATION)?;
            let is_agent = match op.downcast::<PyString>() {
                Ok(t) => t.to_str()? == faultgate_core::model::record::INVOKE_AGENT,
                Err(_) => op.eq(agent)?,
            };
            if parent.is_none() || !parent.is_truthy()? || is_agent {
                out.push(i);
            }
        }
        Ok(out)
    })
}

/// ``spans_at(data, at) -> (spans, [(resource, resource_schema, scope, scope_schema, span,
/// end_ns, trace_id, span_id)])``: how many spans the request holds, and the spans numbered
/// ``at`` (ascending) with what a held span keeps.
#[pyfunction]
fn spans_at<'py>(py: Python<'py>, data: &[u8], at: Vec<usize>) -> PyResult<(usize, Vec<Piece<'py>>)> {
    if at.windows(2).any(|w| w[0] >= w[1]) {
        return Err(PyValueError::new_err("spans_at: the spans must be ascending"));
    }
    guarded("span export's spans_at", || pieces(py, data, &at))
}

fn pieces<'py>(py: Python<'py>, data: &[u8], at: &[usize]) -> PyResult<(usize, Vec<Piece<'py>>)> {
    let mut out = Vec::with_capacity(at.len());
    let mut numbering = Numbering { marked: at, next: 0, at: 0 };
    let mut request = Fields::new(data);
    while let Some((k, v)) = request.next().or_raise()? {
        let (REQUEST_RESOURCE_SPANS, Value::Bytes(rs)) = (k, v) else { continue };
        let mut resource = None; // its framing, read at the first span held of it
        let mut scopes = Fields::new(rs);
        while let Some((k, v)) = scopes.next().or_raise()? {
            let (RESOURCE_SPANS_SCOPE_SPANS, Value::Bytes(ss)) = (k, v) else { continue };
            let mut scope = None;
            let mut spans = Fields::new(ss);
            while let Some((k, v)) = spans.next().or_raise()? {
                let (SCOPE_SPANS_SPANS, Value::Bytes(span)) = (k, v) else { continue };
                if !numbering.meet() {
                    continue;
                }
                if resource.is_none() {
                    resource = Some(framing(rs, RESOURCE_SPANS_RESOURCE, RESOURCE_SPANS_SCHEMA_URL).or_raise()?);
                }
                if scope.is_none() {
                    scope = Some(framing(ss, SCOPE_SPANS_SCOPE, SCOPE_SPANS_SCHEMA_URL).or_raise()?);
                }
                let ((resource, resource_schema), (scope, scope_schema)) =
                    (resource.as_ref().expect("read above"), scope.as_ref().expect("read above"));
                let (trace_id, span_id, end) = span_keys(span).or_raise()?;
                out.push((PyBytes::new(py, resource), (*resource_schema).to_owned(), PyBytes::new(py, scope),
                          (*scope_schema).to_owned(), PyBytes::new(py, span), end, PyBytes::new(py, trace_id),
                          PyBytes::new(py, span_id)));
            }
        }
    }
    if out.len() != at.len() {
        return Err(PyValueError::new_err(format!("spans_at: the request holds {} spans", numbering.next)));
    }
    Ok((numbering.next, out))
}

/// A span's trace id, span id and end time: the last occurrence of each, as upb keeps it.
fn span_keys(span: &[u8]) -> Result<(&[u8], &[u8], u64)> {
    let (mut trace_id, mut span_id, mut end): (&[u8], &[u8], u64) = (b"", b"", 0);
    let mut f = Fields::new(span);
    while let Some((k, v)) = f.next()? {
        match (k, v) {
            (SPAN_TRACE_ID, Value::Bytes(b)) => trace_id = b,
            (SPAN_SPAN_ID, Value::Bytes(b)) => span_id = b,
            (SPAN_END_TIME, Value::Fixed64(x)) => end = x,
            _ => {}
        }
    }
    Ok((trace_id, span_id, end))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cut, m)?)?;
    m.add_function(wrap_pyfunction!(root_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(spans_at, m)?)
}
