//! faultgate_stream._native: the binding of faultgate-core (native/core) as one Python module,
//! built by maturin (pyproject.toml's build backend). Its folders follow the package's
//! pipeline (DESIGN.md): `read/` decodes OTLP protobuf and OTLP/JSON into records;
//! `assemble/` keeps the assembler's traces in flight; `run/` computes a completed run's
//! facts; `checks/` holds the default rule checks and the signals they share; `export/`
//! forwards a received request's bytes less its held roots; `receive.rs` checksums the
//! write-ahead log's records; `convert.rs` and `records.rs`
//! turn the core's values and records into Python's; `attributes.rs` is a record's
//! attributes for Python, a read-only mapping over the core's own; `types.rs` holds the record classes the
//! package hands over. Each folder registers its own functions and
//! classes here; `python/` holds the binding's dealings with the interpreter itself. What
//! reads Python objects here moves into the core stage by stage, the core's own types
//! taking the place of the records' fields.

mod assemble;
mod attributes;
mod checks;
mod convert;
mod export;
mod python;
mod read;
mod receive;
mod records;
mod run;
mod types;

use pyo3::prelude::*;

// Rust's own blocks only; why mimalloc: Cargo.toml
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(types::use_types, m)?)?;
    python::register(m)?;
    attributes::register(m)?;
    receive::register(m)?;
    read::register(m)?;
    assemble::register(m)?;
    run::register(m)?;
    checks::register(m)?;
    export::register(m)
}
