//! The `policy` check without a policy file (checks/policy/check.py, `_deny_only`): each
//! arriving tool span's and model call's arguments, and at the verdict each step's, against
//! the deny patterns, first match wins.
//!
//! The patterns stay on RE2 (checks/policy/deny_patterns.py, `DenyPatterns.first_match`),
//! the engine operators' patterns run on; what is compiled is everything around it: the
//! text every pattern needs (the defaults all need a "/", and most arguments have none),
//! the per-trace memo of what each argument text matched, and the reasons. So RE2 is asked
//! only about arguments that hold what the patterns need, once per distinct text per trace.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use rustc_hash::FxHashMap;
use std::sync::Mutex;

use super::outcome::Outcomes;
use super::text;
use crate::run::record::{self, CALLS, CALL_ARGUMENTS, SPAN_ID, TOOL, TOOL_ARGUMENTS, MISSING_TOOL_ARGUMENTS};
use crate::run::steps::StepsView;

/// The deny patterns and the policy check's results, shared by every trace.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct DenyOnly {
    patterns: PyObject, // a DenyPatterns
    needs: Vec<u8>,     // text every pattern needs ("" when unknown)
    outcomes: Py<Outcomes>,
}

/// One trace's memo: argument text -> the first pattern it matched (None: none).
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct DenyMemo {
    deny: Py<DenyOnly>,
    seen: Mutex<FxHashMap<Vec<u8>, Option<Py<PyString>>>>,
}

#[pymethods]
impl DenyOnly {
    /// `DenyOnly(deny_patterns, outcomes)`
    #[new]
    fn new(patterns: Bound<'_, PyAny>, outcomes: Py<Outcomes>) -> PyResult<Self> {
        let needs = patterns.getattr(intern!(patterns.py(), "_needs"))?.downcast_into::<PyString>()?;
        let needs = text::read(&needs)?.0.into_owned();
        Ok(DenyOnly { patterns: patterns.unbind(), needs, outcomes })
    }

    /// `check.start()`: a trace's memo.
    fn start(slf: Bound<'_, Self>) -> DenyMemo {
        DenyMemo { deny: slf.unbind(), seen: Mutex::new(FxHashMap::default()) }
    }
}

impl DenyMemo {
    /// The first denied pattern the arguments match, as the policy wrote it.
    fn first_match<'py>(&self, py: Python<'py>, args: &Bound<'py, PyString>) -> PyResult<Option<Py<PyString>>> {
        let deny = self.deny.get();
        let t = text::read(args)?;
        if !deny.needs.is_empty() && memchr::memmem::find(t.bytes(), &deny.needs).is_none() {
            return Ok(None);
        }
        if let Some(found) = self.seen.lock().unwrap_or_else(|e| e.into_inner()).get(t.bytes()) {
            return Ok(found.as_ref().map(|p| p.clone_ref(py)));
        }
        let found = deny.patterns.bind(py).call_method1(intern!(py, "first_match"), (args,))?;
        let found = if found.is_none() { None } else { Some(found.downcast_into::<PyString>()?.unbind()) };
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
            .insert(t.0.into_owned(), found.as_ref().map(|p| p.clone_ref(py)));
        Ok(found)
    }
}

fn denied(py: Python<'_>, place: &[u8], pattern: &Py<PyString>) -> PyResult<Vec<u8>> {
    let mut out = place.to_vec();
    out.extend_from_slice(b": argument matches denied pattern ");
    out.extend_from_slice(text::repr(py, text::read(pattern.bind(py))?.bytes())?.as_bytes());
    Ok(out)
}

/// `observe(state, span)`: a denied argument is final the moment its call arrives.
pub fn observe<'py>(py: Python<'py>, memo: &DenyMemo, span: &Bound<'py, PyTuple>)
                    -> PyResult<Option<Bound<'py, PyString>>> {
    let tool = record::item(span, TOOL)?;
    let mut args = Vec::new();
    if !tool.is_none() {
        args.push(record::str_item(tool.downcast::<PyTuple>()?, TOOL_ARGUMENTS)?);
    }
    for c in record::tuple_item(span, CALLS)?.iter() {
        args.push(record::str_item(c.downcast::<PyTuple>()?, CALL_ARGUMENTS)?);
    }
    for a in &args {
        if let Some(pattern) = memo.first_match(py, a)? {
            let mut place = b"span ".to_vec();
            place.extend_from_slice(text::read(&record::str_item(span, SPAN_ID)?)?.bytes());
            return Ok(Some(text::to_py(py, &denied(py, &place, &pattern)?)?));
        }
    }
    Ok(None)
}

/// `finish(state, run)`: every step whose arguments match, in step order.
pub fn finish(py: Python<'_>, memo: &DenyMemo, run: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    let view = StepsView::of(run)?;
    let out = memo.deny.get().outcomes.get();
    let mut bad: Vec<u8> = Vec::new();
    for st in &view.get().items {
        if let Some(pattern) = memo.first_match(py, st.arguments.bind(py))? {
            if !bad.is_empty() {
                bad.extend_from_slice(b"; ");
            }
            bad.extend_from_slice(&denied(py, format!("step {}", st.index).as_bytes(), &pattern)?);
        }
    }
    if !bad.is_empty() {
        return out.fired(py, &text::to_py(py, &bad)?);
    }
    let gap = view.get().not_captured(MISSING_TOOL_ARGUMENTS);
    if !gap.is_empty() {
        return out.undecided(py, gap);
    }
    out.passed(py, format!("{} calls within policy", view.get().len()))
}

/// `PolicyCheck.observe` without a policy file: the compiled function itself.
#[pyfunction]
pub fn deny_only_observe<'py>(py: Python<'py>, state: Bound<'py, DenyMemo>, span: Bound<'py, PyTuple>)
                              -> PyResult<Option<Bound<'py, PyString>>> {
    super::guarded(|| observe(py, state.get(), &span))
}

/// `PolicyCheck.finish` without a policy file; `state` None: a fresh memo.
#[pyfunction]
#[pyo3(signature = (deny, state, run))]
pub fn deny_only_finish(py: Python<'_>, deny: Bound<'_, DenyOnly>, state: Option<Bound<'_, DenyMemo>>,
                        run: Bound<'_, PyAny>) -> PyResult<PyObject> {
    super::guarded(|| match state {
        Some(s) => finish(py, s.get(), &run),
        None => finish(py, &DenyOnly::start(deny), &run),
    })
}
