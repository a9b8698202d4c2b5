//! serde_json's lexer as the OTLP/JSON reader (otlp_json.rs) drives it: the whole input
//! checked as UTF-8 once, and the marker serde_json uses for a number kept as its text
//! (integers of any size, feature arbitrary_precision) told from a key a document writes.

use serde::de::{self, DeserializeSeed};

// serde_json's marker for a number kept as its text (feature arbitrary_precision)
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// ``seed`` over the whole of ``data`` (nothing but whitespace after it). UTF-8 is checked
/// once for the whole input, so serde_json reads it as text and does not check each string
/// again (that was 8% of reading a gate file, callgrind). Bytes that are not UTF-8 are
/// refused as serde_json refused them, and every caller hands them to Python as before.
pub(crate) fn parse<'de, S: DeserializeSeed<'de>>(data: &'de [u8], seed: S) -> serde_json::Result<S::Value> {
    let text = std::str::from_utf8(data).map_err(de::Error::custom)?;
    let mut d = serde_json::Deserializer::from_str(text);
    let v = seed.deserialize(&mut d)?;
    d.end().map(|_| v)
}

#[derive(Clone, Copy)]
pub(crate) struct Input(usize, usize);

impl Input {
    pub(crate) fn of(data: &[u8]) -> Input {
        let start = data.as_ptr() as usize;
        Input(start, start + data.len())
    }

    /// Whether ``key`` is serde_json's marker: its text, not borrowed from the input.
    pub(crate) fn is_marker(self, key: &str) -> bool {
        let at = key.as_ptr() as usize;
        key == NUMBER_TOKEN && !(self.0..self.1).contains(&at)
    }
}

