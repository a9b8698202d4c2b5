//! One span's attributes, in whichever convention wrote them, -> ``SpanRecord``.
//!
//! Three conventions meet here (see ../shared/reference/telemetry-conventions.md):
//!
//! - OTel GenAI: ``gen_ai.operation.name``; content in ``gen_ai.input.messages`` /
//!   ``gen_ai.output.messages`` with ``parts`` (``text``, ``tool_call``, ``tool_call_response``
//!   whose payload is under ``response`` in the schema and ``result`` in older examples), or
//!   the legacy ``gen_ai.prompt`` / ``gen_ai.completion``; tool spans carry
//!   ``gen_ai.tool.call.arguments`` / ``.result``. Here.
//! - OpenInference (openinference.rs) and OpenLLMetry (openllmetry.rs).
//!
//! Every reader builds its records here: the protobuf and OTLP/JSON readers from the bytes
//! (only the attributes a record keeps become Python objects), and ``build_span`` (read/
//! conventions.py's name) from a dict, for the vendor formats, the log events and tests.
//! tests/read/conventions_oracle.py is the Python this replaced; tests/read/
//! test_conventions_parity.py holds the two equal on every recorded trace and on generated
//! attributes.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyFrozenSet, PyString, PyTuple};
use std::borrow::Cow;
use std::collections::HashSet;

use crate::python::collector;
use crate::read::attrs::{Attr, Attrs, RECORD_BYTES};
use crate::read::openinference::{self, OI_MESSAGES};
use crate::read::openllmetry::{self, TL_INDEXED};
use crate::read::payload::{
    lc_tool_result, load_json, messages_and_text, parts, render, role_text_of, str_get, unrepr_messages,
    call_arguments,
};
use crate::read::text::{lower, strip};
use crate::read::value::{borrowed_text, from_py, Strings, Text, V};

pub const OI_KIND: &str = "openinference.span.kind";
pub const TL_KIND: &str = "traceloop.span.kind";
pub const INVOKE_AGENT: &str = "invoke_agent";
pub const EXECUTE_TOOL: &str = "execute_tool";

// model/records.py's MISSING_* flags
pub const MISSING_INPUT: u32 = 1;
pub const MISSING_OUTPUT: u32 = 2;
pub const MISSING_FINISH: u32 = 4;
pub const MISSING_TOOL_ARGUMENTS: u32 = 8;
pub const MISSING_TOOL_RESULT: u32 = 16;

/// Content the record carries parsed; the raw attribute is not kept beside it.
pub const CONTENT_KEYS: [&str; 9] = [
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.prompt",
    "gen_ai.completion", "input.value", "output.value", "traceloop.entity.input", "traceloop.entity.output",
];
pub const TOOL_CONTENT_KEYS: [&str; 3] = ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "tool.parameters"];
pub const USER_KEYS: [&str; 4] = ["enduser.id", "user.id", "user_id", "userId"];
/// Operations of a model call: the spans whose messages and finish reasons checks read.
const MODEL_OPERATIONS: [&str; 3] = ["chat", "text_completion", "generate_content"];
/// Every other attribute a record is built from (with CONTENT_KEYS, TOOL_CONTENT_KEYS,
/// USER_KEYS and the prefixes of indexed and flattened messages): a reader may leave any
/// other out (read/projection.py). A name read here and missing from these is an attribute
/// the live service never sees (tests/read/test_projection.py reads every recorded trace
/// both ways).
const READ_OTHERS: [&str; 17] = [
    OI_KIND, TL_KIND, "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.response.finish_reasons", "gen_ai.agent.name", "error.type", "metadata", "tool.name", "tool.id",
    "tool_call.id", "llm.token_count.prompt", "llm.token_count.completion", "llm.finish_reason",
    "llm.response.finish_reason", "traceloop.entity.name",
];

/// What a framework writes as the answer when its own step budget ended the run: the run
/// ended at its step limit without an answer (LangGraph's prebuilt agent at recursion_limit).
const BUDGET_ANSWERS: [&str; 1] = ["Sorry, need more steps to process this request."];

