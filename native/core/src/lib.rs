//! faultgate-stream's core: the pipeline the package runs, in plain Rust, with no Python in
//! it. The binding (native/py) is its one user; `cargo test` here needs no interpreter.
//!
//! Modules in pipeline order (DESIGN.md), each using only those before it (tests/layout.rs
//! holds that): `error` is every module's; `pyfmt` writes and reads text exactly as the
//! Python the package replaced did; `model` holds the records, values and their JSON and
//! literal forms; `wire` is protobuf's wire format; `wal` checksums the write-ahead log's
//! records; `read` accepts and reads requests into records; `assemble` keeps what the
//! assembler remembers of decided traces; `run` works out a completed run's facts;
//! `checks` are the built-in checks.

pub mod error;
pub mod pyfmt;
pub mod model;
pub mod wire;
pub mod wal;
pub mod read;
pub mod assemble;
pub mod run;
pub mod checks;

#[cfg(test)]
pub mod testing;
