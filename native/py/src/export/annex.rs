//! A verdict as bytes to append to its root's encoding: the root's annex (export/spans/
//! annotate.py's `VerdictBytes`, which says why a root is annotated without being decoded).
//!
//! Why it exists: most of an annex repeats from run to run (a check that passed says the
//! same thing each time), so each distinct piece is encoded once, by Python (protobuf and
//! the redactor, called back here), and kept; what differs per run (its id, the events'
//! time) is framed here. Looking the pieces up and joining them in Python was a loop of
//! tuple keys and dictionary lookups over the results, twice what the checks of a run
//! cost to finish (bench/README.md).
//!
//! The annex is, in order: the summary (verdict, fired and undecided checks, completion),
//! the run id, the scenario, one reason per fired check, the amendment's attributes, then
//! one `gen_ai.evaluation.result` event per result. A piece is kept by what it is made of:
//! a summary by the fired and undecided checks' names and the completion (the enum
//! member, by identity: members live as long as their class); an event by its check,
//! whether it fired or was undecided, its reason, its severity (by identity) and its rule
//! digest. A reason or scenario that is not exactly a `str` (a `Reason`, which quotes a
//! value cut short: two equal as text may mask differently) is encoded every time, as is
//! text Rust cannot read as UTF-8 (a lone surrogate: protobuf raises for it, as before).
//! The table is cleared when full, never grown; `evicted` counts the pieces a clear forgot
//! (faultgate_exporter_annex_cache_evictions).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use rustc_hash::FxHashMap as HashMap;

use crate::python::guard::guarded;
use faultgate_core::wire::{put_len_field, put_len_head};

// field numbers of opentelemetry/proto/trace/v1/trace.proto and common.proto
const SPAN_ATTRIBUTES: u64 = 9;
const SPAN_EVENTS: u64 = 11;
const KEY_VALUE_KEY: u64 = 1;
const KEY_VALUE_VALUE: u64 = 2;
const ANY_VALUE_STRING: u64 = 1;
const EVENT_TIME_KEY: u8 = 1 << 3 | 1; // Span.Event's time_unix_nano: field 1, a fixed64
const EVENT_NAME: u64 = 2;
const RUN_ID_KEY: &str = "faultgate.run_id";
const EVENT: &str = "gen_ai.evaluation.result";

// what a kept piece is, the first byte of its key
const SUMMARY: u8 = 1;
const SCENARIO: u8 = 2;
const REASON: u8 = 3;
const EVALUATION: u8 = 4;

/// Where `CheckResult`'s fields are, by position (the record is a tuple).
#[derive(Clone, Copy)]
struct Fields {
    check: usize,
    fired: usize,
    reason: usize,
    severity: usize,
    undecided: usize,
}

/// Python's encoders, called for a piece not kept yet.
struct Makers {
    summary: Py<PyAny>,    // (fired names, undecided names, completion) -> bytes
    scenario: Py<PyAny>,   // (scenario) -> bytes
    reason: Py<PyAny>,     // (check, reason) -> bytes
    evaluation: Py<PyAny>, // (result, digest) -> an event's attributes, the bytes after its head
    head: Py<PyAny>,       // (time) -> an event's head, for a time this side does not write (protobuf refuses it)
}

#[pyclass(module = "faultgate_stream._native", frozen)]
pub struct VerdictAnnex {
    make: Makers,
    max: usize,
    fields: Fields,
    /// a piece's key -> its bytes; locked only between calls into Python, so another
    /// thread that runs while a maker runs finds it free
    kept: Mutex<HashMap<Vec<u8>, Py<PyBytes>>>,
    /// pieces forgotten by clears since the table was made: added to only when one clears,
    /// read at scrape time without the table's lock
    evicted: AtomicU64,
}

/// A string's bytes behind their length, so two keys of different parts never run together.
fn put_str(key: &mut Vec<u8>, s: &str) {
    key.extend_from_slice(&(s.len() as u64).to_le_bytes());
    key.extend_from_slice(s.as_bytes());
}

/// An object's address, for what is kept by identity.
fn put_id(key: &mut Vec<u8>, obj: &Bound<'_, PyAny>) {
    key.extend_from_slice(&(obj.as_ptr() as usize).to_le_bytes());
}

