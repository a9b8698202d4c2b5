//! A completed run's facts (`facts.rs`), and its measures as Python added them
//! (`measure.rs`).

pub mod facts;
pub mod measure;
