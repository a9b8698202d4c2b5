//! Records packed into one `bytes`: how the amendment store (`verdict/amend.py`) keeps a
//! decided run's spans until a late span or a judge's answer needs them again.
//!
//! A kept run lives for minutes, thousands at a time. As `SpanRecord`s (tuple subclasses
//! holding dicts) every full collection walked them; as flat plain tuples (`_plain`, the
//! form before this) the collector let go of them only after looking, and building them
//! cost a Python loop over every field of every span of every decided run. One `bytes` per
//! run holds no reference the collector could follow and is built here in one pass; a run
//! is made records again only when it is evaluated again, which is rare.
//!
//! The encoding is a tagged tree of the values a record holds, each kept as exactly what it
//! was: `None`, `bool`, `int` (up to 64 bits), `float` (its bits), `str`, `bytes`, `tuple`,
//! `list`, `dict` (in order), the shared empty attributes (`NO_ATTRS`, by identity),
//! `ToolExecution`, `ToolCall` and `SpanRecord`; anything else (a subclass, a wider int, a
//! string with a lone surrogate, nesting past `MAX_DEPTH`) is pickled, so any record comes
//! back equal to what went in.

use super::guarded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

const NONE: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 5;
const STR: u8 = 6;
const BYTES: u8 = 7;
const TUPLE: u8 = 8;
const LIST: u8 = 9;
const DICT: u8 = 10;
const NO_ATTRS: u8 = 11;
const TOOL: u8 = 12;
const CALL: u8 = 13;
const RECORD: u8 = 14;
const PICKLED: u8 = 15;

// Attribute values nest (arrays, kvlists) as deep as a sender likes; past this depth a value
// is pickled whole, so the encoder's own recursion stays bounded.
const MAX_DEPTH: u32 = 32;

/// Packs and unpacks records; built once with the record classes it rebuilds.
#[pyclass(module = "faultgate_stream._native", frozen)]
pub struct RecordPacker {
    record: Py<PyType>,
    tool: Py<PyType>,
    call: Py<PyType>,
    no_attrs: Py<PyAny>,
    dumps: Py<PyAny>,
    loads: Py<PyAny>,
    types: Types,
}

/// The types kept as themselves, by address: a value's type is compared with these before
/// anything else, without touching a reference count (the record classes stay alive in the
/// fields above, the builtins always).
struct Types {
    str_: usize,
    int: usize,
    bool_: usize,
    float: usize,
    bytes: usize,
    dict: usize,
    list: usize,
    tuple: usize,
    record: usize,
    tool: usize,
    call: usize,
}

fn address(t: &Bound<'_, PyType>) -> usize {
    t.as_ptr() as usize
}

impl RecordPacker {
    fn put(&self, py: Python<'_>, v: &Bound<'_, PyAny>, out: &mut Vec<u8>, depth: u32) -> PyResult<()> {
        // SAFETY: `v` is a live object; its type pointer is only compared, never followed
        let ty = unsafe { pyo3::ffi::Py_TYPE(v.as_ptr()) } as usize;
        let t = &self.types;
        if ty == t.str_ {
            // SAFETY: its type is exactly str
            if let Ok(s) = unsafe { v.downcast_unchecked::<PyString>() }.to_str() {
                out.push(STR);
                put_len(out, s.len())?;
                out.extend_from_slice(s.as_bytes());
                return Ok(());
            } // a lone surrogate: pickled below
        } else if v.is_none() {
            out.push(NONE);
            return Ok(());
        } else if ty == t.int {
            if let Ok(i) = v.extract::<i64>() {
                out.push(INT);
                out.extend_from_slice(&i.to_le_bytes());
                return Ok(());
            } // past 64 bits: pickled below
        } else if v.is(self.no_attrs.bind(py)) {
            out.push(NO_ATTRS);
            return Ok(());
        } else if ty == t.bool_ {
            out.push(if v.is_truthy()? { TRUE } else { FALSE });
            return Ok(());
        } else if ty == t.float {
            out.push(FLOAT);
            out.extend_from_slice(&v.extract::<f64>()?.to_bits().to_le_bytes());
            return Ok(());
        } else if ty == t.bytes {
            // SAFETY: its type is exactly bytes
            let b = unsafe { v.downcast_unchecked::<PyBytes>() }.as_bytes();
            out.push(BYTES);
            put_len(out, b.len())?;
            out.extend_from_slice(b);
            return Ok(());
        } else if depth < MAX_DEPTH {
            if ty == t.dict {
                // SAFETY: its type is exactly dict
                let d = unsafe { v.downcast_unchecked::<PyDict>() };
                out.push(DICT);
                put_len(out, d.len())?;
                for (k, x) in d.iter() {
                    self.put(py, &k, out, depth + 1)?;
                    self.put(py, &x, out, depth + 1)?;
                }
                return Ok(());
            }
            if ty == t.list {
                // SAFETY: its type is exactly list
                let l = unsafe { v.downcast_unchecked::<PyList>() };
                out.push(LIST);
                put_len(out, l.len())?;
                for x in l.iter() {
                    self.put(py, &x, out, depth + 1)?;
                }
                return Ok(());
            }
            let tag = match ty {
                _ if ty == t.tuple => TUPLE,
                _ if ty == t.record => RECORD,
                _ if ty == t.tool => TOOL,
                _ if ty == t.call => CALL,
                _ => 0,
            };
            if tag != 0 {
                // SAFETY: its type is exactly tuple or one of the record classes, tuples' subclasses
                let tup = unsafe { v.downcast_unchecked::<PyTuple>() };
                out.push(tag);
                put_len(out, tup.len())?;
                for x in tup.iter_borrowed() {
                    self.put(py, &x, out, depth + 1)?;
                }
                return Ok(());
            }
        }
        let b = self.dumps.bind(py).call1((v,))?;
        let b = b.downcast::<PyBytes>()?.as_bytes();
        out.push(PICKLED);
        put_len(out, b.len())?;
        out.extend_from_slice(b);
        Ok(())
    }

