//! The readers: a request's or a file's bytes -> records, and the conventions they are built by.

pub mod accept;
pub mod attrs;
pub mod bounds;
pub mod conventions;
pub mod dumps;
pub mod fallback;
pub mod json;
pub mod loads;
pub mod openinference;
pub mod openllmetry;
pub mod otlp_json;
pub mod otlp_proto;
pub mod payload;
pub mod text;
pub mod unread;
pub mod vercel;
pub mod value;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    accept::register(m)?;
    bounds::register(m)?;
    otlp_proto::register(m)?;
    m.add_function(wrap_pyfunction!(json::loads, m)?)?;
    conventions::register(m)?;
    payload::register(m)?;
    otlp_json::register(m)
}
