//! Span export's compiled half: the received request forwarded as its bytes, less the roots
//! held for their run's verdict (`cut.rs`), and the verdict appended to a run's root
//! (`annex.rs`).

pub mod annex;
pub mod cut;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    cut::register(m)?;
    annex::register(m)
}
