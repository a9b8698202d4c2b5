//! The binding's dealings with the interpreter itself: how a compiled function's panic
//! reaches Python (`guard.rs`), values taken out of Python's cyclic collector
//! (`collector.rs`), and how long a thread waited for the GIL (`gil.rs`).

pub mod collector;
pub mod gil;
pub mod guard;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    collector::register(m)
}
