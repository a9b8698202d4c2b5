//! unrecovered_tool_error (checks/unrecovered_tool_error.py): a tool call failed and the
//! same tool (or a declared alternative) never succeeded afterwards; else a span whose
//! status says error with no later successful tool span.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::outcome::Outcomes;
use super::{signals, text};
use crate::run::record::{SpanItem, MISSING_TOOL_RESULT};
use crate::run::steps::StepsView;

/// The latest index `last` holds for the tool or any of its alternatives; -1 for none.
fn latest(alternatives: &Bound<'_, PyDict>, last: &HashMap<&[u8], i64>, tool: &Bound<'_, PyString>)
          -> PyResult<i64> {
    let mut best = last.get(text::read(tool)?.bytes()).copied().unwrap_or(-1);
    if !alternatives.is_empty() {
        if let Some(alts) = alternatives.get_item(tool)? {
            for t in alts.try_iter()? {
                let t = t?;
                let t = t.downcast::<PyString>()?;
                best = best.max(last.get(text::read(t)?.bytes()).copied().unwrap_or(-1));
            }
        }
    }
    Ok(best)
}

pub fn finish(py: Python<'_>, run: &Bound<'_, PyAny>, alternatives: &Bound<'_, PyDict>, out: &Outcomes)
              -> PyResult<PyObject> {
    let view = StepsView::of(run)?;
    let steps = &view.get().items;
    let failed = view.get().errors(py)?;
    // A failed step is recovered when a later call to its tool succeeded, that is when the
    // tool's last successful step comes after it: one pass instead of a scan of every
    // later step for each failure.
    let tools = steps.iter().map(|st| text::read(st.tool.bind(py))).collect::<PyResult<Vec<_>>>()?;
    let mut last_ok: HashMap<&[u8], i64> = HashMap::default();
    for (j, t) in tools.iter().enumerate() {
        if failed[j].is_none() {
            last_ok.insert(t.bytes(), j as i64);
        }
    }
    for (i, st) in steps.iter().enumerate() {
        if let Some(err) = &failed[i] {
            let tool = st.tool.bind(py);
            if latest(alternatives, &last_ok, tool)? < i as i64 {
                let mut head = b"Tool '".to_vec();
                head.extend_from_slice(text::read(tool)?.bytes());
                head.extend_from_slice(format!("' failed at step {} (", st.index).as_bytes());
                let mut tail = b") and no subsequent call to '".to_vec();
                tail.extend_from_slice(text::read(tool)?.bytes());
                tail.extend_from_slice(b"' succeeded.");
                let reason = signals::joined_reason(py, vec![text::to_py(py, &head)?.into_any(),
                                                             err.bind(py).clone().into_any(),
                                                             text::to_py(py, &tail)?.into_any()])?;
                return out.fired(py, &reason);
            }
        }
    }
    let spans = view.get().spans(run)?;
    if !spans.iter().any(|s| s.status_error || s.error_type.is_some()) {
        return clean(py, &view, out);
    }
    // recovered: a later span that did not fail ran tool calls that all succeeded
    let step_ids = steps.iter().map(|st| text::read(st.span_id.bind(py))).collect::<PyResult<Vec<_>>>()?;
    let mut ran_ok: HashSet<&[u8]> = step_ids.iter().map(|t| t.bytes()).collect();
    for (t, f) in step_ids.iter().zip(failed) {
        if f.is_some() {
            ran_ok.remove(t.bytes());
        }
    }
    let failing = |s: &SpanItem| s.status_error || s.error_type.is_some();
    let ids = spans.iter().map(|s| text::read(s.span_id.bind(py))).collect::<PyResult<Vec<_>>>()?;
    let tool_names = spans.iter().map(|s| s.tool_name.as_ref().map(|t| text::read(t.bind(py))).transpose())
        .collect::<PyResult<Vec<_>>>()?;
    let mut last_good = -1i64;
    // A tool span that failed by its status alone is made good only by a later successful
    // call of the same tool (or a declared alternative): another tool working afterwards
    // leaves the call it failed undone.
    let mut last_good_of: HashMap<&[u8], i64> = HashMap::default();
    for (j, s) in spans.iter().enumerate() {
        if failing(s) || !ran_ok.contains(ids[j].bytes()) {
            continue;
        }
        last_good = j as i64;
        if let Some(t) = &tool_names[j] {
            last_good_of.insert(t.bytes(), j as i64);
        }
    }
    for (i, s) in spans.iter().enumerate() {
        if !failing(s) {
            continue;
        }
        let good = match &s.tool_name {
            None => last_good,
            Some(t) => latest(alternatives, &last_good_of, t.bind(py))?,
        };
        if good < i as i64 {
            let mut reason = format!("Unrecovered span error at span {} of {}: ", i + 1, spans.len()).into_bytes();
            if s.status_error {
                reason.extend_from_slice(b"Span status error: Code 2");
            } else if let Some(t) = &s.error_type {
                reason.extend_from_slice(b"Span error: ");
                reason.extend_from_slice(text::read(t.bind(py))?.bytes());
            }
            return out.fired(py, &text::to_py(py, &reason)?);
        }
    }
    clean(py, &view, out)
}

/// An error said only in a result's text is invisible when results were not recorded.
fn clean(py: Python<'_>, view: &Bound<'_, StepsView>, out: &Outcomes) -> PyResult<PyObject> {
    let gap = view.get().not_captured(MISSING_TOOL_RESULT);
    if gap.is_empty() {
        out.passed(py, "no unrecovered tool errors")
    } else {
        out.undecided(py, gap)
    }
}
