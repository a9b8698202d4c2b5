//! What tool results and spans say about failure, shared by several checks
//! (checks/signals.py exports these): faultgate 0.4.1's heuristics, so the two tools agree
//! on what an error or an empty result is.

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple};

use super::json::{self, Loaded, Shallow, J};
use super::text;
use crate::run::record::{self, STATUS_CODE};
use crate::run::steps::StepsView;

// How a tool result announces a failure in plain text.
const ERROR_PREFIXES: [&str; 4] = ["Error:", "ERROR:", "Traceback (most recent call last)",
                                   "An error occurred while parsing tool arguments"];
const EXIT_CODE_KEYS: [&str; 5] = ["exit_code", "return_code", "exitcode", "returncode", "exit_status"];
const COUNT_KEYS: [&str; 4] = ["n_candidates", "count", "n_results", "total"];
const STEP_ERRORS: &str = "signals.step_errors"; // key of step_errors' answer in Run.derived

/// Whether a stripped text looks like a JSON object or array (its first and last
/// characters).
pub fn jsonish(s: &[u8]) -> bool {
    matches!((s.first(), s.last()), (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))) && s.len() > 1
}

/// `str(value)` of a decoded value, as a reason prints it.
fn shown<'py>(py: Python<'py>, v: &J) -> PyResult<Bound<'py, PyString>> {
    match v {
        J::Str(s) => text::to_py(py, s),
        _ => v.to_py(py)?.str(),
    }
}

/// `int(value) != 0`; None where `int()` raises TypeError or ValueError (the rule skips
/// the key); an infinite float raises OverflowError, which the rule does not catch.
fn int_nonzero(py: Python<'_>, v: &J) -> PyResult<Option<bool>> {
    Ok(match v {
        J::Bool(b) => Some(*b),
        J::Int(_) => Some(v.truthy()),
        J::Float(f) if f.is_nan() => None,
        J::Float(f) if f.is_infinite() => return Err(PyOverflowError::new_err("cannot convert float infinity to integer")),
        J::Float(f) => Some(f.trunc() != 0.0),
        J::Str(s) => match py.get_type::<PyInt>().call1((text::to_py(py, s)?,)) {
            Ok(n) => Some(n.is_truthy()?),
            Err(e) if e.is_instance_of::<PyValueError>(py) => None,
            Err(e) => return Err(e),
        },
        J::Null | J::List(_) | J::Dict(_) => None,
    })
}

static REASON: GILOnceCell<(PyObject, PyObject)> = GILOnceCell::new();

/// model/reason.py's `reason` and `quoted`.
fn reason_fns(py: Python<'_>) -> PyResult<&(PyObject, PyObject)> {
    REASON.get_or_try_init(py, || -> PyResult<(PyObject, PyObject)> {
        let m = py.import("faultgate_stream.model.reason")?;
        Ok((m.getattr("reason")?.unbind(), m.getattr("quoted")?.unbind()))
    })
}

/// `quoted(value, limit)`: a value a reason shows cut to `limit` characters.
pub fn quoted<'py>(py: Python<'py>, value: &Bound<'py, PyAny>, limit: usize) -> PyResult<Bound<'py, PyAny>> {
    reason_fns(py)?.1.bind(py).call1((value, limit))
}

/// `reason(*parts)` with `quoted(value, limit)` after the text parts: model/reason.py
/// keeps the quoted value whole for masking. Only on the fired path.
pub fn quoted_reason<'py>(py: Python<'py>, before: &str, value: &Bound<'py, PyAny>, limit: usize, after: &str)
                          -> PyResult<Bound<'py, PyString>> {
    let (reason, quoted) = reason_fns(py)?;
    let q = quoted.bind(py).call1((value, limit))?;
    let parts = if after.is_empty() { PyTuple::new(py, [PyString::new(py, before).into_any(), q])? } else {
        PyTuple::new(py, [PyString::new(py, before).into_any(), q, PyString::new(py, after).into_any()])?
    };
    Ok(reason.bind(py).call1(parts)?.downcast_into::<PyString>()?)
}

