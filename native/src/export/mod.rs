//! Span export's compiled half: the received request forwarded as its bytes, less the roots
//! held for their run's verdict (`cut.rs`), and the evaluation events written on a run's
//! root (`events.rs`).

pub mod cut;
pub mod events;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    cut::register(m)?;
    events::register(m)
}
