//! read/payload.py's names: the core's payload rules (native/core/src/read/payload.rs) for
//! Python values, and `loads`, `json.loads` as Python objects.

use faultgate_core::model::json::{self, dumps_plain};
use faultgate_core::model::value::Value;
use faultgate_core::read::payload as core;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::conventions::guarded;
use crate::convert::{py_text, to_py, value_of, OrRaise, Strings};

fn out<'py>(py: Python<'py>, t: &[u8]) -> PyResult<Bound<'py, PyString>> {
    py_text(py, t)
}

#[pyfunction(name = "render")]
fn render_py<'py>(py: Python<'py>, val: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &core::render(&value_of(val, 0)?).or_raise()?))
}

#[pyfunction(name = "load_json")]
fn load_json_py<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| {
        if let Ok(s) = raw.downcast::<PyString>() {
            if let Some(v) = core::decode(&crate::convert::text_of(s)?) {
                return to_py(py, &v, &mut Strings::default());
            }
        }
        Ok(raw.clone())
    })
}

#[pyfunction(name = "plain_text")]
#[pyo3(signature = (v, role="user"))]
fn plain_text_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>, role: &str) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &core::plain_text(&value_of(v, 0)?, role).or_raise()?))
}

#[pyfunction(name = "agent_text")]
fn agent_text_py<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>, role: &str) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &core::agent_text(&value_of(raw, 0)?, role).or_raise()?))
}

#[pyfunction(name = "tool_payload")]
fn tool_payload_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &core::tool_payload(&value_of(v, 0)?).or_raise()?))
}

#[pyfunction(name = "role_text")]
fn role_text_py<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>, role: &str) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &core::role_text(&value_of(raw, 0)?, role)))
}

#[pyfunction(name = "lc_message")]
fn lc_message_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| match core::lc_message(&value_of(v, 0)?).or_raise()? {
        Some(m) => to_py(py, &m, &mut Strings::default()),
        None => Ok(py.None().into_bound(py)),
    })
}

#[pyfunction(name = "lc_tool_result")]
fn lc_tool_result_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| core::lc_tool_result(&value_of(v, 0)?).or_raise()?.map(|t| out(py, &t)).transpose())
}

#[pyfunction(name = "call_arguments")]
fn call_arguments_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| core::call_arguments(&value_of(v, 0)?).or_raise()?.map(|t| out(py, &t)).transpose())
}

#[pyfunction(name = "is_parameter_schema")]
fn is_parameter_schema_py(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    guarded(|| Ok(core::is_parameter_schema(&value_of(v, 0)?)))
}

/// `json.dumps(v, ensure_ascii=False)` for any value a reader may hold: bytes (an OTLP
/// `bytesValue`) as OTLP/JSON writes them, base64; a structure nested too deep to write
/// as a marker instead of a RecursionError (issue 9, defect 2).
#[pyfunction(name = "dumps")]
fn dumps_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &dumps_plain(&value_of(v, 0)?).or_raise()?))
}

/// `loads(text, refused)`: `json.loads(text)`'s value, or `refused` where it raises (the
/// caller then asks json.loads, for its error). `text` is str or bytes (UTF-8).
#[pyfunction]
fn loads<'py>(py: Python<'py>, text: &Bound<'py, PyAny>, refused: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| {
        let v: Option<Value<'_>> = if let Ok(s) = text.downcast::<PyString>() {
            json::loads(&crate::convert::text_of(s)?).map(Value::into_owned)
        } else if let Ok(b) = text.downcast::<PyBytes>() {
            // json.loads decodes bytes as UTF-8 (or UTF-16/32 by their BOM: those it reads itself)
            match std::str::from_utf8(b.as_bytes()) {
                Ok(t) => json::loads(t.as_bytes()),
                Err(_) => None,
            }
        } else {
            None
        };
        match v {
            Some(v) => to_py(py, &v, &mut Strings::default()),
            None => Ok(refused),
        }
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(render_py, m)?)?;
    m.add_function(wrap_pyfunction!(load_json_py, m)?)?;
    m.add_function(wrap_pyfunction!(plain_text_py, m)?)?;
    m.add_function(wrap_pyfunction!(agent_text_py, m)?)?;
    m.add_function(wrap_pyfunction!(tool_payload_py, m)?)?;
    m.add_function(wrap_pyfunction!(role_text_py, m)?)?;
    m.add_function(wrap_pyfunction!(lc_message_py, m)?)?;
    m.add_function(wrap_pyfunction!(lc_tool_result_py, m)?)?;
    m.add_function(wrap_pyfunction!(call_arguments_py, m)?)?;
    m.add_function(wrap_pyfunction!(is_parameter_schema_py, m)?)?;
    m.add_function(wrap_pyfunction!(dumps_py, m)?)?;
    m.add_function(wrap_pyfunction!(loads, m)?)
}
