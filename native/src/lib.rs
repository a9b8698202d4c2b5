//! faultgate_stream._native: the compiled half of the package, one Python module built by
//! maturin (pyproject.toml's build backend). Its folders follow the package's pipeline
//! (DESIGN.md): `read/` decodes OTLP protobuf and OTLP/JSON into the rows records are
//! built from; `assemble/` keeps the assembler's traces in flight and its decision cache.
//! Each folder registers its own functions and classes here.

mod assemble;
mod read;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    read::register(m)?;
    assemble::register(m)
}