    fn get<'py>(&self, py: Python<'py>, r: &mut Reader<'_>) -> PyResult<Bound<'py, PyAny>> {
        let tag = r.byte()?;
        Ok(match tag {
            NONE => py.None().into_bound(py),
            FALSE => PyBool::new(py, false).to_owned().into_any(),
            TRUE => PyBool::new(py, true).to_owned().into_any(),
            NO_ATTRS => self.no_attrs.bind(py).clone(),
            INT => i64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes")).into_pyobject(py)?.into_any(),
            FLOAT => PyFloat::new(py, f64::from_bits(u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))))
                .into_any(),
            STR => {
                let n = r.len()?;
                PyString::new(py, std::str::from_utf8(r.take(n)?).map_err(|_| corrupt())?).into_any()
            }
            BYTES => {
                let n = r.len()?;
                PyBytes::new(py, r.take(n)?).into_any()
            }
            DICT => {
                let n = r.len()?;
                let d = PyDict::new(py);
                for _ in 0..n {
                    let k = self.get(py, r)?;
                    let v = self.get(py, r)?;
                    d.set_item(k, v)?;
                }
                d.into_any()
            }
            LIST => {
                let n = r.len()?;
                let l = PyList::empty(py);
                for _ in 0..n {
                    l.append(self.get(py, r)?)?;
                }
                l.into_any()
            }
            TUPLE | RECORD | TOOL | CALL => {
                let n = r.len()?;
                let mut items = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    items.push(self.get(py, r)?);
                }
                let t = PyTuple::new(py, items)?;
                let cls = match tag {
                    RECORD => self.record.bind(py),
                    TOOL => self.tool.bind(py),
                    CALL => self.call.bind(py),
                    _ => return Ok(t.into_any()),
                };
                // tuple.__new__: the NamedTuple's own __new__ is Python and takes keywords
                py.get_type::<PyTuple>().call_method1("__new__", (cls, t))?
            }
            PICKLED => {
                let n = r.len()?;
                self.loads.bind(py).call1((PyBytes::new(py, r.take(n)?),))?
            }
            _ => return Err(corrupt()),
        })
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) -> PyResult<()> {
    let n = u32::try_from(n).map_err(|_| PyValueError::new_err("a value too large to keep"))?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

fn corrupt() -> PyErr {
    PyValueError::new_err("not packed records")
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> PyResult<&[u8]> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.buf.len()).ok_or_else(corrupt)?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> PyResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn len(&mut self) -> PyResult<usize> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize)
    }
}

#[pymethods]
impl RecordPacker {
    #[new]
    fn new(py: Python<'_>, record: Py<PyType>, tool: Py<PyType>, call: Py<PyType>, no_attrs: Py<PyAny>)
        -> PyResult<Self> {
        let pickle = py.import("pickle")?;
        for cls in [&record, &tool, &call] {
            if !cls.bind(py).is_subclass_of::<PyTuple>()? {
                return Err(PyValueError::new_err("the record classes are tuples"));
            }
        }
        let types = Types {
            str_: address(&py.get_type::<PyString>()),
            int: address(&py.get_type::<PyInt>()),
            bool_: address(&py.get_type::<PyBool>()),
            float: address(&py.get_type::<PyFloat>()),
            bytes: address(&py.get_type::<PyBytes>()),
            dict: address(&py.get_type::<PyDict>()),
            list: address(&py.get_type::<PyList>()),
            tuple: address(&py.get_type::<PyTuple>()),
            record: address(record.bind(py)),
            tool: address(tool.bind(py)),
            call: address(call.bind(py)),
        };
        Ok(RecordPacker {
            record,
            tool,
            call,
            no_attrs,
            dumps: pickle.getattr("dumps")?.unbind(),
            loads: pickle.getattr("loads")?.unbind(),
            types,
        })
    }

    /// ``pack(records, root) -> (packed, sum of their sizes, index of root among them)``:
    /// the index is the first record that is ``root`` (-1 when none is). Packed runs join
    /// by concatenation: ``pack(a) + pack(b)`` unpacks as ``a + b``.
    fn pack<'py>(&self, py: Python<'py>, records: &Bound<'py, PyAny>, root: &Bound<'py, PyAny>)
        -> PyResult<(Bound<'py, PyBytes>, i64, i64)> {
        guarded(|| {
            let mut out = Vec::with_capacity(8192);
            let mut size: i64 = 0;
            let mut root_at: i64 = -1;
            for (i, r) in records.try_iter()?.enumerate() {
                let r = r?;
                if root_at < 0 && r.is(root) {
                    root_at = i as i64;
                }
                if let Ok(t) = r.downcast::<PyTuple>() {
                    if t.len() > super::table::SIZE {
                        size = size.saturating_add(t.get_item(super::table::SIZE)?.extract::<i64>().unwrap_or(0));
                    }
                }
                self.put(py, &r, &mut out, 0)?;
            }
            Ok((PyBytes::new(py, &out), size, root_at))
        })
    }

    /// The records ``pack`` packed, in order.
    fn unpack<'py>(&self, py: Python<'py>, packed: &[u8]) -> PyResult<Bound<'py, PyList>> {
        guarded(|| {
            let out = PyList::empty(py);
            let mut r = Reader { buf: packed, at: 0 };
            while r.at < packed.len() {
                out.append(self.get(py, &mut r)?)?;
            }
            Ok(out)
        })
    }
}
