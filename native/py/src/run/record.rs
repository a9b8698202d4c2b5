//! Reading the package's records (model/records.py) by field index: a `SpanRecord`,
//! `ToolExecution`, `ToolCall` or `Step` is a tuple, and a tuple's item costs no lookup by
//! name. The indexes are the NamedTuples' field order, which tests/model pins
//! (test_native_record_layout).

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

// SpanRecord
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
pub const MISSING: usize = 18;
// ToolExecution
pub const TOOL_NAME: usize = 0;
pub const TOOL_ARGUMENTS: usize = 1;
pub const TOOL_RESULT: usize = 2;
pub const TOOL_CALL_ID: usize = 3;
// ToolCall
pub const CALL_ID: usize = 0;
pub const CALL_NAME: usize = 1;
pub const CALL_ARGUMENTS: usize = 2;

// model/records.py's MISSING_* flags
pub const MISSING_OUTPUT: i64 = 2;
pub const MISSING_FINISH: i64 = 4;
pub const MISSING_TOOL_ARGUMENTS: i64 = 8;
pub const MISSING_TOOL_RESULT: i64 = 16;
pub const MISSING_WHAT: [(i64, &str); 5] = [(1, "input messages"), (2, "output messages"), (4, "finish reasons"),
                                            (8, "tool arguments"), (16, "tool results")];

pub const INVOKE_AGENT: &str = "invoke_agent";
pub const ERROR_TYPE: &str = "error.type";

#[inline]
pub fn item<'py>(t: &Bound<'py, PyTuple>, i: usize) -> PyResult<Bound<'py, PyAny>> {
    t.get_item(i)
}

#[inline]
pub fn str_item<'py>(t: &Bound<'py, PyTuple>, i: usize) -> PyResult<Bound<'py, PyString>> {
    Ok(t.get_item(i)?.downcast_into::<PyString>()?)
}

#[inline]
pub fn tuple_item<'py>(t: &Bound<'py, PyTuple>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
    Ok(t.get_item(i)?.downcast_into::<PyTuple>()?)
}

/// An int field that is a small flag or code (status, missing flags).
#[inline]
pub fn int_item(t: &Bound<'_, PyTuple>, i: usize) -> PyResult<i64> {
    t.get_item(i)?.extract::<i64>()
}

/// The attributes the run's facts and the checks read, found in one pass over a span's
/// attributes (a dict of a few entries: a walk costs less than five lookups). A value of
/// None is as absent, as `attrs.get(key)` reads it.
#[derive(Default)]
pub struct Attrs<'py> {
    pub usage_in: Option<Bound<'py, PyAny>>,
    pub usage_out: Option<Bound<'py, PyAny>>,
    pub cost: Option<Bound<'py, PyAny>>,
    pub agent_name: Option<Bound<'py, PyAny>>,
    pub error_type: Option<Bound<'py, PyAny>>,
}

pub const USAGE_IN: &str = "gen_ai.usage.input_tokens";
pub const USAGE_OUT: &str = "gen_ai.usage.output_tokens";
pub const COST: &str = "faultgate.cost_usd";
pub const AGENT_NAME: &str = "gen_ai.agent.name";

impl<'py> Attrs<'py> {
    fn slot(&mut self, key: &[u8]) -> Option<&mut Option<Bound<'py, PyAny>>> {
        Some(match key {
            b"gen_ai.usage.input_tokens" => &mut self.usage_in,
            b"gen_ai.usage.output_tokens" => &mut self.usage_out,
            b"faultgate.cost_usd" => &mut self.cost,
            b"gen_ai.agent.name" => &mut self.agent_name,
            b"error.type" => &mut self.error_type,
            _ => return None,
        })
    }

    pub fn of(attrs: &Bound<'py, PyAny>) -> PyResult<Attrs<'py>> {
        let mut out = Attrs::default();
        if let Ok(d) = attrs.downcast::<PyDict>() {
            if d.len() <= 8 {
                for (k, v) in d.iter() {
                    if v.is_none() {
                        continue;
                    }
                    let Ok(k) = k.downcast::<PyString>() else { continue };
                    let Ok(k) = k.to_str() else { continue };
                    if let Some(slot) = out.slot(k.as_bytes()) {
                        *slot = Some(v);
                    }
                }
                return Ok(out);
            }
        } else if attrs.len()? == 0 {
            return Ok(out);
        }
        let py = attrs.py();
        out.usage_in = attr(attrs, intern!(py, USAGE_IN))?;
        out.usage_out = attr(attrs, intern!(py, USAGE_OUT))?;
        out.cost = attr(attrs, intern!(py, COST))?;
        out.agent_name = attr(attrs, intern!(py, AGENT_NAME))?;
        out.error_type = attr(attrs, intern!(py, ERROR_TYPE))?;
        Ok(out)
    }
}

