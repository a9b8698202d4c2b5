//! The binding's dealings with the interpreter itself: how a compiled function's panic
//! reaches Python (`guard.rs`), and values taken out of Python's cyclic collector
//! (`collector.rs`).

pub mod collector;
pub mod guard;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    collector::register(m)
}
