//! Python's own spellings, shared by every stage that must write text exactly as the
//! Python it replaced did (a reason, a canonical argument, a rendered payload), and how a
//! compiled function's panic reaches Python (`guard.rs`).

pub mod float;
pub mod guard;
