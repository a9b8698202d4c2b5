//! The core's records as the package's `SpanRecord`s (model/records.py): what a reader gives
//! Python, built once per record at the edge.
//!
//! A record is a NamedTuple: it is allocated as its class's tuple with the items set, not
//! through the class's Python-level `__new__` (that call and its argument tuple were a
//! tenth of reading a span), and taken out of the cyclic collector at once (nothing in a
//! record can refer back to it: python/collector.rs says why that is sound). Short strings
//! are shared within a request (`Strings`), as the readers always shared them.

use faultgate_core::model::ids::{SpanId, TraceId};
use faultgate_core::model::attributes::{self, Attributes};
use faultgate_core::model::value::Value;
use faultgate_core::pyfmt::strs::char_len;
use faultgate_core::model::record::{Fields, SpanRecord, Str, ToolCall, ToolExecution};
use faultgate_core::read::attrs::Attr;
use faultgate_core::read::conventions::{Built, Kept};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple, PyType};

use crate::attributes::SpanAttributes;
use crate::convert::{text_of, to_py, value_of, Strings};
use crate::python::collector;
use crate::types::types;

/// `tuple.__new__(cls, fields)` without the call: the class's own allocator, then the
/// items, as tuple.__new__ fills them.
pub fn new_tuple<'py, const N: usize>(py: Python<'py>, cls: &Py<PyType>, fields: [Bound<'py, PyAny>; N])
    -> PyResult<Bound<'py, PyAny>> {
    let cls = cls.bind(py);
    // SAFETY: `cls` is a tuple subclass (types.rs checked it), whose tp_alloc makes a tuple
    // of N items, each NULL, owned by us alone; PyTuple_SetItem steals one reference per
    // item into it.
    unsafe {
        let tp = cls.as_type_ptr();
        let alloc: pyo3::ffi::allocfunc = std::mem::transmute(pyo3::ffi::PyType_GetSlot(tp, pyo3::ffi::Py_tp_alloc));
        let obj = alloc(tp, N as pyo3::ffi::Py_ssize_t);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let obj = Bound::from_owned_ptr(py, obj);
        for (i, item) in fields.into_iter().enumerate() {
            if pyo3::ffi::PyTuple_SetItem(obj.as_ptr(), i as pyo3::ffi::Py_ssize_t, item.into_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(untracked(obj))
    }
}

fn untracked(obj: Bound<'_, PyAny>) -> Bound<'_, PyAny> {
    collector::untrack(&obj);
    obj
}

fn tuple_of<'py, T>(py: Python<'py>, items: impl ExactSizeIterator<Item = T>,
                    mut one: impl FnMut(T) -> PyResult<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    if items.len() == 0 {
        return Ok(types(py)?.empty.bind(py).clone().into_any());
    }
    let out = items.map(&mut one).collect::<PyResult<Vec<_>>>()?;
    Ok(untracked(PyTuple::new(py, out)?.into_any()))
}

/// The span's own fields as Python objects: the caller's, or made from a core record.
pub struct Head<'py> {
    pub trace_id: Bound<'py, PyAny>,
    pub span_id: Bound<'py, PyAny>,
    /// `parent_id or None`
    pub parent: Bound<'py, PyAny>,
    pub name: Bound<'py, PyAny>,
    pub start: Bound<'py, PyAny>,
    pub end: Bound<'py, PyAny>,
    pub status_code: Bound<'py, PyAny>,
    pub message: Bound<'py, PyAny>,
}

/// The Python objects of attributes the caller handed in: (key, value) by `Attr::origin`.
pub type Origins<'py> = [(Bound<'py, PyAny>, Bound<'py, PyAny>)];

/// The `SpanRecord` of a span whose fields the conventions built (`Built`), its attributes
/// the `kept` ones (`attrs_of`: the core's, or the caller's objects where it handed some in).
pub fn from_built<'py>(py: Python<'py>, strings: &mut Strings<'py>, head: Head<'py>, f: &Built<'_>,
                       kept: &Kept<'_>, origins: &Origins<'py>) -> PyResult<Bound<'py, PyAny>> {
    let t = types(py)?;
    let mut text = |s: &[u8]| -> PyResult<Bound<'py, PyAny>> { Ok(strings.text(py, s)?.into_any()) };
    let operation = match &f.operation {
        Some(op) => text(op)?,
        None => py.None().into_bound(py),
    };
    let prompt = text(&f.prompt)?;
    let answer = text(&f.answer)?;
    let tool = match &f.tool {
        Some([name, args, result, call_id]) => {
            new_tuple(py, &t.tool_execution, [text(name)?, text(args)?, text(result)?, text(call_id)?])?
        }
        None => py.None().into_bound(py),
    };
    let calls = tuple_of(py, f.calls.iter(), |c| new_tuple(py, &t.tool_call, [text(&c[0])?, text(&c[1])?, text(&c[2])?]))?;
    let responses = tuple_of(py, f.responses.iter(), |r| {
        Ok(untracked(PyTuple::new(py, [text(&r[0])?, text(&r[1])?])?.into_any()))
    })?;
    let finish = tuple_of(py, f.finish.iter(), |r| text(r))?;
    let (attrs, kept_size) = attrs_of(py, strings, f, kept, origins)?;
    new_tuple(py, &t.span_record, [
        head.trace_id, head.span_id, head.parent, head.name, head.start, head.end, head.status_code, head.message,
        operation, attrs, prompt, answer, tool, calls, responses, finish,
        PyBool::new(py, f.shadowed).to_owned().into_any(),
        (f.size + kept_size).into_pyobject(py)?.into_any(), f.missing.into_pyobject(py)?.into_any(),
    ])
}

