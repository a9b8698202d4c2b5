//! A check's results (`CheckResult`) of the core's outcomes, made as checks/base.py makes
//! them: `result()` and `undecided()`, constructed by the class, positionally (`undecided`
//! by keyword).
//!
//! A result that did not fire carries only the check's own words and counts ("answered",
//! "10 calls within policy", "undecided: ... on step(s) 3"), the same for every run that
//! says them: such a result is made once and shared (it is immutable), up to a bound on
//! how many each check keeps. A fired result is made each time: its reason may quote what
//! the run said, and a quoted value is a `Reason` carrying it whole for masking.

use std::collections::HashMap;
use std::sync::Mutex;

use faultgate_core::checks::Outcome;
use faultgate_core::model::reason::{Part, Reason};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::convert::py_text;
use crate::types::types;

// Distinct reasons kept per check: counts make a few hundred at most, in any workload
const KEPT: usize = 4096;

#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct Outcomes {
    make: PyObject,
    name: PyObject,
    severity: PyObject,
    kind: PyObject,
    kept: Mutex<HashMap<(bool, Vec<u8>), PyObject>>,
}

#[pymethods]
impl Outcomes {
    /// `Outcomes(CheckResult, check.name, check.severity, check.kind)`
    #[new]
    fn new(make: PyObject, name: PyObject, severity: PyObject, kind: PyObject) -> Self {
        Outcomes { make, name, severity, kind, kept: Mutex::new(HashMap::new()) }
    }
}

/// `model.reason.reason(*parts)`: a plain str, or a `Reason` when a value is quoted.
pub fn reason_to_py<'py>(py: Python<'py>, r: &Reason) -> PyResult<Bound<'py, PyAny>> {
    if !r.quotes() {
        return Ok(py_text(py, &r.cut())?.into_any());
    }
    let t = types(py)?;
    let parts = r.parts.iter().map(|p| -> PyResult<Bound<'py, PyAny>> {
        Ok(match p {
            Part::Text(x) => py_text(py, x)?.into_any(),
            Part::Quote { value, limit } => t.quote.bind(py).call1((py_text(py, value)?, *limit))?,
        })
    }).collect::<PyResult<Vec<_>>>()?;
    t.reason.bind(py).call1((PyTuple::new(py, parts)?,))
}

impl Outcomes {
    /// The `CheckResult` of an outcome.
    pub fn of(&self, py: Python<'_>, o: &Outcome) -> PyResult<PyObject> {
        if o.fired || o.reason.quotes() {
            let reason = reason_to_py(py, &o.reason)?;
            return Ok(if o.undecided {
                let kw = PyDict::new(py);
                kw.set_item("undecided", true)?;
                self.make.bind(py).call((&self.name, false, 0.0, reason, &self.severity, &self.kind), Some(&kw))?
            } else {
                self.make.bind(py).call1((&self.name, o.fired, 1.0, reason,
                                          &self.severity, &self.kind))?
            }.unbind());
        }
        let key = (o.undecided, o.reason.cut());
        if let Some(r) = self.kept.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(r.clone_ref(py));
        }
        let reason = py_text(py, &key.1)?;
        let r = if o.undecided {
            let kw = PyDict::new(py);
            kw.set_item("undecided", true)?;
            self.make.bind(py).call((&self.name, false, 0.0, reason, &self.severity, &self.kind), Some(&kw))?
        } else {
            self.make.bind(py).call1((&self.name, false, 1.0, reason, &self.severity, &self.kind))?
        }.unbind();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT {
            kept.insert(key, r.clone_ref(py));
        }
        Ok(r)
    }
}
