//! Span export's compiled half: the received request forwarded as its bytes, less the roots
//! held for their run's verdict (`cut.rs`).

pub mod cut;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    cut::register(m)
}
