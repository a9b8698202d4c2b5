//! The assembler's state: the decision cache.

pub mod decided;