// Framework payloads are recognised by a marker before anything is decoded: most tool
// spans carry plain arguments and results, and pay one substring test each.
const CALLBACK_MARKERS: [&[u8]; 2] = [b"\"input_str\"", b"\"kwargs\""];
const LC_MARKERS: [&[u8]; 2] = [b"\"lc\"", b"\"data\""];

/// The markers' searchers, built once: building one costs more than a search of the
/// ~200-byte payloads most tool spans carry.
fn markers() -> &'static [[memchr::memmem::Finder<'static>; 2]; 2] {
    static MARKERS: std::sync::OnceLock<[[memchr::memmem::Finder<'static>; 2]; 2]> = std::sync::OnceLock::new();
    MARKERS.get_or_init(|| {
        let f = |m: [&'static [u8]; 2]| m.map(memchr::memmem::Finder::new);
        [f(CALLBACK_MARKERS), f(LC_MARKERS)]
    })
}

pub fn read_names() -> impl Iterator<Item = &'static str> {
    CONTENT_KEYS.into_iter().chain(TOOL_CONTENT_KEYS).chain(USER_KEYS).chain(READ_OTHERS)
}

pub fn read_prefixes() -> impl Iterator<Item = &'static str> {
    TL_INDEXED.into_iter().chain(OI_MESSAGES)
}

/// The span's own fields, which the record takes as they are.
pub struct Span<'a, 'py> {
    pub trace_id: Bound<'py, PyAny>,
    pub span_id: Bound<'py, PyAny>,
    /// ``parent_id or None``
    pub parent: Bound<'py, PyAny>,
    pub has_parent: bool,
    pub name: Text<'a>,
    pub name_py: Bound<'py, PyAny>,
    pub start: Bound<'py, PyAny>,
    pub end: Bound<'py, PyAny>,
    pub status_code: Bound<'py, PyAny>,
    /// ``status_code == 2``
    pub failed: bool,
    pub message: Text<'a>,
    pub message_py: Bound<'py, PyAny>,
}

/// What the conventions make of a span: the record's other fields.
pub struct Fields<'a, 'py> {
    pub operation: Option<Text<'a>>,
    pub attrs: Attrs<'a, 'py>,
    pub is_tool: bool,
    pub prompt: Text<'a>,
    pub answer: Text<'a>,
    /// (name, arguments, result, call id)
    pub tool: Option<[Text<'a>; 4]>,
    /// (call id, name, arguments)
    pub calls: Vec<[Text<'a>; 3]>,
    /// (call id, result)
    pub responses: Vec<[Text<'a>; 2]>,
    pub finish: Vec<Text<'a>>,
    pub shadowed: bool,
    pub size: usize,
    pub missing: u32,
}

/// ``"" if v is None else str(v)``.
pub fn str_or_empty<'a, 'py>(py: Python<'py>, v: Option<&V<'a, 'py>>) -> PyResult<Text<'a>> {
    match v {
        None | Some(V::Null) => Ok(Cow::Borrowed(b"")),
        Some(v) => v.py_str(py),
    }
}

/// What a tool span did not record: an absent attribute, not an empty one (a tool may take
/// no arguments or return nothing). A tool that failed (status error, ``error.type``)
/// returned no result: its error is what was recorded, so no result is missing.
pub fn tool_missing(_py: Python<'_>, a: &Attrs<'_, '_>, arguments: &str, result: &str, failed_status: bool)
    -> PyResult<u32> {
    let failed = failed_status || a.get("error.type").map_or(Ok(false), V::truthy)?;
    Ok((if a.has(arguments) { 0 } else { MISSING_TOOL_ARGUMENTS })
        | (if a.has(result) || failed { 0 } else { MISSING_TOOL_RESULT }))
}

pub fn model_missing(has_input: bool, has_output: bool, has_finish: bool) -> u32 {
    (if has_input { 0 } else { MISSING_INPUT }) | (if has_output { 0 } else { MISSING_OUTPUT })
        | (if has_finish { 0 } else { MISSING_FINISH })
}

/// A budget answer is no answer: the attributes say the step limit ended the run instead.
pub fn budget_ended<'a, 'py>(a: &mut Attrs<'a, 'py>, answer: &mut Text<'a>) {
    if answer.is_empty() {
        return;
    }
    let s = strip(answer);
    if BUDGET_ANSWERS.iter().any(|b| b.as_bytes() == s) {
        let mut why = b"step limit: ".to_vec();
        why.extend_from_slice(s);
        a.setdefault("faultgate.termination", V::Str(Cow::Owned(why)));
        *answer = Cow::Borrowed(b"");
    }
}

pub fn finish_reasons<'a, 'py>(py: Python<'py>, raw: &V<'a, 'py>) -> PyResult<Vec<Text<'a>>> {
    Ok(match raw {
        V::Null => Vec::new(),
        V::List(items) => items.iter().map(|r| r.py_str(py)).collect::<PyResult<_>>()?,
        V::Py(o) if o.is_instance_of::<PyTuple>() => {
            let mut out = Vec::new();
            for r in o.try_iter()? {
                out.push(from_py(&r?, 0)?.py_str(py).map(|t| Cow::Owned(t.into_owned()))?);
            }
            out
        }
        other => vec![other.py_str(py)?],
    })
}

/// The tool_call parts of output messages.
pub fn calls<'a, 'py>(py: Python<'py>, outputs: &[V<'a, 'py>]) -> PyResult<Vec<[Text<'a>; 3]>> {
    let mut out = Vec::new();
    for m in outputs {
        for p in parts(m) {
            if p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("tool_call")) {
                out.push([str_get(py, p, "id", "")?, str_get(py, p, "name", "unknown")?,
                          render(py, p.get("arguments").unwrap_or(&V::Null))?]);
            }
        }
    }
    Ok(out)
}

/// (call id, result) of the tool_call_response parts of input messages; a result the part
/// says failed reads as an error.
pub fn responses<'a, 'py>(py: Python<'py>, inputs: &[V<'a, 'py>]) -> PyResult<Vec<[Text<'a>; 2]>> {
    let mut out = Vec::new();
    for m in inputs {
        for p in parts(m) {
            if !(p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("tool_call_response"))) {
                continue;
            }
            let Some(id) = p.get("id") else { continue };
            if !id.truthy()? {
                continue;
            }
            // The schema names the field ``response``; attribute-table examples say ``result``.
            let payload = match p.get("result") {
                Some(r) => r,
                None => p.get("response").unwrap_or(&V::Null),
            };
            let mut res = render(py, payload)?;
            let failed = matches!(p.get("is_error"), Some(V::Bool(true)))
                || p.get("error").map_or(Ok(false), V::truthy)?
                || {
                    let status = lower(py, str_get(py, p, "status", "")?)?;
                    &*status == b"error" || &*status == b"failed"
                };
            if failed && !res.starts_with(b"Error: ") {
                let mut r = b"Error: ".to_vec();
                r.extend_from_slice(&res);
                res = Cow::Owned(r);
            }
            out.push([id.py_str(py)?, res]);
        }
    }
    Ok(out)
}

/// Arguments as the tool got them, when the span holds a framework's callback payload.
fn tool_arguments<'a, 'py>(py: Python<'py>, raw: Text<'a>) -> PyResult<Text<'a>> {
    if raw.first() == Some(&b'{') && markers()[0].iter().any(|m| m.find(&raw).is_some()) {
        if let Some(unwrapped) = call_arguments(py, &load_json(py, &V::Str(raw.clone()))?)? {
            return Ok(unwrapped);
        }
    }
    Ok(raw)
}

/// A result as the tool returned it, when the span holds a serialised LangChain message.
fn tool_result<'a, 'py>(py: Python<'py>, raw: Text<'a>) -> PyResult<Text<'a>> {
    if raw.first() == Some(&b'{') && markers()[1].iter().any(|m| m.find(&raw).is_some()) {
        if let Some(content) = lc_tool_result(py, &load_json(py, &V::Str(raw.clone()))?)? {
            return Ok(content);
        }
    }
    Ok(raw)
}

/// The record's fields from the span and its attributes (every convention).
pub fn build<'a, 'py>(py: Python<'py>, span: &Span<'a, 'py>, attrs: Attrs<'a, 'py>) -> PyResult<Fields<'a, 'py>> {
    if attrs.has(OI_KIND) {
        return openinference::build(py, span, attrs);
    }
    let mut attrs = if attrs.has(TL_KIND) || attrs.any_key_starting(&TL_INDEXED) {
        openllmetry::map(py, &attrs)?
    } else {
        attrs
    };
    let operation = match attrs.get("gen_ai.operation.name") {
        None | Some(V::Null) => None,
        Some(op) => Some(op.py_str(py)?),
    };
    let name: &[u8] = &span.name;
    // A tool span: the operation says so, or, when the exporter left it out, the semconv
    // span name does (``execute_tool`` / ``execute_tool {gen_ai.tool.name}``).
    let is_tool = match &operation {
        Some(op) => &**op == EXECUTE_TOOL.as_bytes(),
        None => name == EXECUTE_TOOL.as_bytes() || name.starts_with(b"execute_tool "),
    };
    let tool = if is_tool {
        let tool_name = match attrs.get("gen_ai.tool.name") {
            Some(t) if t.truthy()? => t.py_str(py)?,
            _ => {
                let bare = strip(name.strip_prefix(EXECUTE_TOOL.as_bytes()).unwrap_or(name));
                if bare.is_empty() {
                    span.name.clone()
                } else {
                    sub(&span.name, bare)
                }
            }
        };
        Some([
            tool_name,
            tool_arguments(py, str_or_empty(py, attrs.get("gen_ai.tool.call.arguments"))?)?,
            tool_result(py, str_or_empty(py, attrs.get("gen_ai.tool.call.result"))?)?,
            str_or_empty(py, attrs.get("gen_ai.tool.call.id"))?,
        ])
    } else {
        None
    };
    let raw_in = attrs.get("gen_ai.input.messages").filter(|v| !v.is_none());
    let raw_out = attrs.get("gen_ai.output.messages").filter(|v| !v.is_none());
    let (inputs, mut prompt) = messages_and_text(py, raw_in.unwrap_or(&V::Null), "user")?;
    let (mut outputs, mut answer) = messages_and_text(py, raw_out.unwrap_or(&V::Null), "assistant")?;
    if answer.starts_with(b"{'") {
        // a Python repr of the whole assistant message is not an answer: read what it holds
        outputs = unrepr_messages(py, outputs)?;
        answer = role_text_of(py, &outputs, "assistant")?;
    }
    let finish = attrs.get("gen_ai.response.finish_reasons").filter(|v| !v.is_none());
    let mut missing = 0;
    if tool.is_some() {
        missing = tool_missing(py, &attrs, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", span.failed)?;
    } else if operation.as_deref().is_some_and(|op| MODEL_OPERATIONS.iter().any(|m| m.as_bytes() == op)) {
        missing = model_missing(raw_in.is_some() || attrs.has("gen_ai.prompt"),
                                raw_out.is_some() || attrs.has("gen_ai.completion"), finish.is_some());
    }
    let finish = match finish {
        Some(f) => finish_reasons(py, f)?,
        None => Vec::new(),
    };
    budget_ended(&mut attrs, &mut answer);
    if prompt.is_empty() {
        prompt = str_or_empty(py, attrs.get("gen_ai.prompt"))?;
    }
    if answer.is_empty() {
        answer = str_or_empty(py, attrs.get("gen_ai.completion"))?;
    }
    Ok(Fields {
        operation,
        size: attrs.size(name),
        calls: calls(py, &outputs)?,
        responses: responses(py, &inputs)?,
        attrs,
        is_tool,
        prompt,
        answer,
        tool,
        finish,
        shadowed: false,
        missing,
    })
}

/// ``part`` (a slice of ``whole``'s bytes) as text borrowed as long as ``whole`` is.
fn sub<'a>(whole: &Text<'a>, part: &[u8]) -> Text<'a> {
    match whole {
        Cow::Borrowed(w) => {
            let start = part.as_ptr() as usize - w.as_ptr() as usize;
            Cow::Borrowed(&w[start..start + part.len()])
        }
        Cow::Owned(_) => Cow::Owned(part.to_vec()),
    }
}

// ------------------------------------------------------------------ the record

/// model/records.py's classes and the values records share, looked up once.
pub struct Records {
    span_record: Py<PyAny>,
    tool_execution: Py<PyAny>,
    tool_call: Py<PyAny>,
    no_attrs: Py<PyAny>,
    empty: Py<PyTuple>,
    pub from_attributes: Py<PyAny>,
    pub evaluations_key: String,
}

static RECORDS: GILOnceCell<Records> = GILOnceCell::new();

pub fn records(py: Python<'_>) -> PyResult<&'static Records> {
    RECORDS.get_or_try_init(py, || -> PyResult<Records> {
        let m = py.import("faultgate_stream.model.records")?;
        let events = py.import("faultgate_stream.read.events")?;
        for cls in ["SpanRecord", "ToolExecution", "ToolCall"] {
            // new_tuple allocates them as tuples: they must be tuple subclasses
            if !m.getattr(cls)?.downcast::<pyo3::types::PyType>()?.is_subclass_of::<PyTuple>()? {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("{cls} is not a tuple")));
            }
        }
        Ok(Records {
            span_record: m.getattr("SpanRecord")?.unbind(),
            tool_execution: m.getattr("ToolExecution")?.unbind(),
            tool_call: m.getattr("ToolCall")?.unbind(),
            no_attrs: m.getattr("NO_ATTRS")?.unbind(),
            empty: PyTuple::empty(py).unbind(),
            from_attributes: events.getattr("from_attributes")?.unbind(),
            evaluations_key: events.getattr("EVALUATIONS")?.extract()?,
        })
    })
}

/// The only attributes a record keeps (read/projection.py), or all but content.
pub enum Kept<'k, 'py> {
    All,
    Names(&'k HashSet<Vec<u8>, foldhash::fast::RandomState>),
    PySet(Bound<'py, PyAny>),
}

impl Records {
    /// ``tuple.__new__(cls, fields)`` without the call: the class's own allocator (a
    /// NamedTuple is a tuple subclass of no other state), then the items, as tuple.__new__
    /// fills them. The call and its argument tuple were a tenth of reading a span.
    fn new_tuple<'py, const N: usize>(&self, py: Python<'py>, cls: &Py<PyAny>, fields: [Bound<'py, PyAny>; N])
        -> PyResult<Bound<'py, PyAny>> {
        let cls = cls.bind(py).downcast::<pyo3::types::PyType>()?;
        // SAFETY: `cls` is a tuple subclass (checked when the classes were looked up), whose
        // tp_alloc makes a tuple of N items, each NULL, owned by us alone; PyTuple_SetItem
        // steals one reference per item into it.
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

    /// The ``SpanRecord`` of ``span`` and what the conventions made of it.
    pub fn record<'py>(&self, py: Python<'py>, strings: &mut Strings<'py>, span: &Span<'_, 'py>,
                       f: Fields<'_, 'py>, kept: &Kept<'_, 'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut text = |t: &[u8]| -> PyResult<Bound<'py, PyAny>> { Ok(strings.text(py, t)?.into_any()) };
        let operation = match &f.operation {
            Some(op) => text(op)?,
            None => py.None().into_bound(py),
        };
        let prompt = text(&f.prompt)?;
        let answer = text(&f.answer)?;
        let tool = match &f.tool {
            Some([name, args, result, call_id]) => {
                self.new_tuple(py, &self.tool_execution, [text(name)?, text(args)?, text(result)?, text(call_id)?])?
            }
            None => py.None().into_bound(py),
        };
        let calls = self.tuple_of(py, f.calls.iter(), |c| {
            self.new_tuple(py, &self.tool_call, [text(&c[0])?, text(&c[1])?, text(&c[2])?])
        })?;
        let responses = self.tuple_of(py, f.responses.iter(), |r| {
            Ok(untracked(PyTuple::new(py, [text(&r[0])?, text(&r[1])?])?.into_any()))
        })?;
        let finish = self.tuple_of(py, f.finish.iter(), |r| text(r))?;
        let attrs = self.kept(py, strings, &f.attrs, f.is_tool, kept)?;
        self.new_tuple(py, &self.span_record, [
            span.trace_id.clone(), span.span_id.clone(), span.parent.clone(), span.name_py.clone(),
            span.start.clone(), span.end.clone(), span.status_code.clone(), span.message_py.clone(),
            operation, attrs, prompt, answer, tool, calls, responses, finish,
            pyo3::types::PyBool::new(py, f.shadowed).to_owned().into_any(),
            f.size.into_pyobject(py)?.into_any(), f.missing.into_pyobject(py)?.into_any(),
        ])
    }

    fn tuple_of<'py, T>(&self, py: Python<'py>, items: impl ExactSizeIterator<Item = T>,
                        mut one: impl FnMut(T) -> PyResult<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        if items.len() == 0 {
            return Ok(self.empty.bind(py).clone().into_any());
        }
        let out = items.map(&mut one).collect::<PyResult<Vec<_>>>()?;
        Ok(untracked(PyTuple::new(py, out)?.into_any()))
    }

    /// ``attrs`` without message content, or only its ``kept`` keys.
    fn kept<'py>(&self, py: Python<'py>, strings: &mut Strings<'py>, a: &Attrs<'_, 'py>, is_tool: bool,
                 kept: &Kept<'_, 'py>) -> PyResult<Bound<'py, PyAny>> {
        // made at the first attribute kept: most records keep none and share NO_ATTRS
        let mut out: Option<Bound<'py, PyDict>> = if matches!(kept, Kept::All) { Some(PyDict::new(py)) } else { None };
        for attr in &a.items {
            let key = &*attr.key;
            let keep = match kept {
                Kept::All => {
                    !(CONTENT_KEYS.iter().any(|k| k.as_bytes() == key)
                        || (is_tool && TOOL_CONTENT_KEYS.iter().any(|k| k.as_bytes() == key))
                        || OI_MESSAGES.iter().any(|p| key.starts_with(p.as_bytes())))
                }
                Kept::Names(names) => names.contains(key),
                Kept::PySet(set) => set.contains(key_object(py, strings, attr)?)?,
            };
            if keep {
                let v = match &attr.val_py {
                    Some(v) => v.clone(),
                    None => attr.val.to_py(py, Some(strings))?,
                };
                out.get_or_insert_with(|| PyDict::new(py)).set_item(key_object(py, strings, attr)?, v)?;
            }
        }
        // a new dict, not deletions: most records keep none (a tool span's attributes are
        // all read into its record's fields), and those share one empty mapping
        Ok(match out {
            Some(d) => d.into_any(),
            None => self.no_attrs.bind(py).clone(),
        })
    }
}

