//! The readers: a request's bytes -> what the pipeline keeps of it.

pub mod accept;
