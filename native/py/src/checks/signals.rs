//! checks/signals.py's names: the core's signals (native/core/src/checks/signals.rs) for
//! Python strings and records.

use faultgate_core::checks::signals::{self as core, CallKey};
use faultgate_core::checks::Judged;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::guarded;
use super::outcome::reason_to_py;
use crate::convert::{py_text, text_of, OrRaise};
use crate::records::{field, to_core};
use crate::run::judged;

const STEP_ERRORS: &str = "signals.step_errors"; // key of step_errors' answer in Run.derived

/// `signals.squash`: white space folded, `" ".join(s.split())`.
#[pyfunction(name = "squash")]
fn py_squash<'py>(py: Python<'py>, s: Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| py_text(py, &faultgate_core::pyfmt::strs::squash(&text_of(&s)?)))
}

#[pyfunction(name = "structural_error")]
fn py_structural_error<'py>(py: Python<'py>, result: Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| match core::structural_error(&text_of(&result)?).or_raise()? {
        Some(r) => reason_to_py(py, &r),
        None => Ok(PyString::new(py, "").into_any()),
    })
}

#[pyfunction(name = "empty_result")]
fn py_empty_result(result: Bound<'_, PyString>) -> PyResult<bool> {
    guarded(|| Ok(core::empty_result(&text_of(&result)?)))
}

#[pyfunction(name = "canonical_arguments")]
fn py_canonical_arguments<'py>(py: Python<'py>, args: Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| py_text(py, &core::canonical_arguments(&text_of(&args)?)))
}

#[pyfunction(name = "span_error")]
fn py_span_error<'py>(py: Python<'py>, span: Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| {
        // only the status and error.type are read: a record need not be whole
        let code = span.get_item(field::STATUS_CODE)?;
        if code.extract::<i64>().map_or_else(|_| code.eq(2), |c| Ok(c == 2))? {
            return Ok(PyString::new(py, "Span status error: Code 2"));
        }
        let r = to_core(&span)?;
        py_text(py, &core::span_error(&r).unwrap_or_default())
    })
}

/// `repeated_call.call_key`, for the tests that hold it to the Python rule: equal keys
/// come back equal (a key is a tuple).
#[pyfunction(name = "call_key")]
fn py_call_key<'py>(py: Python<'py>, args: Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| {
        Ok(match core::call_key(&text_of(&args)?) {
            CallKey::Text(t) => ("text", py_text(py, &t)?).into_pyobject(py)?.into_any(),
            CallKey::Members(m) => {
                let pairs = m.iter().map(|(k, v)| Ok((py_text(py, k)?, py_text(py, v)?))).collect::<PyResult<Vec<_>>>()?;
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
    guarded(|| {
        let derived = run.getattr(intern!(py, "derived"))?.downcast_into::<PyDict>()?;
        if let Some(v) = derived.get_item(intern!(py, STEP_ERRORS))? {
            return Ok(v);
        }
        let errors = judged(&run, |r, f, d| {
            let j = Judged::with(r, f, d);
            let errors = j.errors().or_raise()?;
            errors.iter().map(|e| match e {
                Some(e) => reason_to_py(py, e),
                None => Ok(PyString::new(py, "").into_any()),
            }).collect::<PyResult<Vec<_>>>()
        })?;
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
