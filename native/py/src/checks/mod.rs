//! The built-in checks for Python: each default rule check's class (checks/<name>.py) calls
//! the core's check (native/core/src/checks) from `finish` or `observe`, here, with the
//! run's core facts (run/mod.rs) and its `Outcomes`; and the signals, patterns and text
//! rules the Python checks and tests call.

pub mod outcome;
pub mod policy_deny;
pub mod rules;
pub mod signals;

use std::borrow::Cow;

use faultgate_core::checks::{abstention, context_overflow, repeated_call, search_loop, unrecovered_tool_error};
use faultgate_core::checks::{Arrival, Judged};
use faultgate_core::pyfmt::strs::{lower_contains, lower_equals};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::attributes::SpanAttributes;
use crate::convert::{py_text, text_of, value_of, OrRaise};
use crate::records::field;
use crate::run::judged;
use outcome::Outcomes;

/// Runs `f`; a panic is a RuntimeError the evaluator reports for the check (python/guard.rs).
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("a compiled check", f)
}

#[pyfunction(name = "search_loop")]
fn search_loop_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| outcomes.of(py, &judged(&run, |r, f, d| Ok(search_loop::finish(&Judged::with(r, f, d))))?))
}

#[pyfunction(name = "abstention")]
fn abstention_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| outcomes.of(py, &judged(&run, |r, f, d| Ok(abstention::finish(&Judged::with(r, f, d))))?))
}

#[pyfunction(name = "repeated_call")]
fn repeated_call_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| outcomes.of(py, &judged(&run, |r, f, d| Ok(repeated_call::finish(&Judged::with(r, f, d))))?))
}

/// A policy's interchangeable tools (`{tool: frozenset of tools}`) as the core's.
fn alternatives_of(d: &Bound<'_, PyDict>) -> PyResult<unrecovered_tool_error::Alternatives> {
    let mut out = unrecovered_tool_error::Alternatives::default();
    for (k, v) in d.iter() {
        let alts = v.try_iter()?.map(|t| Ok(text_of(t?.downcast::<PyString>()?)?.into_owned()))
            .collect::<PyResult<Vec<_>>>()?;
        out.insert(text_of(k.downcast::<PyString>()?)?.into_owned(), alts);
    }
    Ok(out)
}

#[pyfunction(name = "unrecovered_tool_error")]
fn unrecovered_tool_error_finish(py: Python<'_>, run: Bound<'_, PyAny>, alternatives: Bound<'_, PyDict>,
                                 outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| {
        let alts = alternatives_of(&alternatives)?;
        let o = judged(&run, |r, f, d| unrecovered_tool_error::finish(&Judged::with(r, f, d), &alts).or_raise())?;
        outcomes.of(py, &o)
    })
}

#[pyfunction(name = "context_overflow")]
fn context_overflow_finish(py: Python<'_>, run: Bound<'_, PyAny>, outcomes: PyRef<'_, Outcomes>) -> PyResult<PyObject> {
    guarded(|| outcomes.of(py, &judged(&run, |r, f, d| context_overflow::finish(&Judged::with(r, f, d)).or_raise())?))
}

/// Which parts of an `Arrival` a check reads: the others are left empty. Every arriving span
/// is read by each observing check, and taking every part for each (two error.type lookups,
/// a list of finish reasons and of arguments per span) cost more than the checks' own work
/// (`bench/hot_path.py --profile`).
#[derive(Clone, Copy)]
pub enum Reads {
    /// finish reasons, status message, error.type (context_overflow)
    Signals,
    /// the tool's and each call's arguments (the policy's deny patterns)
    Arguments,
}

