//! A check's reason: text that may quote a value cut short for reading, keeping the whole
//! value for masking (model/reason.py says why: a mask that saw only the cut would let half
//! a secret through).

use crate::pyfmt::strs::prefix;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(Vec<u8>),
    /// a value shown cut to `limit` characters, masked whole before the cut
    Quote { value: Vec<u8>, limit: usize },
}

/// `model.reason.reason(*parts)`: text and quoted values, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reason {
    pub parts: Vec<Part>,
}

impl Reason {
    pub fn text(t: impl Into<Vec<u8>>) -> Reason {
        Reason { parts: vec![Part::Text(t.into())] }
    }

    /// Another text part (as `reason()` keeps each text it is given: parts are not joined).
    pub fn push_text(&mut self, t: &[u8]) -> &mut Self {
        self.parts.push(Part::Text(t.to_vec()));
        self
    }

    pub fn push_quote(&mut self, value: &[u8], limit: usize) -> &mut Self {
        self.parts.push(Part::Quote { value: value.to_vec(), limit });
        self
    }

    /// Another reason's parts after these (`reason(self, other)`).
    pub fn push_reason(&mut self, other: &Reason) -> &mut Self {
        self.parts.extend(other.parts.iter().cloned());
        self
    }

    /// Whether a quoted value is in it (else it is plain text).
    pub fn quotes(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Quote { .. }))
    }

    /// What it reads as: each quoted value cut to its limit.
    pub fn cut(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.extend_from_slice(t),
                Part::Quote { value, limit } => out.extend_from_slice(prefix(value, *limit)),
            }
        }
        out
    }
}

impl From<String> for Reason {
    fn from(s: String) -> Reason {
        Reason::text(s.into_bytes())
    }
}

impl From<&str> for Reason {
    fn from(s: &str) -> Reason {
        Reason::text(s.as_bytes().to_vec())
    }
}