/// A record's attributes: the core's own, read from Python through `SpanAttributes`; none
/// kept share NO_ATTRS. Where the caller handed in an attribute the record keeps, the record
/// is the caller's objects in a dict, as it always was (build_span's callers: the vendor
/// formats, the log events, tests). With what the record's size counts for them
/// (`attributes::size`; the same for a dict as the core's would be).
fn attrs_of<'py>(py: Python<'py>, strings: &mut Strings<'py>, f: &Built<'_>, kept: &Kept<'_>,
                 origins: &Origins<'py>) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let callers = |a: &Attr<'_>| a.origin.is_some_and(|i| (i as usize) < origins.len());
    if !origins.is_empty() && f.attrs.items.iter().any(|a| callers(a) && f.keeps(&a.key, kept)) {
        let attrs = PyDict::new(py);
        let (mut items, mut text, mut scalars, mut others) = (0, 0, 0, 0);
        for a in f.attrs.items.iter().filter(|a| f.keeps(&a.key, kept)) {
            items += 1;
            text += char_len(&a.key) + a.val.as_text().map_or(0, char_len);
            scalars += usize::from(matches!(a.val, Value::Int(_) | Value::Float(_)));
            others += usize::from(!matches!(a.val, Value::Str(_) | Value::Int(_) | Value::Float(_)));
            let (k, v) = match a.origin.and_then(|i| origins.get(i as usize)) {
                Some((k, v)) => (k.clone(), v.clone()),
                None => (strings.text(py, &a.key)?.into_any(), to_py(py, &a.val, strings)?),
            };
            attrs.set_item(k, v)?;
        }
        return Ok((attrs.into_any(), attributes::size(items, text, scalars, others)));
    }
    let attrs = f.kept_attributes(kept);
    if attrs.is_empty() {
        return Ok((types(py)?.no_attrs.bind(py).clone(), 0));
    }
    let size = attrs.size();
    Ok((Bound::new(py, SpanAttributes::new(attrs))?.into_any(), size))
}

