//! A check's results (`CheckResult`), made as checks/base.py makes them: `result()` and
//! `undecided()`, constructed by the class, positionally (`undecided` by keyword).
//!
//! A result that did not fire carries only the check's own words and counts ("answered",
//! "10 calls within policy", "undecided: ... on step(s) 3"), the same for every run that
//! says them: such a result is made once and shared (it is immutable), up to a bound on
//! how many each check keeps. A fired result is made each time: its reason may quote what
//! the run said, and a quoted value is a `Reason` carrying it whole for masking.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::collections::HashMap;
use std::sync::Mutex;

// Distinct reasons kept per check: counts make a few hundred at most, in any workload
const KEPT: usize = 4096;

#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct Outcomes {
    make: PyObject,
    name: PyObject,
    severity: PyObject,
    kind: PyObject,
    kept: Mutex<HashMap<(bool, String), PyObject>>,
}

#[pymethods]
impl Outcomes {
    /// `Outcomes(CheckResult, check.name, check.severity, check.kind)`
    #[new]
    fn new(make: PyObject, name: PyObject, severity: PyObject, kind: PyObject) -> Self {
        Outcomes { make, name, severity, kind, kept: Mutex::new(HashMap::new()) }
    }
}

impl Outcomes {
    fn shared(&self, py: Python<'_>, undecided: bool, reason: String) -> PyResult<PyObject> {
        let key = (undecided, reason);
        if let Some(r) = self.kept.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(r.clone_ref(py));
        }
        let r = if undecided {
            let kw = PyDict::new(py);
            kw.set_item("undecided", true)?;
            self.make.bind(py).call((&self.name, false, 0.0, format!("undecided: {}", key.1), &self.severity, &self.kind),
                                    Some(&kw))?
        } else {
            self.make.bind(py).call1((&self.name, false, 1.0, key.1.as_str(), &self.severity, &self.kind))?
        }.unbind();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT {
            kept.insert(key, r.clone_ref(py));
        }
        Ok(r)
    }

    /// `self.result(False, reason)`
    pub fn passed(&self, py: Python<'_>, reason: impl Into<String>) -> PyResult<PyObject> {
        self.shared(py, false, reason.into())
    }

    /// `self.undecided(missing)`
    pub fn undecided(&self, py: Python<'_>, missing: impl Into<String>) -> PyResult<PyObject> {
        self.shared(py, true, missing.into())
    }

    /// `self.result(True, reason)`
    pub fn fired(&self, py: Python<'_>, reason: &Bound<'_, PyString>) -> PyResult<PyObject> {
        Ok(self.make.bind(py).call1((&self.name, true, 1.0, reason, &self.severity, &self.kind))?.unbind())
    }
}
