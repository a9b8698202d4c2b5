//! Python's own spellings, as plain Rust: what several stages must write exactly as the
//! Python they replaced wrote it (a float in a reason, a canonical argument, a payload).

pub mod float;