/// What an observing check reads of a Python record (`reads`), borrowed from its strings
/// for the length of `f`; the span id and name always.
pub fn with_arrival<T>(span: &Bound<'_, PyTuple>, reads: Reads,
                       f: impl FnOnce(&Arrival<'_>) -> PyResult<T>) -> PyResult<T> {
    let py = span.py();
    let item = |i: usize| span.get_item(i);
    let mut reasons: Vec<Bound<'_, PyAny>> = Vec::new();
    let mut args: Vec<Bound<'_, PyAny>> = Vec::new();
    let mut error_type = None;
    let mut message = None;
    match reads {
        Reads::Arguments => {
            let tool = item(field::TOOL)?;
            if !tool.is_none() {
                args.push(tool.downcast::<PyTuple>()?.get_item(1)?);
            }
            let calls = item(field::CALLS)?;
            if calls.len()? > 0 {
                for c in calls.try_iter()? {
                    args.push(c?.downcast::<PyTuple>()?.get_item(2)?);
                }
            }
        }
        Reads::Signals => {
            let finish = item(field::FINISH_REASONS)?;
            if finish.len()? > 0 {
                reasons = finish.try_iter()?.collect::<PyResult<_>>()?;
            }
            let attrs = item(field::ATTRS)?;
            error_type = if let Ok(m) = attrs.downcast::<SpanAttributes>() {
                // the core's own value: no Python object made
                m.get().attrs.get(b"error.type").filter(|v| v.truthy()).map(|v| Cow::Owned(v.py_str().into_owned()))
            } else {
                let found = match attrs.downcast::<PyDict>() {
                    Ok(d) => d.get_item(intern!(py, "error.type"))?,
                    Err(_) if attrs.len()? == 0 => None,
                    Err(_) => Some(attrs.call_method1(intern!(py, "get"), (intern!(py, "error.type"),))?),
                };
                match found {
                    Some(v) if !v.is_none() && v.is_truthy()? => Some(Cow::Owned(value_of(&v, 0)?.py_str().into_owned())),
                    _ => None,
                }
            };
            message = Some(item(field::STATUS_MESSAGE)?);
        }
    }
    let (span_id, name) = (item(field::SPAN_ID)?, item(field::NAME)?);
    let a = Arrival {
        span_id: text_of(span_id.downcast::<PyString>()?)?,
        name: text_of(name.downcast::<PyString>()?)?,
        status_message: match &message {
            Some(m) => text_of(m.downcast::<PyString>()?)?,
            None => Cow::Borrowed(&[][..]),
        },
        finish_reasons: reasons.iter().map(|r| text_of(r.downcast::<PyString>()?)).collect::<PyResult<_>>()?,
        error_type,
        arguments: args.iter().map(|a| text_of(a.downcast::<PyString>()?)).collect::<PyResult<_>>()?,
    };
    f(&a)
}

/// `ContextOverflow.observe(state, span)` itself (the class holds it as a staticmethod).
#[pyfunction]
fn context_overflow_observe<'py>(py: Python<'py>, _state: Bound<'py, PyAny>, span: Bound<'py, PyTuple>)
                                 -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| with_arrival(&span, Reads::Signals, |a| context_overflow::observe(a).map(|r| py_text(py, &r)).transpose()))
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
            let t = nth(&spans, i)?.get_item(field::TRACE_ID)?;
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
pub fn observe_stretch<'py>(spans: &Bound<'py, PyAny>, lo: usize, hi: usize,
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
    guarded(|| observe_stretch(&spans, lo, hi, |span| {
        with_arrival(span, Reads::Signals, |a| context_overflow::observe(a).map(|r| py_text(py, &r)).transpose())
    }))
}

/// The phrase abstention's pattern finds in a text (`m.group(0)`), or None: for the tests
/// that hold the pattern to Python's `re`.
#[pyfunction]
fn abstention_phrase<'py>(py: Python<'py>, text: Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| {
        let t = text_of(&text)?;
        abstention::search(&t).map(|(a, b)| py_text(py, &t[a..b])).transpose()
    })
}

/// The limit context_overflow's pattern finds in a text, or None (for the same tests).
#[pyfunction]
fn overflow_phrase<'py>(py: Python<'py>, text: Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| {
        let t = text_of(&text)?;
        context_overflow::search(&t).map(|(a, b)| py_text(py, &t[a..b])).transpose()
    })
}

/// `word in text.lower()` and `text.lower() == word` for a lower-case ASCII word, as the
/// checks read `lower()` (for the tests).
#[pyfunction]
fn lower_matches(text: Bound<'_, PyString>, word: &str) -> PyResult<(bool, bool)> {
    guarded(|| {
        let t = text_of(&text)?;
        Ok((lower_contains(&t, word.as_bytes()), lower_equals(&t, word.as_bytes())))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Outcomes>()?;
    policy_deny::register(m)?;
    rules::register(m)?;
    signals::register(m)?;
    m.add_function(wrap_pyfunction!(search_loop_finish, m)?)?;
    m.add_function(wrap_pyfunction!(abstention_finish, m)?)?;
    m.add_function(wrap_pyfunction!(repeated_call_finish, m)?)?;
    m.add_function(wrap_pyfunction!(unrecovered_tool_error_finish, m)?)?;
    m.add_function(wrap_pyfunction!(context_overflow_finish, m)?)?;
    m.add_function(wrap_pyfunction!(context_overflow_observe, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stretches, m)?)?;
    m.add_function(wrap_pyfunction!(context_overflow_observe_spans, m)?)?;
    m.add_function(wrap_pyfunction!(abstention_phrase, m)?)?;
    m.add_function(wrap_pyfunction!(overflow_phrase, m)?)?;
    m.add_function(wrap_pyfunction!(lower_matches, m)?)?;
    Ok(())
}
