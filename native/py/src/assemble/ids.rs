//! The core's ids as Python strings, and a record's times as the table reads them from
//! Python records.

use faultgate_core::model::ids::{SpanId, TraceId};
use pyo3::prelude::*;
use pyo3::types::PyString;


/// An id as the Python string the records carry.
pub trait IdToPy {
    fn to_py<'py>(&self, py: Python<'py>) -> Bound<'py, PyString>;
}

impl IdToPy for SpanId {
    fn to_py<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        PyString::new(py, &self.to_string())
    }
}

impl IdToPy for TraceId {
    fn to_py<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        PyString::new(py, &self.to_string())
    }
}

/// A record's start or end time. Readers make ints, and OTLP's are fixed64 (up to 2**64);
/// anything else (a file reader's huge or odd value) is kept as the object and compared
/// by Python, exactly as the Python code did.
pub enum Time {
    Int(i128),
    Obj(Py<PyAny>),
}

impl Time {
    pub fn read(v: &Bound<'_, PyAny>) -> Time {
        if let Ok(i) = v.extract::<i64>() {
            return Time::Int(i128::from(i));
        }
        if let Ok(u) = v.extract::<u64>() {
            return Time::Int(i128::from(u));
        }
        Time::Obj(v.clone().unbind())
    }

    pub fn int(&self) -> Option<i128> {
        match self {
            Time::Int(i) => Some(*i),
            Time::Obj(_) => None,
        }
    }

    fn obj<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self {
            Time::Int(i) => i.into_pyobject(py).map(|b| b.into_any()).expect("an int converts"),
            Time::Obj(o) => o.bind(py).clone(),
        }
    }

    /// ``bool(t)``
    pub fn truthy(&self, py: Python<'_>) -> PyResult<bool> {
        match self {
            Time::Int(i) => Ok(*i != 0),
            Time::Obj(o) => o.bind(py).is_truthy(),
        }
    }

    /// ``a <= b``
    pub fn le(py: Python<'_>, a: &Time, b: &Time) -> PyResult<bool> {
        match (a, b) {
            (Time::Int(x), Time::Int(y)) => Ok(x <= y),
            _ => a.obj(py).le(b.obj(py)),
        }
    }
}

