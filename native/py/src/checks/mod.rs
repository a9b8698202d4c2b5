//! The checks' compiled halves: each default rule check (checks/<name>.py keeps its class,
//! its name, description and severity, and calls the function here from `finish` or
//! `observe`), the signals several checks share (checks/signals.py exports them), and the
//! Python-exact text, JSON and pattern rules they stand on.
//!
//! Python is called only where that is the cheapest way to be exactly right, and only on
//! a rare path: a reason that quotes a value (`repr`, model/reason.py's `quoted`), JSON that
//! serde_json refuses and `json.loads` may not, `int()` of an exit code written as text.

pub mod json;
pub mod outcome;
pub mod pattern;
pub mod signals;
pub mod text;

mod abstention;
mod context_overflow;
mod policy_deny;
mod repeated_call;
mod search_loop;
mod unrecovered_tool_error;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::run::record;
use outcome::Outcomes;

/// Runs `f`; a panic is a RuntimeError the evaluator reports for the check (python/guard.rs).
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("a compiled check", f)
}

#[pyfunction(name = "search_loop")]
fn search_loop_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| search_loop::finish(py, &run, &outcomes))
}

#[pyfunction(name = "abstention")]
fn abstention_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| abstention::finish(py, &run, &outcomes))
}

#[pyfunction(name = "repeated_call")]
fn repeated_call_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| repeated_call::finish(py, &run, &outcomes))
}

#[pyfunction(name = "unrecovered_tool_error")]
fn unrecovered_tool_error_finish(py: Python<'_>, run: Bound<'_, PyAny>, alternatives: Bound<'_, PyDict>,
                          outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| unrecovered_tool_error::finish(py, &run, &alternatives, &outcomes))
}

#[pyfunction(name = "context_overflow")]
fn context_overflow_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| context_overflow::finish(py, &run, &outcomes))
}

/// `ContextOverflow.observe(state, span)` itself (the class holds it as a staticmethod).
#[pyfunction]
fn context_overflow_observe<'py>(py: Python<'py>, _state: Bound<'py, PyAny>, span: Bound<'py, PyTuple>)
                                 -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| context_overflow::observe(py, &span))
}

// ------------------------------------------------ a batch's spans, one trace's stretch at a time
// The evaluator observes a batch's spans a trace at a time (a batch's spans mostly come a
// trace at a time): per check one call over the stretch, not one per span, each of which
// was a Python loop turn and a call (verdict/evaluate.py, ``Check.observe_spans``).

/// Where each stretch of spans of one trace ends: ``[end, ...]``, each an index into
/// ``spans`` (a list or tuple of records), the last ``len(spans)``.
#[pyfunction]
fn trace_stretches(spans: Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    guarded(|| {
        let n = spans.len()?;
        let mut ends = Vec::new();
        let mut tid: Option<Bound<'_, PyAny>> = None;
        for i in 0..n {
            let t = record::item(&nth(&spans, i)?, record::TRACE_ID)?;
            if let Some(prev) = &tid {
                if prev.is(&t) || prev.eq(&t)? {
                    continue;
                }
                ends.push(i);
            }
            tid = Some(t);
        }
        if n > 0 {
            ends.push(n);
        }
        Ok(ends)
    })
}

fn nth<'py>(spans: &Bound<'py, PyAny>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
    let item = match spans.downcast::<PyList>() {
        Ok(l) => l.get_item(i)?,
        Err(_) => spans.downcast::<PyTuple>()?.get_item(i)?,
    };
    Ok(item.downcast_into::<PyTuple>()?)
}

/// ``observe`` over ``spans[lo:hi]``, every span in order: the first that fired, as
/// (index, reason), or None.
fn observe_stretch<'py>(spans: &Bound<'py, PyAny>, lo: usize, hi: usize,
                        mut observe: impl FnMut(&Bound<'py, PyTuple>) -> PyResult<Option<Bound<'py, PyString>>>)
                        -> PyResult<Option<(usize, Bound<'py, PyString>)>> {
    let mut first = None;
    for i in lo..hi {
        if let Some(reason) = observe(&nth(spans, i)?)? {
            first = first.or(Some((i, reason)));
        }
    }
    Ok(first)
}

