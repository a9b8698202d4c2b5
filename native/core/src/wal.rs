//! The write-ahead log's record checksum (the package's receive/wal/segments.py keeps the
//! log and its record layout; this is its one per-byte cost).
//!
//! Why it is here: the log checksums every request it logs, and zlib's CRC-32 (the
//! standard library's, one table lookup a byte) was most of the log's own instructions in
//! the live service: ~4,700 a span of the bench's 512-span requests, a quarter of its CPU
//! (bench/README.md). crc32fast computes the same CRC-32 (zlib's polynomial, so logs
//! written before stay readable) with the processor's carry-less multiply where it has
//! one, some ten times faster.

/// The CRC-32 of `bytes`, as zlib's `crc32` gives it.
pub fn checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_zlibs_crc32() {
        // the standard check value of CRC-32, and zlib.crc32(b"") == 0
        assert_eq!(checksum(b"123456789"), 0xCBF4_3926);
        assert_eq!(checksum(b""), 0);
    }

    #[test]
    fn long_inputs_take_the_fast_path_and_agree_with_the_bytewise_definition() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut crc = !0u32;
        for &b in &data {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        assert_eq!(checksum(&data), !crc);
    }
}
