//! Span export's compiled half: the received request forwarded as its bytes, less the roots
//! held for their run's verdict (`cut.rs`), the verdict appended to a run's root
//! (`annex.rs`), and a released span framed under its resource and scope (`frame.rs`).

pub mod annex;
pub mod cut;
pub mod frame;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    cut::register(m)?;
    frame::register(m)?;
    annex::register(m)
}