/// `reason(*parts)` of text and earlier reasons (a step error may be a `Reason`).
pub fn joined_reason<'py>(py: Python<'py>, parts: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyString>> {
    let (reason, _) = reason_fns(py)?;
    Ok(reason.bind(py).call1(PyTuple::new(py, parts)?)?.downcast_into::<PyString>()?)
}

/// What a JSON object of a result says of an error: a true `error` member, else the first
/// exit code key whose value is a non-zero integer.
fn object_error<'py>(py: Python<'py>, obj: &Shallow<'_>) -> PyResult<Option<Bound<'py, PyString>>> {
    if let Some(e) = obj.get(b"error") {
        let e = e.value(py)?;
        if e.truthy() {
            let v = shown(py, &e)?;
            return Ok(Some(quoted_reason(py, "JSON top-level error: ", v.as_any(), 80, "")?));
        }
    }
    for k in EXIT_CODE_KEYS {
        if let Some(v) = obj.get(k.as_bytes()) {
            let v = v.value(py)?;
            if int_nonzero(py, &v)? == Some(true) {
                let mut out = format!("Non-zero {k}: ").into_bytes();
                out.extend_from_slice(text::read(&shown(py, &v)?)?.bytes());
                return Ok(Some(text::to_py(py, &out)?));
            }
        }
    }
    Ok(None)
}

/// Whether a text may hold one of the JSON members a structural error is read from: a
/// member named `error` or an exit code key has its name in the text, unless the name is
/// written with `\u` escapes. Most results name none, and are not decoded at all.
fn may_name_error_members(s: &[u8]) -> bool {
    static ERROR: text::Needle = crate::needle!(b"error");
    static EXIT: text::Needle = crate::needle!(b"exit");
    static RETURN: text::Needle = crate::needle!(b"return");
    static ESCAPE: text::Needle = crate::needle!(b"\\u");
    ERROR.within(s) || EXIT.within(s) || RETURN.within(s) || ESCAPE.within(s)
}

/// Whether a result is no error at all, decided without decoding it: most results are
/// read this far only.
pub fn plainly_clean(result: &[u8]) -> bool {
    let s = text::strip(result);
    s.is_empty() || (!may_name_error_members(s) && !ERROR_PREFIXES.iter().any(|p| s.starts_with(p.as_bytes())))
}

/// Why a tool result is an error (None when it is not): a JSON `error` field, a non-zero
/// exit code, a `<tool_use_error>` tag, or an error prefix. The JSON is the result's own
/// object, or for a list of `{"text": "{...}"}` parts (MCP content), each part's text.
pub fn structural_error<'py>(py: Python<'py>, result: &[u8]) -> PyResult<Option<Bound<'py, PyString>>> {
    let s = text::strip(result);
    if s.is_empty() {
        return Ok(None);
    }
    let (first, last) = (s[0], s[s.len() - 1]);
    if s.len() >= 2 && may_name_error_members(s) {
        if first == b'{' && last == b'}' {
            let obj = json::shallow(py, s)?;
            if matches!(obj, Shallow::Dict(_)) {
                if let Some(e) = object_error(py, &obj)? {
                    return Ok(Some(e));
                }
            }
        } else if first == b'[' && last == b']' {
            if let Shallow::List(items) = json::shallow(py, s)? {
                for item in items {
                    let J::Dict(members) = item.value(py)? else { continue };
                    let Some((_, J::Str(t))) = members.iter().find(|(k, _)| k == b"text") else { continue };
                    let t = text::strip(t);
                    if t.len() >= 2 && t[0] == b'{' && t[t.len() - 1] == b'}' {
                        let obj = json::shallow(py, t)?;
                        if matches!(obj, Shallow::Dict(_)) {
                            if let Some(e) = object_error(py, &obj)? {
                                return Ok(Some(e));
                            }
                        }
                    }
                }
            }
        }
    }
    static TAG: text::Needle = crate::needle!(b"<tool_use_error>");
    static END_TAG: text::Needle = crate::needle!(b"</tool_use_error>");
    if TAG.within(s) && END_TAG.within(s) {
        return Ok(Some(PyString::new(py, "<tool_use_error> tag present")));
    }
    for p in ERROR_PREFIXES {
        if s.starts_with(p.as_bytes()) {
            return Ok(Some(PyString::new(py, &format!("Response starts with '{p}'"))));
        }
    }
    Ok(None)
}

