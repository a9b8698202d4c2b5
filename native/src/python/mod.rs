//! Python's own spellings, shared by every stage that must write text exactly as the
//! Python it replaced did (a reason, a canonical argument, a rendered payload).

pub mod float;
