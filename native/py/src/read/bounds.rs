//! The bounds on what a sender may nest (the core's read/bounds.rs), for the Python readers
//! of OTLP/JSON to give the same limits and reasons (read/bounds.py).

use faultgate_core::read::bounds::{json_depth, Over, MAX_VALUES, MAX_VALUE_DEPTH};
use pyo3::prelude::*;

/// ``json_depth(data, limit) -> int``: the core's ``json_depth``; the GIL is released meanwhile.
#[pyfunction]
#[pyo3(name = "json_depth")]
fn py_json_depth(py: Python<'_>, data: &[u8], limit: usize) -> usize {
    py.allow_threads(|| json_depth(data, limit))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_json_depth, m)?)?;
    m.add("MAX_VALUE_DEPTH", MAX_VALUE_DEPTH)?;
    m.add("MAX_VALUES", MAX_VALUES)?;
    m.add("OVER_DEPTH", Over::Depth.message())?;
    m.add("OVER_VALUES", Over::Values.message())
}