/// A tool result that carried nothing back: empty, [], {}, or a JSON body whose count is
/// 0 or whose lists are all empty. Only an array or an object can be either, so other
/// text (a JSON scalar too) is not decoded.
pub fn empty_result(py: Python<'_>, result: &[u8]) -> PyResult<bool> {
    let s = text::strip(result);
    if matches!(s, b"" | b"[]" | b"{}" | b"null" | b"None") {
        return Ok(true);
    }
    if !matches!(s[0], b'[' | b'{') {
        return Ok(false);
    }
    Ok(match json::shallow(py, s)? {
        Shallow::List(v) => v.is_empty(),
        d @ Shallow::Dict(_) => {
            for k in COUNT_KEYS {
                if let Some(v) = d.get(k.as_bytes()) {
                    return Ok(v.value(py)?.equals_zero());
                }
            }
            let Shallow::Dict(items) = &d else { unreachable!() };
            let lists: Vec<bool> = items.iter().filter_map(|(_, v)| v.list_empty()).collect();
            !lists.is_empty() && lists.iter().all(|&empty| empty)
        }
        _ => false,
    })
}

static CANONICAL: GILOnceCell<PyObject> = GILOnceCell::new();

/// Arguments in one canonical form, so the same call written twice compares equal: JSON
/// re-encoded with sorted keys and no spaces (`json.JSONEncoder(sort_keys=True,
/// separators=(",", ":"), ensure_ascii=False)`), other text with its white space folded.
pub fn canonical_arguments(py: Python<'_>, args: &[u8]) -> PyResult<Vec<u8>> {
    let s = text::strip(args);
    if jsonish(s) {
        match json::loads(py, s)? {
            Loaded::Value(j) => {
                let mut out = Vec::with_capacity(s.len());
                json::canonical(&j, &mut out);
                return Ok(out);
            }
            // what only Python could read, Python's encoder writes (its own limits and all)
            Loaded::Python(v, _) => {
                let encode = CANONICAL.get_or_try_init(py, || -> PyResult<PyObject> {
                    let kw = PyDict::new(py);
                    kw.set_item("sort_keys", true)?;
                    kw.set_item("separators", (",", ":"))?;
                    kw.set_item("ensure_ascii", false)?;
                    Ok(py.import("json")?.getattr("JSONEncoder")?.call((), Some(&kw))?.getattr("encode")?.unbind())
                })?;
                let out = encode.bind(py).call1((v,))?.downcast_into::<PyString>()?;
                return Ok(text::read(&out)?.0.into_owned());
            }
            Loaded::Refused => {}
        }
    }
    Ok(text::fold_spaces(s))
}

/// repeated_call's key for a call's arguments: equal for two argument texts whenever
/// their canonical forms are, and cheaper to get (one decode instead of a decode and a
/// sorted re-encode). Equal canonical JSON means equal decoded values, type for type, so
/// an object's string members are the same; a text that is not JSON is compared in its
/// canonical form itself. `Unsure` when it cannot tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallKey {
    Text(Vec<u8>),
    Members(Vec<(Vec<u8>, Vec<u8>)>),
    Len(usize),
    // its canonical form is its text, which may read like someone's JSON
    Unsure,
}

pub fn call_key(py: Python<'_>, args: &[u8]) -> PyResult<CallKey> {
    let s = text::strip(args);
    if !jsonish(s) {
        return Ok(CallKey::Text(text::fold_spaces(s)));
    }
    Ok(match json::loads(py, s)?.value() {
        Some(J::Dict(items)) => {
            let mut members: Vec<(Vec<u8>, Vec<u8>)> = items.iter()
                .filter_map(|(k, v)| if let J::Str(x) = v { Some((k.clone(), x.clone())) } else { None }).collect();
            members.sort();
            CallKey::Members(members)
        }
        Some(J::List(v)) => CallKey::Len(v.len()),
        _ => CallKey::Unsure,
    })
}

