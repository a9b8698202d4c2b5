//! The readers: a request's or a file's bytes -> the rows records are built from.

pub mod json;
pub mod otlp_json;
pub mod otlp_proto;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    otlp_proto::register(m)?;
    m.add_function(wrap_pyfunction!(json::loads, m)?)?;
    otlp_json::register(m)
}