/// What the checks read of one span, kept with the run's steps (run/steps.rs).
pub struct SpanItem {
    pub span_id: Py<PyString>,
    pub name: Py<PyString>,
    pub tool_name: Option<Py<PyString>>,
    pub status_error: bool, // status code 2
    /// `span.error_type`: `str(attrs["error.type"])` when set and true
    pub error_type: Option<Py<PyString>>,
    pub status_message: Py<PyString>,
    pub finish_reasons: Py<PyTuple>,
    pub missing: i64,
}

impl SpanItem {
    pub fn read(s: &Bound<'_, PyTuple>, attrs: &Attrs<'_>) -> PyResult<SpanItem> {
        let tool = item(s, TOOL)?;
        let code = item(s, STATUS_CODE)?;
        Ok(SpanItem {
            span_id: str_item(s, SPAN_ID)?.unbind(),
            name: str_item(s, NAME)?.unbind(),
            tool_name: if tool.is_none() { None } else { Some(str_item(tool.downcast::<PyTuple>()?, TOOL_NAME)?.unbind()) },
            status_error: code.extract::<i64>().map_or_else(|_| code.eq(2), |c| Ok(c == 2))?,
            error_type: match &attrs.error_type {
                Some(v) if v.is_truthy()? => Some(py_str(v)?.unbind()),
                _ => None,
            },
            status_message: str_item(s, STATUS_MESSAGE)?.unbind(),
            finish_reasons: tuple_item(s, FINISH_REASONS)?.unbind(),
            missing: int_item(s, MISSING)?,
        })
    }
}

/// `attrs.get(key)` of a record's attributes: a dict, or the shared empty mapping.
pub fn attr<'py>(attrs: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(d) = attrs.downcast::<PyDict>() {
        return Ok(d.get_item(key)?.filter(|v| !v.is_none()));
    }
    if attrs.len()? == 0 {
        return Ok(None);
    }
    let v = attrs.call_method1(intern!(attrs.py(), "get"), (key,))?;
    Ok(if v.is_none() { None } else { Some(v) })
}

/// `str(v)`: the object itself when it is a str already.
pub fn py_str<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    match v.downcast::<PyString>() {
        Ok(s) if s.is_exact_instance_of::<PyString>() => Ok(s.clone()),
        _ => v.str(),
    }
}

/// `span.error_type`: `str(attrs["error.type"])` when set and true, else "".
pub fn error_type<'py>(span: &Bound<'py, PyTuple>) -> PyResult<Option<Bound<'py, PyString>>> {
    let attrs = item(span, ATTRS)?;
    match attr(&attrs, intern!(span.py(), ERROR_TYPE))? {
        Some(v) if v.is_truthy()? => Ok(Some(py_str(&v)?)),
        _ => Ok(None),
    }
}

static STEP: GILOnceCell<(Py<PyType>, bool)> = GILOnceCell::new();

/// A `Step` of its nine fields, without the NamedTuple's Python-level `__new__`.
///
/// Before Python 3.14 a tuple subclass's instance is its type's allocation with the items
/// set, which is how `tuple.__new__(Step, fields)` makes it (`tuple_subtype_new`), without
/// the two tuples that call takes: a run's steps are most of what the facts allocate. From
/// 3.14 a tuple caches its hash in the object, which that allocation leaves unset, so there
/// the call itself is made.
pub fn new_step<'py>(py: Python<'py>, fields: [Bound<'py, PyAny>; 9]) -> PyResult<Bound<'py, PyAny>> {
    let (step, alloc_directly) = STEP.get_or_try_init(py, || -> PyResult<(Py<PyType>, bool)> {
        let cls = py.import("faultgate_stream.model.records")?.getattr("Step")?.downcast_into::<PyType>()?.unbind();
        Ok((cls, py.version_info() < (3, 14)))
    })?;
    let cls = step.bind(py);
    if *alloc_directly {
        // SAFETY: tp_alloc of a heap subtype of tuple with no slots of its own (a NamedTuple)
        // makes a tuple of 9 NULL items with a reference held; PyTuple_SetItem fills each,
        // stealing the reference into_ptr gives, before the object is seen by anyone.
        unsafe {
            let alloc: ffi::allocfunc = std::mem::transmute(ffi::PyType_GetSlot(cls.as_type_ptr(), ffi::Py_tp_alloc));
            let obj = alloc(cls.as_type_ptr(), 9);
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            for (i, f) in fields.into_iter().enumerate() {
                ffi::PyTuple_SetItem(obj, i as ffi::Py_ssize_t, f.into_ptr());
            }
            return Ok(Bound::from_owned_ptr(py, obj));
        }
    }
    let args = PyTuple::new(py, [PyTuple::new(py, fields)?])?;
    // SAFETY: tuple's tp_new slot is a newfunc; it is given a subtype of tuple and an args
    // tuple, as `tuple.__new__(Step, fields)` gives it, and returns a new reference or NULL.
    unsafe {
        let slot = ffi::PyType_GetSlot(std::ptr::addr_of_mut!(ffi::PyTuple_Type), ffi::Py_tp_new);
        let new: ffi::newfunc = std::mem::transmute(slot);
        let obj = new(cls.as_type_ptr(), args.as_ptr(), std::ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, obj)
    }
}
