//! A completed run's facts (model/run.py): its steps, prompt, answer, agent, measures and
//! what was not captured, from one pass over its spans; and the records' layout they read.

pub mod facts;
pub mod record;
pub mod steps;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<facts::RunFact>()?;
    m.add_class::<steps::StepsView>()?;
    m.add_function(wrap_pyfunction!(steps::steps_not_captured, m)?)?;
    Ok(())
}
