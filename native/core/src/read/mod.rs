//! The readers: a request's bytes -> records, and the conventions they are built by.

pub mod accept;
pub mod attrs;
pub mod bounds;
pub mod content_events;
pub mod conventions;
pub mod key_set;
pub mod openinference;
pub mod openllmetry;
pub mod otlp_proto;
pub mod payload;
pub mod unread;
pub mod vercel;

/// The rest of a key after a pattern's prefix as `(.+)$` takes it: no line break but one
/// final one (`$` matches before it), at least one character.
pub fn rest_of_line(s: &[u8]) -> Option<&[u8]> {
    let body = match memchr::memchr(b'\n', s) {
        None => s,
        Some(i) if i + 1 == s.len() => &s[..i],
        Some(_) => return None,
    };
    if body.is_empty() {
        None
    } else {
        Some(body)
    }
}
