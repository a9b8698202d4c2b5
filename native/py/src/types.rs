//! The package's own record classes, handed to the binding by the package when it loads
//! (model/records.py calls `use_types`): the binding builds records of them and imports no
//! Python module to find them.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyTuple, PyType};

pub struct Types {
    pub span_record: Py<PyType>,
    pub tool_execution: Py<PyType>,
    pub tool_call: Py<PyType>,
    pub step: Py<PyType>,
    /// the shared empty mapping of records without attributes
    pub no_attrs: Py<PyAny>,
    /// model/reason.py's `Reason` and `Quote`: a reason that quotes a value cut short
    pub reason: Py<PyAny>,
    pub quote: Py<PyAny>,
    pub empty: Py<PyTuple>,
}

static TYPES: GILOnceCell<Types> = GILOnceCell::new();

/// The classes, once the package has handed them over.
pub fn types(py: Python<'_>) -> PyResult<&'static Types> {
    TYPES.get(py).ok_or_else(|| {
        PyRuntimeError::new_err("faultgate_stream.model.records has not handed its classes to the binding (use_types)")
    })
}

/// `use_types(span_record, tool_execution, tool_call, step, no_attrs, reason, quote)`: the
/// record classes the binding builds (each a NamedTuple: a tuple subclass of no other
/// state), and the reason classes, once.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn use_types(py: Python<'_>, span_record: Bound<'_, PyType>, tool_execution: Bound<'_, PyType>,
                 tool_call: Bound<'_, PyType>, step: Bound<'_, PyType>, no_attrs: Bound<'_, PyAny>,
                 reason: Bound<'_, PyAny>, quote: Bound<'_, PyAny>) -> PyResult<()> {
    for cls in [&span_record, &tool_execution, &tool_call, &step] {
        // records are allocated as tuples (records.rs): they must be tuple subclasses
        if !cls.is_subclass_of::<PyTuple>()? {
            return Err(PyTypeError::new_err(format!("{} is not a tuple", cls.name()?)));
        }
    }
    let _ = TYPES.set(py, Types {
        span_record: span_record.unbind(),
        tool_execution: tool_execution.unbind(),
        tool_call: tool_call.unbind(),
        step: step.unbind(),
        no_attrs: no_attrs.unbind(),
        reason: reason.unbind(),
        quote: quote.unbind(),
        empty: PyTuple::empty(py).unbind(),
    });
    Ok(())
}