/// `obj`, a record or tuple of a record just made, out of the cyclic garbage collector's
/// lists. Every span in flight was two to four tracked objects (a tuple subclass stays tracked
/// for good; an exact tuple until its first collection), so every young and middle collection
/// walked the spans in flight, about a microsecond an object: 7.5 µs a span, 17% of the
/// service's CPU at its maximum (issue 12, bench/README.md). Nothing in a record can refer
/// back to it: its items are the strings, numbers, tuples and fresh dicts this reader made
/// from the request (or `build_span`'s caller's values, copied into a new dict), so no cycle
/// can pass through it (python/collector.rs: why that makes it sound).
fn untracked(obj: Bound<'_, PyAny>) -> Bound<'_, PyAny> {
    collector::untrack(&obj);
    obj
}

fn key_object<'py>(py: Python<'py>, strings: &mut Strings<'py>, attr: &Attr<'_, 'py>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match &attr.key_py {
        Some(k) => k.clone(),
        None => strings.text(py, &attr.key)?.into_any(),
    })
}

// ------------------------------------------------------------------ build_span, for Python

/// ``build_span(trace_id, span_id, parent_id, name, start_ns, end_ns, status_code,
/// status_message, attrs, *, owned=False, kept=None) -> SpanRecord``: the record for one
/// span whose attributes are a dict of plain values (str, int, float, bool, list, dict).
/// ``kept``: the only attributes the record keeps (read/projection.py); every one but
/// content without it. ``owned`` is accepted for the callers that said the dict was the
/// record's to keep: the record's attributes are always a dict of their own.
#[pyfunction]
#[pyo3(signature = (trace_id, span_id, parent_id, name, start_ns, end_ns, status_code, status_message, attrs, *,
                    owned=false, kept=None))]