/// Exactly a `str` that is valid UTF-8: text a piece may be kept by.
fn plain<'a>(obj: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    if !obj.is_exact_instance_of::<PyString>() {
        return None;
    }
    // SAFETY: its type is exactly str
    unsafe { obj.downcast_unchecked::<PyString>() }.to_str().ok()
}

/// One `Span.attributes` field holding a string value, as upb writes it.
fn string_attribute(out: &mut Vec<u8>, key: &str, value: &str) {
    let mut any = Vec::with_capacity(value.len() + 4);
    put_len_field(&mut any, ANY_VALUE_STRING, value.as_bytes());
    let mut kv = Vec::with_capacity(key.len() + any.len() + 8);
    put_len_field(&mut kv, KEY_VALUE_KEY, key.as_bytes());
    put_len_field(&mut kv, KEY_VALUE_VALUE, &any);
    put_len_field(out, SPAN_ATTRIBUTES, &kv);
}

impl VerdictAnnex {
    /// The kept pieces. A panic while they were locked (none is expected) left them whole:
    /// each change is one insert or a clear, so they are used as they are.
    fn table(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Py<PyBytes>>> {
        self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The piece kept under ``key`` (None: not kept), else ``make()``'s, kept.
    fn piece<'py>(&self, py: Python<'py>, key: Option<&[u8]>, make: impl FnOnce() -> PyResult<Bound<'py, PyAny>>)
                  -> PyResult<Py<PyBytes>> {
        if let Some(k) = key {
            if let Some(b) = self.table().get(k) {
                return Ok(b.clone_ref(py));
            }
        }
        let made = make()?.downcast_into::<PyBytes>()?.unbind();
        if let Some(k) = key {
            let mut table = self.table();
            if table.len() >= self.max {
                self.evicted.fetch_add(table.len() as u64, Ordering::Relaxed);
                table.clear();
            }
            table.insert(k.to_vec(), made.clone_ref(py));
        }
        Ok(made)
    }

    fn evaluation_key(&self, result: &Bound<'_, PyTuple>, digest: &Bound<'_, PyAny>, key: &mut Vec<u8>)
                      -> PyResult<bool> {
        let f = self.fields;
        let (reason, check) = (result.get_item(f.reason)?, result.get_item(f.check)?);
        let (Some(reason), Some(check), Some(digest)) = (plain(&reason), plain(&check), plain(digest)) else {
            return Ok(false);
        };
        key.clear();
        key.push(EVALUATION);
        put_str(key, check);
        put_str(key, reason);
        put_str(key, digest);
        key.push(result.get_item(f.fired)?.is_truthy()? as u8);
        key.push(result.get_item(f.undecided)?.is_truthy()? as u8);
        put_id(key, &result.get_item(f.severity)?);
        Ok(true)
    }

    /// The events' head: their time (none when 0) and name; Python's for a time past a fixed64.
    fn head(&self, py: Python<'_>, when: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        let mut head = Vec::with_capacity(40);
        match when.extract::<u64>() {
            Ok(t) => {
                if t != 0 {
                    head.push(EVENT_TIME_KEY);
                    head.extend_from_slice(&t.to_le_bytes());
                }
                put_len_field(&mut head, EVENT_NAME, EVENT.as_bytes());
            }
            Err(_) => head.extend_from_slice(self.make.head.bind(py).call1((when,))?.downcast::<PyBytes>()?.as_bytes()),
        }
        Ok(head)
    }
}

#[pymethods]
impl VerdictAnnex {
    #[new]
    #[pyo3(signature = (summary, scenario, reason, evaluation, head, max, fields))]
    fn new(summary: Py<PyAny>, scenario: Py<PyAny>, reason: Py<PyAny>, evaluation: Py<PyAny>, head: Py<PyAny>,
           max: usize, fields: (usize, usize, usize, usize, usize)) -> Self {
        let (check, fired, reason_at, severity, undecided) = fields;
        VerdictAnnex {
            make: Makers { summary, scenario, reason, evaluation, head },
            max,
            fields: Fields { check, fired, reason: reason_at, severity, undecided },
            kept: Mutex::new(HashMap::default()),
            evicted: AtomicU64::new(0),
        }
    }

    /// The annex of a verdict with these ``results`` (``digests``: one rule digest each),
    /// ``completion``, ``scenario`` and ``run_id``, ``amended`` (its amendment's attributes,
    /// encoded, or empty) and its events' time ``when``.
    #[allow(clippy::too_many_arguments)]
    fn encode<'py>(&self, py: Python<'py>, results: &Bound<'py, PyTuple>, digests: &Bound<'py, PyTuple>,
                   completion: &Bound<'py, PyAny>, scenario: &Bound<'py, PyAny>, run_id: &Bound<'py, PyString>,
                   amended: &[u8], when: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        guarded("VerdictAnnex.encode", || {
            let f = self.fields;
            // refused first, whatever else the verdict holds, as protobuf refused it
            let head = self.head(py, when)?;
            let mut fired = Vec::new();
            let mut undecided = Vec::new();
            for r in results.iter() {
                let r = r.downcast_into::<PyTuple>()?;
                if r.get_item(f.fired)?.is_truthy()? {
                    fired.push(r.clone());
                }
                if r.get_item(f.undecided)?.is_truthy()? {
                    undecided.push(r.get_item(f.check)?);
                }
            }
            let fired_names = fired.iter().map(|r| r.get_item(f.check)).collect::<PyResult<Vec<_>>>()?;
            let mut out = Vec::with_capacity(results.len() * (head.len() + 200) + 200);
            let mut key = Vec::with_capacity(128);

            // the summary
            key.clear();
            key.push(SUMMARY);
            let mut keyed = true;
            for names in [&fired_names, &undecided] {
                key.extend_from_slice(&(names.len() as u64).to_le_bytes());
                for n in names.iter() {
                    match plain(n) {
                        Some(s) => put_str(&mut key, s),
                        None => keyed = false,
                    }
                }
            }
            put_id(&mut key, completion);
            let summary = self.piece(py, keyed.then_some(key.as_slice()), || {
                self.make.summary.bind(py).call1((PyTuple::new(py, &fired_names)?, PyTuple::new(py, &undecided)?,
                                                  completion))
            })?;
            out.extend_from_slice(summary.as_bytes(py));

            string_attribute(&mut out, RUN_ID_KEY, run_id.to_str()?);

            let scenario_key = plain(scenario).map(|s| {
                key.clear();
                key.push(SCENARIO);
                put_str(&mut key, s);
                key.clone()
            });
            let piece = self.piece(py, scenario_key.as_deref(), || self.make.scenario.bind(py).call1((scenario,)))?;
            out.extend_from_slice(piece.as_bytes(py));

            for (r, check) in fired.iter().zip(&fired_names) {
                let reason = r.get_item(f.reason)?;
                let reason_key = match (plain(check), plain(&reason)) {
                    (Some(c), Some(t)) => {
                        key.clear();
                        key.push(REASON);
                        put_str(&mut key, c);
                        put_str(&mut key, t);
                        Some(key.clone())
                    }
                    _ => None,
                };
                let piece = self.piece(py, reason_key.as_deref(),
                                       || self.make.reason.bind(py).call1((check, &reason)))?;
                out.extend_from_slice(piece.as_bytes(py));
            }
            out.extend_from_slice(amended);

            for (r, digest) in results.iter().zip(digests.iter()) {
                let r = r.downcast_into::<PyTuple>()?;
                let kept = self.evaluation_key(&r, &digest, &mut key)?;
                let attrs = self.piece(py, kept.then_some(key.as_slice()),
                                       || self.make.evaluation.bind(py).call1((&r, &digest)))?;
                let attrs = attrs.as_bytes(py);
                put_len_head(&mut out, SPAN_EVENTS, head.len() + attrs.len());
                out.extend_from_slice(&head);
                out.extend_from_slice(attrs);
            }
            Ok(PyBytes::new(py, &out))
        })
    }

    /// The pieces kept now (for the bound's test).
    fn __len__(&self) -> usize {
        self.table().len()
    }

    /// The pieces forgotten when the full table was cleared, since it was made: a count that
    /// keeps rising means more distinct pieces than it holds, each encoded again.
    #[getter]
    fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<VerdictAnnex>()
}