/// Why the span itself says it failed (None when it does not), as text.
pub fn span_error(span: &Bound<'_, PyTuple>) -> PyResult<Option<Vec<u8>>> {
    let code = span.get_item(STATUS_CODE)?;
    if code.extract::<i64>().map_or_else(|_| code.eq(2), |c| Ok(c == 2))? {
        return Ok(Some(b"Span status error: Code 2".to_vec()));
    }
    match record::error_type(span)? {
        Some(t) => {
            let mut out = b"Span error: ".to_vec();
            out.extend_from_slice(text::read(&t)?.bytes());
            Ok(Some(out))
        }
        None => Ok(None),
    }
}

// ------------------------------------------------------------- checks/signals.py

/// `signals.squash`: white space folded, `" ".join(s.split())`.
#[pyfunction(name = "squash")]
fn py_squash<'py>(py: Python<'py>, s: Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    super::guarded(|| text::to_py(py, &text::squash(text::read(&s)?.bytes())))
}

#[pyfunction(name = "structural_error")]
fn py_structural_error<'py>(py: Python<'py>, result: Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    super::guarded(|| Ok(structural_error(py, text::read(&result)?.bytes())?.unwrap_or_else(|| PyString::new(py, ""))))
}

#[pyfunction(name = "empty_result")]
fn py_empty_result(py: Python<'_>, result: Bound<'_, PyString>) -> PyResult<bool> {
    super::guarded(|| empty_result(py, text::read(&result)?.bytes()))
}

#[pyfunction(name = "canonical_arguments")]
fn py_canonical_arguments<'py>(py: Python<'py>, args: Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    super::guarded(|| text::to_py(py, &canonical_arguments(py, text::read(&args)?.bytes())?))
}

#[pyfunction(name = "span_error")]
fn py_span_error<'py>(py: Python<'py>, span: Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyString>> {
    super::guarded(|| text::to_py(py, &span_error(&span)?.unwrap_or_default()))
}

/// `repeated_call.call_key`, for the tests that hold it to the Python rule: equal keys
/// come back equal (a key is a tuple).
#[pyfunction(name = "call_key")]
fn py_call_key<'py>(py: Python<'py>, args: Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
    super::guarded(|| {
        Ok(match call_key(py, text::read(&args)?.bytes())? {
            CallKey::Text(t) => ("text", text::to_py(py, &t)?).into_pyobject(py)?.into_any(),
            CallKey::Members(m) => {
                let pairs = m.iter().map(|(k, v)| Ok((text::to_py(py, k)?, text::to_py(py, v)?)))
                    .collect::<PyResult<Vec<_>>>()?;
                ("members", PyTuple::new(py, pairs)?).into_pyobject(py)?.into_any()
            }
            CallKey::Len(n) => ("len", n).into_pyobject(py)?.into_any(),
            CallKey::Unsure => py.None().into_bound(py),
        })
    })
}

/// `signals.step_errors(run)`: `structural_error` of each step's result, in step order,
/// worked out once per run (kept in `run.derived`) for every check that asks.
#[pyfunction(name = "step_errors")]
fn py_step_errors<'py>(py: Python<'py>, run: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    super::guarded(|| {
        let derived = run.getattr(intern!(py, "derived"))?.downcast_into::<PyDict>()?;
        if let Some(v) = derived.get_item(intern!(py, STEP_ERRORS))? {
            return Ok(v);
        }
        let view = StepsView::of(&run)?;
        let empty = PyString::new(py, "");
        let errors = view.get().errors(py)?.iter()
            .map(|e| e.as_ref().map_or_else(|| empty.clone(), |e| e.bind(py).clone()));
        let t = PyTuple::new(py, errors)?.into_any();
        derived.set_item(intern!(py, STEP_ERRORS), &t)?;
        Ok(t)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_squash, m)?)?;
    m.add_function(wrap_pyfunction!(py_structural_error, m)?)?;
    m.add_function(wrap_pyfunction!(py_empty_result, m)?)?;
    m.add_function(wrap_pyfunction!(py_canonical_arguments, m)?)?;
    m.add_function(wrap_pyfunction!(py_span_error, m)?)?;
    m.add_function(wrap_pyfunction!(py_call_key, m)?)?;
    m.add_function(wrap_pyfunction!(py_step_errors, m)?)?;
    Ok(())
}
