//! ``json.dumps(v, ensure_ascii=False)`` of a value and ``repr`` of a float, as Python
//! writes them byte for byte; a value Python must write (fallback.rs) is handed to it.

use pyo3::exceptions::PyRecursionError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::read::fallback::python;
use crate::read::value::{text_of_py, V};

// json.dumps is written here for values at most this deep and left to Python beyond,
// where its RecursionError is its own to raise (payload.dumps turns it into a marker).
const MAX_DUMPS_DEPTH: u32 = 200;

/// ``repr(x)`` (``json``: json.dumps's spelling of the non-finite ones).
pub fn float_repr(x: f64, out: &mut Vec<u8>, json: bool) {
    if json && !x.is_finite() {
        out.extend_from_slice(match (x.is_nan(), x > 0.0) {
            (true, _) => b"NaN".as_slice(),
            (false, true) => b"Infinity",
            (false, false) => b"-Infinity",
        });
        return;
    }
    faultgate_core::pyfmt::float::repr(x, out);
}

// ------------------------------------------------------------------ json.dumps

/// Whether ``json.dumps`` runs with ``default=payload._plain`` (bytes as base64, anything
/// else ``str()``) or with no default (a value JSON cannot hold is a TypeError).
#[derive(Clone, Copy, PartialEq)]
pub enum Default {
    Plain,
    Strict,
}

/// Writing a value here would not be json.dumps's answer: Python writes it.
struct Unwritable;

/// ``json.dumps(v, ensure_ascii=False[, default=_plain])``; with ``Plain``, a value nested
/// too deep for Python is the marker payload.dumps gives.
pub fn dumps<'py>(py: Python<'py>, v: &V<'_, 'py>, default: Default) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    if write_json(v, &mut out, default, 0).is_ok() {
        return Ok(out);
    }
    let obj = v.to_py(py, None)?;
    let fallback = python(py)?.dumps(py, default)?;
    match fallback.call1((obj,)) {
        Ok(s) => text_of_py(s.downcast::<PyString>()?),
        Err(e) if default == Default::Plain && e.is_instance_of::<PyRecursionError>(py) => {
            Ok(b"[unreadable: nested too deep]".to_vec())
        }
        Err(e) => Err(e),
    }
}

fn write_json(v: &V, out: &mut Vec<u8>, default: Default, depth: u32) -> Result<(), Unwritable> {
    if depth > MAX_DUMPS_DEPTH {
        return Err(Unwritable);
    }
    match v {
        V::Null => out.extend_from_slice(b"null"),
        V::Bool(true) => out.extend_from_slice(b"true"),
        V::Bool(false) => out.extend_from_slice(b"false"),
        V::Int(x) => out.extend_from_slice(x.to_string().as_bytes()),
        V::Float(x) => float_repr(*x, out, true),
        V::Str(s) => json_string(s, out),
        V::Bytes(b) if default == Default::Plain => {
            out.push(b'"');
            base64(b, out);
            out.push(b'"');
        }
        V::List(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_json(x, out, default, depth + 1)?;
            }
            out.push(b']');
        }
        V::Dict(items) => {
            out.push(b'{');
            for (i, (k, x)) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                match k {
                    V::Str(s) => json_string(s, out),
                    _ => return Err(Unwritable),
                }
                out.extend_from_slice(b": ");
                write_json(x, out, default, depth + 1)?;
            }
            out.push(b'}');
        }
        _ => return Err(Unwritable),
    }
    Ok(())
}

/// A JSON string as json.dumps writes it with ensure_ascii=False: only the quote, the
/// backslash and control characters escaped (lowercase hex).
fn json_string(s: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(c >> 4) as usize]);
            out.push(HEX[(c & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// ``base64.b64encode(b)`` (payload._plain's spelling of bytes).
fn base64(b: &[u8], out: &mut Vec<u8>) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &x)| n | (x as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}
