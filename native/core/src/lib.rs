//! faultgate-stream's core: the pipeline the package runs, in plain Rust, with no Python in
//! it. The binding (native/py) is its one user; `cargo test` here needs no interpreter.
//!
//! Modules in pipeline order (DESIGN.md): `pyfmt` writes text and numbers exactly as the
//! Python the package replaced wrote them; `read` accepts and reads requests; `assemble`
//! keeps what the assembler remembers of decided traces.

pub mod assemble;
pub mod pyfmt;
pub mod read;