/// Ids already made in a request: a trace's spans share its id, siblings their parent's.
#[derive(Default)]
pub struct Ids<'py> {
    traces: Vec<(TraceId, Bound<'py, PyAny>)>,
    spans: Vec<(SpanId, Bound<'py, PyAny>)>,
}

impl<'py> Ids<'py> {
    pub fn trace(&mut self, py: Python<'py>, id: &TraceId) -> Bound<'py, PyAny> {
        if let Some((_, o)) = self.traces.iter().rev().take(4).find(|(t, _)| t == id) {
            return o.clone();
        }
        let o = id.with_text(|t| pyo3::types::PyString::new(py, t)).into_any();
        self.traces.push((id.clone(), o.clone()));
        o
    }

    pub fn span(&mut self, py: Python<'py>, id: &SpanId) -> Bound<'py, PyAny> {
        if let Some((_, o)) = self.spans.iter().rev().take(8).find(|(s, _)| s == id) {
            return o.clone();
        }
        let o = id.with_text(|t| pyo3::types::PyString::new(py, t)).into_any();
        self.spans.push((id.clone(), o.clone()));
        o
    }
}

/// SpanRecord's fields by position (model/records.py; tests pin the order).
pub mod field {
    pub const TRACE_ID: usize = 0;
    pub const SPAN_ID: usize = 1;
    pub const PARENT_ID: usize = 2;
    pub const NAME: usize = 3;
    pub const START_NS: usize = 4;
    pub const END_NS: usize = 5;
    pub const STATUS_CODE: usize = 6;
    pub const STATUS_MESSAGE: usize = 7;
    pub const OPERATION: usize = 8;
    pub const ATTRS: usize = 9;
    pub const PROMPT: usize = 10;
    pub const ANSWER: usize = 11;
    pub const TOOL: usize = 12;
    pub const CALLS: usize = 13;
    pub const RESPONSES: usize = 14;
    pub const FINISH_REASONS: usize = 15;
    pub const SHADOWED: usize = 16;
    pub const SIZE: usize = 17;
    pub const MISSING: usize = 18;
}

fn owned_text(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Str> {
    match o.downcast::<PyString>() {
        Ok(s) => Ok(text_of(s)?.as_ref().into()),
        Err(_) => Err(PyTypeError::new_err(format!("a record's {what} must be a str, not {}", o.get_type().name()?))),
    }
}

fn int_of(o: &Bound<'_, PyAny>, what: &str) -> PyResult<i128> {
    // 64 bits first: pyo3 reads a 128-bit int through Python's own calls under abi3
    if let Ok(v) = o.extract::<i64>() {
        return Ok(i128::from(v));
    }
    o.extract::<i128>().map_err(|_| PyTypeError::new_err(format!("a record's {what} must be an int")))
}

/// The items of a record's tuple field (any iterable, as Python would take it).
fn items<'py>(o: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    match o.downcast::<PyTuple>() {
        Ok(t) => Ok(t.iter().collect()),
        Err(_) => o.try_iter()?.collect(),
    }
}

/// A record's `attrs` as the core's: the core's own, shared, from a `SpanAttributes`; any
/// other mapping (a dict of a record built in Python) converted.
pub fn attributes_of(a: &Bound<'_, PyAny>) -> PyResult<Attributes> {
    if let Ok(m) = a.downcast::<SpanAttributes>() {
        return Ok(m.get().attrs.clone());
    }
    let mut items = Vec::new();
    if let Ok(d) = a.downcast::<PyDict>() {
        items.extend(d.iter());
    } else if a.len()? > 0 {
        for k in a.try_iter()? {
            let k = k?;
            let v = a.get_item(&k)?;
            items.push((k, v));
        }
    }
    let mut attrs = Vec::with_capacity(items.len());
    for (k, v) in &items {
        attrs.push((owned_text(k, "attribute key")?, value_of(v, 0)?));
    }
    Ok(Attributes::new(&attrs))
}

/// A `SpanRecord` (any tuple of its fields in order) as the core's record: every field
/// copied, once. What the core cannot hold (a time that is not an int) is a TypeError.
pub fn to_core(r: &Bound<'_, PyTuple>) -> PyResult<SpanRecord> {
    use field::*;
    let item = |i| r.get_item(i);
    let text_field = |i, what| -> PyResult<Str> { owned_text(&item(i)?, what) };
    let parent = item(PARENT_ID)?;
    let tool = item(TOOL)?;
    let tool = if tool.is_none() {
        None
    } else {
        let t = tool.downcast::<PyTuple>()?;
        Some(ToolExecution {
            name: owned_text(&t.get_item(0)?, "tool name")?,
            arguments: owned_text(&t.get_item(1)?, "tool arguments")?,
            result: owned_text(&t.get_item(2)?, "tool result")?,
            call_id: owned_text(&t.get_item(3)?, "tool call id")?,
        })
    };
    let mut calls = Vec::new();
    for c in items(&item(CALLS)?)? {
        let c = c.downcast::<PyTuple>()?;
        calls.push(ToolCall { call_id: owned_text(&c.get_item(0)?, "call id")?, name: owned_text(&c.get_item(1)?, "call name")?,
                              arguments: owned_text(&c.get_item(2)?, "call arguments")? });
    }
    let mut responses = Vec::new();
    for p in items(&item(RESPONSES)?)? {
        let p = p.downcast::<PyTuple>()?;
        responses.push((owned_text(&p.get_item(0)?, "response id")?, owned_text(&p.get_item(1)?, "response")?));
    }
    let mut finish_reasons = Vec::new();
    for f in items(&item(FINISH_REASONS)?)? {
        finish_reasons.push(owned_text(&f, "finish reason")?);
    }
    let attrs = attributes_of(&item(ATTRS)?)?;
    let operation = item(OPERATION)?;
    Ok(SpanRecord {
        trace_id: TraceId::parse(std::str::from_utf8(&text_field(TRACE_ID, "trace_id")?).unwrap_or("\u{fffd}")),
        span_id: SpanId::parse(std::str::from_utf8(&text_field(SPAN_ID, "span_id")?).unwrap_or("\u{fffd}")),
        parent_id: if parent.is_none() {
            None
        } else {
            Some(SpanId::parse(std::str::from_utf8(&owned_text(&parent, "parent_id")?).unwrap_or("\u{fffd}")))
        },
        name: text_field(NAME, "name")?,
        start_ns: int_of(&item(START_NS)?, "start_ns")?,
        end_ns: int_of(&item(END_NS)?, "end_ns")?,
        status_code: item(STATUS_CODE)?.extract::<i64>()?,
        status_message: text_field(STATUS_MESSAGE, "status_message")?,
        fields: Fields {
            operation: if operation.is_none() { None } else { Some(owned_text(&operation, "operation")?) },
            attrs,
            prompt: text_field(PROMPT, "prompt")?,
            answer: text_field(ANSWER, "answer")?,
            tool,
            calls,
            responses,
            finish_reasons,
            calls_shadowed_by_tool_spans: item(SHADOWED)?.is_truthy()?,
            size: item(SIZE)?.extract::<i64>()?,
            missing: item(MISSING)?.extract::<u32>()?,
        },
    })
}
