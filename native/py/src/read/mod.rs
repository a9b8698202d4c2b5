//! The readers for Python: the core's (native/core/src/read) giving the package's records,
//! and the request check.

pub mod bounds;
pub mod conventions;
pub mod json;
pub mod otlp_json;
pub mod otlp_proto;
pub mod payload;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// ``check_traces(data)``: None when upb accepts ``data`` as an `ExportTraceServiceRequest`;
/// else ValueError naming what it refuses and where
/// (``resource_spans[0].scope_spans[1].spans[3].name: a string is not UTF-8``).
#[pyfunction]
pub fn check_traces(data: &[u8]) -> PyResult<()> {
    crate::python::guard::guarded("the compiled request check", || {
        faultgate_core::read::accept::check_traces(data).map_err(PyValueError::new_err)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_traces, m)?)?;
    bounds::register(m)?;
    otlp_proto::register(m)?;
    conventions::register(m)?;
    payload::register(m)?;
    otlp_json::register(m)
}