#[allow(clippy::too_many_arguments)]
pub fn build_span<'py>(py: Python<'py>, trace_id: Bound<'py, PyAny>, span_id: Bound<'py, PyAny>,
                       parent_id: Bound<'py, PyAny>, name: Bound<'py, PyString>, start_ns: Bound<'py, PyAny>,
                       end_ns: Bound<'py, PyAny>, status_code: Bound<'py, PyAny>,
                       status_message: Bound<'py, PyString>, attrs: Bound<'py, PyDict>, owned: bool,
                       kept: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let _ = owned;
    guarded(|| {
        let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = attrs.iter().collect();
        let mut a = Attrs::with_capacity(items.len());
        for (k, v) in &items {
            let key = k.downcast::<PyString>()?;
            let val = match v.downcast::<PyString>() {
                Ok(s) => V::Str(borrowed_text(s)?),
                Err(_) => from_py(v, 0)?,
            };
            a.set(Attr { key: borrowed_text(key)?, key_py: Some(k.clone()), val, val_py: Some(v.clone()) });
        }
        let has_parent = parent_id.is_truthy()?;
        let span = Span {
            trace_id,
            span_id,
            parent: if has_parent { parent_id } else { py.None().into_bound(py) },
            has_parent,
            name: borrowed_text(&name)?,
            name_py: name.clone().into_any(),
            start: start_ns,
            end: end_ns,
            failed: status_code.eq(2)?,
            status_code,
            message: borrowed_text(&status_message)?,
            message_py: status_message.clone().into_any(),
        };
        let fields = build(py, &span, a)?;
        let kept = match kept {
            None => Kept::All,
            Some(k) if k.is_none() => Kept::All,
            Some(k) => Kept::PySet(if k.is_instance_of::<PyFrozenSet>() { k } else { PyFrozenSet::new(py, k.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.into_any() }),
        };
        records(py)?.record(py, &mut Strings::new(), &span, fields, &kept)
    })
}

/// Runs `f`; a panic is an ordinary error (python/guard.rs).
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("the compiled conventions", f)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(build_span, m)?)?;
    m.add("OI_KIND", OI_KIND)?;
    m.add("TL_KIND", TL_KIND)?;
    m.add("CONTENT_KEYS", PyFrozenSet::new(py, CONTENT_KEYS)?)?;
    m.add("TOOL_CONTENT_KEYS", PyFrozenSet::new(py, TOOL_CONTENT_KEYS)?)?;
    m.add("USER_KEYS", PyTuple::new(py, USER_KEYS)?)?;
    m.add("MODEL_OPERATIONS", PyFrozenSet::new(py, MODEL_OPERATIONS)?)?;
    m.add("READ_NAMES", PyFrozenSet::new(py, read_names().collect::<Vec<_>>())?)?;
    m.add("READ_PREFIXES", PyTuple::new(py, read_prefixes().collect::<Vec<_>>())?)?;
    m.add("BUDGET_ANSWERS", PyFrozenSet::new(py, BUDGET_ANSWERS)?)?;
    m.add("RECORD_BYTES", RECORD_BYTES)
}
