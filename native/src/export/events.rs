//! A verdict's `gen_ai.evaluation.result` events, as bytes to append to its root's encoding
//! (export/spans/annotate.py's `VerdictBytes`).
//!
//! Why it exists: each event is a field of the root (`Span.events`, 11) framing the
//! event's head (its time and name, the same for every event of a run) and the result's
//! attributes, which repeat from run to run (a check that passed says the same thing each
//! time), so each distinct result's attributes are encoded once, by Python (protobuf and
//! the redactor), and kept. Looking each result up and framing it was a Python loop of six
//! dictionary lookups and tuple keys a run, a fifth of what annotating a root cost.
//!
//! A result is kept by what its attributes are made of: its check, whether it fired or
//! was undecided, its reason, its severity (the enum member, by identity: members live as
//! long as their class) and its rule digest. A reason that is not exactly a `str` (a
//! `Reason`, which quotes a value cut short: two equal as text may mask differently) is
//! encoded every time, as is one Rust cannot read as UTF-8 (a lone surrogate: protobuf
//! raises for it, as it did before). The table is cleared when full, never grown.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use rustc_hash::FxHashMap as HashMap;

use crate::python::guard::guarded;
use crate::wire::put_varint;

const SPAN_EVENTS_KEY: u8 = 11 << 3 | 2;

/// Where `CheckResult`'s fields are, by position (the record is a tuple).
#[derive(Clone, Copy)]
struct Fields {
    check: usize,
    fired: usize,
    reason: usize,
    severity: usize,
    undecided: usize,
}

#[pyclass(module = "faultgate_stream._native", frozen)]
pub struct EvaluationEvents {
    /// `make(result, digest)`: the event's attributes, encoded (the bytes after its head)
    make: Py<PyAny>,
    max: usize,
    fields: Fields,
    /// a result's key (`key`) -> its encoded attributes; locked only between calls into
    /// Python, so another thread that runs during `make` finds it free
    kept: Mutex<HashMap<Vec<u8>, Py<PyBytes>>>,
}

/// A string's bytes behind their length, so two keys of different parts never run together.
fn put_str(key: &mut Vec<u8>, s: &str) {
    key.extend_from_slice(&(s.len() as u64).to_le_bytes());
    key.extend_from_slice(s.as_bytes());
}

impl EvaluationEvents {
    /// The key ``result`` is kept under, or None when it is not kept (see the module's note).
    fn key(&self, result: &Bound<'_, PyTuple>, digest: &Bound<'_, PyAny>, key: &mut Vec<u8>) -> PyResult<bool> {
        let f = self.fields;
        let reason = result.get_item(f.reason)?;
        if !reason.is_exact_instance_of::<PyString>() {
            return Ok(false);
        }
        let (Ok(check), Ok(digest)) = (result.get_item(f.check)?.downcast_into::<PyString>(), digest.downcast::<PyString>())
        else {
            return Ok(false);
        };
        let (Ok(check), Ok(reason), Ok(digest)) = (check.to_str(), reason.downcast::<PyString>()?.to_str(), digest.to_str())
        else {
            return Ok(false);
        };
        key.clear();
        put_str(key, check);
        put_str(key, reason);
        put_str(key, digest);
        key.push(result.get_item(f.fired)?.is_truthy()? as u8);
        key.push(result.get_item(f.undecided)?.is_truthy()? as u8);
        key.extend_from_slice(&(result.get_item(f.severity)?.as_ptr() as usize).to_le_bytes());
        Ok(true)
    }

    fn attributes(&self, py: Python<'_>, result: &Bound<'_, PyTuple>, digest: &Bound<'_, PyAny>, key: &mut Vec<u8>)
                  -> PyResult<Py<PyBytes>> {
        let kept = self.key(result, digest, key)?;
        if kept {
            if let Some(b) = self.kept.lock().unwrap().get(key.as_slice()) {
                return Ok(b.clone_ref(py));
            }
        }
        let made = self.make.bind(py).call1((result, digest))?.downcast_into::<PyBytes>()?.unbind();
        if kept {
            let mut table = self.kept.lock().unwrap();
            if table.len() >= self.max {
                table.clear();
            }
            table.insert(key.clone(), made.clone_ref(py));
        }
        Ok(made)
    }
}

#[pymethods]
impl EvaluationEvents {
    #[new]
    #[pyo3(signature = (make, max, check, fired, reason, severity, undecided))]
    fn new(make: Py<PyAny>, max: usize, check: usize, fired: usize, reason: usize, severity: usize, undecided: usize)
           -> Self {
        EvaluationEvents { make, max, fields: Fields { check, fired, reason, severity, undecided },
                           kept: Mutex::new(HashMap::default()) }
    }

    /// One event per result, in order: the `Span.events` key, the event's length, ``head``,
    /// the result's attributes (``digests`` holds one rule digest per result).
    fn encode<'py>(&self, py: Python<'py>, results: &Bound<'py, PyTuple>, digests: &Bound<'py, PyTuple>,
                   head: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        guarded("EvaluationEvents.encode", || {
            let mut out = Vec::with_capacity(results.len() * (head.len() + 160));
            let mut key = Vec::with_capacity(128);
            for (result, digest) in results.iter().zip(digests.iter()) {
                let attrs = self.attributes(py, result.downcast()?, &digest, &mut key)?;
                let attrs = attrs.as_bytes(py);
                out.push(SPAN_EVENTS_KEY);
                put_varint(&mut out, (head.len() + attrs.len()) as u64);
                out.extend_from_slice(head);
                out.extend_from_slice(attrs);
            }
            Ok(PyBytes::new(py, &out))
        })
    }

    /// The results kept now (for the bound's test).
    fn __len__(&self) -> usize {
        self.kept.lock().unwrap().len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EvaluationEvents>()
}
