//! Values taken out of Python's cyclic garbage collector, which walks every container it
//! tracks at each collection of its generation (about a microsecond an object at the live
//! service's sizes, bench/README.md).
//!
//! Untracking is sound for a value no reference cycle passes through: reference counting
//! alone frees it then. An untracked object inside a cycle would only keep that cycle
//! alive, never free anything early. CPython untracks exact tuples of untracked items
//! itself (`_PyTuple_MaybeUntrack`), but only at a collection, and never a tuple subclass
//! (a `NamedTuple` record), a frozenset or a dict.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyTuple};

// Verdicts nest four deep; past this a branch is left as it is (still correct, only tracked).
const MAX_DEPTH: u32 = 16;

/// `obj` (a live GC object) out of the collector's lists.
pub fn untrack(obj: &Bound<'_, PyAny>) {
    // SAFETY: untracking a tracked or untracked GC object is allowed, and its deallocator
    // untracks again harmlessly
    unsafe { pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
}

fn tracked(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is live; the call only reads its GC header, and is 0 for a non-GC object
    unsafe { pyo3::ffi::PyObject_GC_IsTracked(obj.as_ptr()) == 1 }
}

/// A tuple subclass whose instances hold only their items (a `NamedTuple`: `__slots__ = ()`),
/// not a `__dict__` that could refer to anything.
fn items_only(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_exact_instance_of::<PyTuple>()
        || obj.get_type().getattr(pyo3::intern!(obj.py(), "__dictoffset__"))?.extract::<isize>()? == 0)
}

fn walk(obj: &Bound<'_, PyAny>, depth: u32) -> PyResult<()> {
    if depth > MAX_DEPTH || !tracked(obj) {
        return Ok(()); // an untracked container's items were made untracked with it, or are left as they were
    }
    if let Ok(t) = obj.downcast::<PyTuple>() {
        if !items_only(obj)? {
            return Ok(());
        }
        for item in t.iter() {
            walk(&item, depth + 1)?;
        }
    } else if obj.is_exact_instance_of::<PyFrozenSet>() {
        for item in obj.downcast::<PyFrozenSet>()?.iter() {
            walk(&item, depth + 1)?;
        }
    } else if obj.is_exact_instance_of::<PyDict>() {
        // a dict tracks itself again when a container is put into it (CPython's MAINTAIN_TRACKING)
        for (k, v) in obj.downcast::<PyDict>()?.iter() {
            walk(&k, depth + 1)?;
            walk(&v, depth + 1)?;
        }
    } else {
        return Ok(()); // anything else (an enum member, a str subclass with attributes) stays as it is
    }
    untrack(obj);
    Ok(())
}

/// `obj` returned, with it and the tuples (records included), frozensets and dicts inside it
/// untracked. For values built once and kept long (a decided run's verdict) that nothing
/// inside can refer back to: the caller's promise, which an immutable record built from its
/// fields keeps.
#[pyfunction]
pub fn untrack_acyclic(obj: Bound<'_, PyAny>) -> PyResult<Bound<'_, PyAny>> {
    crate::python::guard::guarded("untrack_acyclic", || {
        walk(&obj, 0)?;
        Ok(obj.clone())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(untrack_acyclic, m)?)
}
