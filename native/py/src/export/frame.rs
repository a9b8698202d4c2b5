//! A released span framed for export: one `ExportTraceServiceRequest.resource_spans` entry
//! holding the span under its resource and scope, written around bytes that are already
//! encoded (a held root, with the verdict's annex after it: two encodings of one message
//! concatenated decode as their merge). Written as upb writes the same message: fields in
//! field-number order, lengths as minimal varints, the resource and the scope always
//! present, a schema URL only when it is not empty.
//!
//! Once per decided run; the framing written in Python cost a dozen calls and allocations
//! per run (varints, the pieces, their join) where this is one pass into one `bytes`.

use super::cut::{REQUEST_RESOURCE_SPANS, RESOURCE_SPANS_RESOURCE, RESOURCE_SPANS_SCHEMA_URL, RESOURCE_SPANS_SCOPE_SPANS,
                 SCOPE_SPANS_SCHEMA_URL, SCOPE_SPANS_SCOPE, SCOPE_SPANS_SPANS};
use faultgate_core::wire::{put_len_field, put_len_head};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn varint_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// The size of a length-delimited field of ``len`` body bytes (every key here is one byte).
fn field_len(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

fn optional_len(s: &str) -> usize {
    if s.is_empty() { 0 } else { field_len(s.len()) }
}

/// The entry's bytes: `span` followed by `annex` as the one span of its scope and resource.
pub fn entry(resource: &[u8], resource_schema: &str, scope: &[u8], scope_schema: &str, span: &[u8], annex: &[u8])
             -> Vec<u8> {
    let span_len = span.len() + annex.len();
    let scope_spans = field_len(scope.len()) + field_len(span_len) + optional_len(scope_schema);
    let resource_spans = field_len(resource.len()) + field_len(scope_spans) + optional_len(resource_schema);
    let mut out = Vec::with_capacity(field_len(resource_spans));
    put_len_head(&mut out, REQUEST_RESOURCE_SPANS, resource_spans);
    put_len_field(&mut out, RESOURCE_SPANS_RESOURCE, resource);
    put_len_head(&mut out, RESOURCE_SPANS_SCOPE_SPANS, scope_spans);
    put_len_field(&mut out, SCOPE_SPANS_SCOPE, scope);
    put_len_head(&mut out, SCOPE_SPANS_SPANS, span_len);
    out.extend_from_slice(span);
    out.extend_from_slice(annex);
    if !scope_schema.is_empty() {
        put_len_field(&mut out, SCOPE_SPANS_SCHEMA_URL, scope_schema.as_bytes());
    }
    if !resource_schema.is_empty() {
        put_len_field(&mut out, RESOURCE_SPANS_SCHEMA_URL, resource_schema.as_bytes());
    }
    debug_assert_eq!(out.len(), out.capacity());
    out
}

/// ``entry`` for Python: ``span_entry(resource, resource_schema, scope, scope_schema, span,
/// annex=b"")``.
#[pyfunction]
#[pyo3(signature = (resource, resource_schema, scope, scope_schema, span, annex = b"".as_slice()))]
fn span_entry<'py>(py: Python<'py>, resource: &[u8], resource_schema: &str, scope: &[u8], scope_schema: &str,
                   span: &[u8], annex: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &entry(resource, resource_schema, scope, scope_schema, span, annex))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(span_entry, m)?)
}
