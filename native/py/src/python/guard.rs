//! A panic (a bug: none is expected on any input) would reach Python as pyo3's
//! PanicException, a BaseException that the receivers', the completion scan's and the
//! evaluator's `except Exception` do not take: it must arrive as an ordinary error (a bug
//! of ours, counted as an internal error), never end a thread.

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;

/// Runs `f`; a panic becomes a RuntimeError naming `what` panicked.
pub fn guarded<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(PyRuntimeError::new_err(format!("{what} panicked"))))
}
