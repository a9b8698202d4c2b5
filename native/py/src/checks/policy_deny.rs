//! The `policy` check without a policy file, or with one of deny patterns alone
//! (checks/policy/check.py, `_deny_only`): the core's rule (native/core/src/checks/
//! policy_deny.rs) over faultgate's default patterns, compiled in the core, or over a
//! policy's own patterns, which stay on RE2 (checks/policy/deny_patterns.py's
//! `DenyPatterns.first_match`, called for an argument text the memo has not seen).

use std::sync::Arc;

use faultgate_core::checks::policy_deny::{self as core, defaults, DenyPatterns, Memo};
use faultgate_core::checks::Judged;
use faultgate_core::error::{Error, Result};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::outcome::Outcomes;
use super::{guarded, observe_stretch, with_arrival, Reads};
use crate::convert::{foreign, py_text, text_of};
use crate::run::judged;

/// A policy's own patterns: `DenyPatterns.first_match` on RE2, with the GIL.
struct Re2 {
    patterns: Py<PyAny>,
}

impl DenyPatterns for Re2 {
    fn first_match(&self, arguments: &[u8]) -> Result<Option<Vec<u8>>> {
        Python::with_gil(|py| -> PyResult<Option<Vec<u8>>> {
            let found = self.patterns.bind(py).call_method1(intern!(py, "first_match"), (py_text(py, arguments)?,))?;
            Ok(if found.is_none() { None } else { Some(text_of(found.downcast::<PyString>()?)?.into_owned()) })
        }).map_err(foreign)
    }

    fn needs(&self) -> &[u8] {
        b""
    }
}

/// The deny patterns and the policy check's results, shared by every trace.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct DenyOnly {
    deny: Arc<dyn DenyPatterns>,
    outcomes: Py<Outcomes>,
}

/// One trace's memo: argument text -> the first pattern it matched.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct DenyMemo {
    memo: Memo,
}

#[pymethods]
impl DenyOnly {
    /// `DenyOnly(deny_patterns, outcomes)`: faultgate's defaults (the patterns need a "/")
    /// are the core's; others stay the policy's.
    #[new]
    fn new(patterns: Bound<'_, PyAny>, outcomes: Py<Outcomes>) -> PyResult<Self> {
        let needs = patterns.getattr(intern!(patterns.py(), "_needs"))?.downcast_into::<PyString>()?;
        let deny: Arc<dyn DenyPatterns> = if text_of(&needs)?.as_ref() == defaults().needs() {
            defaults()
        } else {
            Arc::new(Re2 { patterns: patterns.unbind() })
        };
        Ok(DenyOnly { deny, outcomes })
    }

    /// `check.start()`: a trace's memo.
    fn start(slf: Bound<'_, Self>) -> DenyMemo {
        DenyMemo { memo: Memo::new(slf.get().deny.clone()) }
    }
}

/// A policy check's error as Python raised it (RE2's own exception comes back as text).
fn raised(e: Error) -> PyErr {
    crate::convert::py_err(e)
}

/// `PolicyCheck.observe` without a policy file: the compiled function itself.
#[pyfunction]
pub fn deny_only_observe<'py>(py: Python<'py>, state: Bound<'py, DenyMemo>, span: Bound<'py, PyTuple>)
                              -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| {
        with_arrival(&span, Reads::Arguments, |a| core::observe(&state.get().memo, a).map_err(raised)?.map(|r| py_text(py, &r)).transpose())
    })
}

/// `PolicyCheck.observe_spans` without a policy file.
#[pyfunction]
pub fn deny_only_observe_spans<'py>(py: Python<'py>, state: Bound<'py, DenyMemo>, spans: Bound<'py, PyAny>,
                                    lo: usize, hi: usize) -> PyResult<Option<(usize, Bound<'py, PyString>)>> {
    guarded(|| observe_stretch(&spans, lo, hi, |span| {
        with_arrival(span, Reads::Arguments, |a| core::observe(&state.get().memo, a).map_err(raised)?.map(|r| py_text(py, &r)).transpose())
    }))
}

/// `PolicyCheck.finish` without a policy file; `state` None: a fresh memo.
#[pyfunction]
#[pyo3(signature = (deny, state, run))]
pub fn deny_only_finish(py: Python<'_>, deny: Bound<'_, DenyOnly>, state: Option<Bound<'_, DenyMemo>>,
                        run: Bound<'_, PyAny>) -> PyResult<PyObject> {
    guarded(|| {
        let fresh;
        let memo = match &state {
            Some(s) => &s.get().memo,
            None => {
                fresh = Memo::new(deny.get().deny.clone());
                &fresh
            }
        };
        let outcome = judged(&run, |r, f, d| core::finish(memo, &Judged::with(r, f, d)).map_err(raised))?;
        deny.get().outcomes.get().of(py, &outcome)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DenyOnly>()?;
    m.add_class::<DenyMemo>()?;
    m.add_function(wrap_pyfunction!(deny_only_observe, m)?)?;
    m.add_function(wrap_pyfunction!(deny_only_observe_spans, m)?)?;
    m.add_function(wrap_pyfunction!(deny_only_finish, m)?)?;
    Ok(())
}
