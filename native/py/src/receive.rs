//! The receivers' compiled half: the write-ahead log's record checksum (the core's wal.rs)
//! for receive/wal/segments.py.

use faultgate_core::wal::checksum;
use pyo3::prelude::*;

/// Above this a checksum lets the GIL go (a request of megabytes: a millisecond and more);
/// below, taking it back would cost more than the checksum.
const RELEASE_GIL_BYTES: usize = 1 << 20;

/// ``wal_checksum(data) -> int``: the CRC-32 of ``data``, equal to ``zlib.crc32(data)``.
#[pyfunction]
fn wal_checksum(py: Python<'_>, data: &[u8]) -> u32 {
    if data.len() >= RELEASE_GIL_BYTES {
        py.allow_threads(|| checksum(data))
    } else {
        checksum(data)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(wal_checksum, m)?)
}
