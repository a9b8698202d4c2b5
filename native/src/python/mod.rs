//! Python's own spellings, shared by every stage that must write text exactly as the
//! Python it replaced did (a reason, a canonical argument, a rendered payload), and how a
//! compiled function's panic reaches Python (`guard.rs`), and values taken out of Python's
//! cyclic collector (`collector.rs`).

pub mod collector;
pub mod float;
pub mod guard;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    collector::register(m)
}
