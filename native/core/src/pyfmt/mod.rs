//! Python's own spellings and text rules, as plain Rust: what several stages must write and
//! read exactly as the Python they replaced did (a float in a reason, `str.strip()`, `repr`
//! of a quoted value, `int()` of a digit in another script).

pub mod float;
pub mod strs;
pub mod unicode_tables;