/// `ContextOverflow.observe_spans(state, spans, lo, hi)`.
#[pyfunction]
fn context_overflow_observe_spans<'py>(py: Python<'py>, _state: Bound<'py, PyAny>, spans: Bound<'py, PyAny>,
                                       lo: usize, hi: usize) -> PyResult<Option<(usize, Bound<'py, PyString>)>> {
    guarded(|| observe_stretch(&spans, lo, hi, |span| context_overflow::observe(py, span)))
}

/// `PolicyCheck.observe_spans` without a policy file.
#[pyfunction]
fn deny_only_observe_spans<'py>(py: Python<'py>, state: Bound<'py, policy_deny::DenyMemo>, spans: Bound<'py, PyAny>,
                                lo: usize, hi: usize) -> PyResult<Option<(usize, Bound<'py, PyString>)>> {
    guarded(|| observe_stretch(&spans, lo, hi, |span| policy_deny::observe(py, state.get(), span)))
}

/// The phrase abstention's pattern finds in a text (`m.group(0)`), or None: for the tests
/// that hold the pattern to Python's `re`.
#[pyfunction]
fn abstention_phrase<'py>(py: Python<'py>, text: Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| {
        let t = text::read(&text)?;
        abstention::search(py, t.bytes())?.map(|(a, b)| text::to_py(py, &t.bytes()[a..b])).transpose()
    })
}

/// The limit context_overflow's pattern finds in a text, or None (for the same tests).
#[pyfunction]
fn overflow_phrase<'py>(py: Python<'py>, text: Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| {
        let t = text::read(&text)?;
        context_overflow::search(py, t.bytes())?.map(|(a, b)| text::to_py(py, &t.bytes()[a..b])).transpose()
    })
}

/// `word in text.lower()` and `text.lower() == word` for a lower-case ASCII word, as the
/// checks read `lower()` (for the tests).
#[pyfunction]
fn lower_matches(text: Bound<'_, PyString>, word: &str) -> PyResult<(bool, bool)> {
    guarded(|| {
        let t = text::read(&text)?;
        Ok((pattern::lower_contains(t.bytes(), word.as_bytes()), pattern::lower_equals(t.bytes(), word.as_bytes())))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Outcomes>()?;
    m.add_class::<policy_deny::DenyOnly>()?;
    m.add_class::<policy_deny::DenyMemo>()?;
    m.add_function(wrap_pyfunction!(policy_deny::deny_only_observe, m)?)?;
    m.add_function(wrap_pyfunction!(policy_deny::deny_only_finish, m)?)?;
    signals::register(m)?;
    m.add_function(wrap_pyfunction!(search_loop_finish, m)?)?;
    m.add_function(wrap_pyfunction!(abstention_finish, m)?)?;
    m.add_function(wrap_pyfunction!(repeated_call_finish, m)?)?;
    m.add_function(wrap_pyfunction!(unrecovered_tool_error_finish, m)?)?;
    m.add_function(wrap_pyfunction!(context_overflow_finish, m)?)?;
    m.add_function(wrap_pyfunction!(context_overflow_observe, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stretches, m)?)?;
    m.add_function(wrap_pyfunction!(context_overflow_observe_spans, m)?)?;
    m.add_function(wrap_pyfunction!(deny_only_observe_spans, m)?)?;
    m.add_function(wrap_pyfunction!(abstention_phrase, m)?)?;
    m.add_function(wrap_pyfunction!(overflow_phrase, m)?)?;
    m.add_function(wrap_pyfunction!(lower_matches, m)?)?;
    Ok(())
}
