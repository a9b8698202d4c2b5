//! The core's own data: span and trace ids, values, records, and values' JSON and Python
//! literal forms, written and read as Python writes and reads them.

pub mod attributes;
pub mod ids;
pub mod json;
pub mod literal;
pub mod reason;
pub mod record;
pub mod run;
pub mod value;
