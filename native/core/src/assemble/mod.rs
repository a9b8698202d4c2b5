//! The assembler's state: span and trace ids as it keeps them, and the decision cache.

pub mod decided;
pub mod ids;
