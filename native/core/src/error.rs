//! The core's errors. Most are what the Python the core replaced raised in the same place
//! (a `TypeError` of `json.dumps`, an `OverflowError` of `int()`): the binding raises the
//! same exception class, so a caller sees what it always saw. What a check finds is data,
//! never an error.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// An error of a caller's own code the core called back (a policy's pattern matcher),
/// carried through unchanged for the caller to raise again.
#[derive(Clone)]
pub struct Foreign(pub Arc<dyn Any + Send + Sync>);

impl PartialEq for Foreign {
    fn eq(&self, other: &Foreign) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Foreign {}

impl fmt::Debug for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Foreign(..)")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Python's `TypeError`.
    Type(String),
    /// Python's `ValueError`.
    Value(String),
    /// Python's `RecursionError`.
    Recursion(String),
    /// Python's `OverflowError`.
    Overflow(String),
    /// Bytes that are not the protobuf message they should be.
    Malformed(String),
    /// Python's `UnicodeEncodeError` of text that holds a lone surrogate, at this character.
    UnicodeEncode(usize),
    /// A caller's own error (`Foreign`).
    Foreign(Foreign),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Type(m) | Error::Value(m) | Error::Recursion(m) | Error::Overflow(m) => f.write_str(m),
            Error::Malformed(m) => write!(f, "not a protobuf message: {m}"),
            Error::UnicodeEncode(at) => write!(f, "'utf-8' codec can't encode a character in position {at}: surrogates not allowed"),
            Error::Foreign(_) => f.write_str("an error of the caller's own code"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
