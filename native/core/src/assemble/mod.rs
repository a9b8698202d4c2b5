//! The assembler's state: the decision cache, and which run each span of a trace belongs to.

pub mod decided;
pub mod partition;
