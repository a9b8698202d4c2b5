//! Protobuf's wire format, field by field: what the readers (read/otlp_proto.rs) and span
//! export (export/cut.rs) walk a request's bytes with.

use crate::error::Error;

// upb refuses messages nested deeper than 100; this bound only keeps the stack safe if a
// caller ever hands over bytes read/accept.rs did not accept.
pub const MAX_DEPTH: u32 = 128;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const GROUP_START: u8 = 3;
const GROUP_END: u8 = 4;
const FIXED32: u8 = 5;

pub struct Malformed(pub &'static str);

impl From<Malformed> for Error {
    fn from(m: Malformed) -> Error {
        Error::Malformed(m.0.to_owned())
    }
}

pub type Result<T> = std::result::Result<T, Malformed>;

/// One message's bytes, field by field.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Other,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Fields { buf, pos: 0 }
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64> {
        // tags, lengths and most enum values are one byte
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.long_varint()
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64> {
        let mut out: u64 = 0;
        for i in 0..10 {
            let b = *self.buf.get(self.pos).ok_or(Malformed("truncated varint"))?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(Malformed("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or(Malformed("truncated field"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn fixed64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// Skips a group up to its end tag, nested groups included.
    fn skip_group(&mut self, number: u64, depth: u32) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Malformed("groups nested too deep"));
        }
        loop {
            if self.pos >= self.buf.len() {
                return Err(Malformed("unterminated group"));
            }
            let tag = self.varint()?;
            let (n, wt) = (tag >> 3, (tag & 7) as u8);
            match wt {
                GROUP_END if n == number => return Ok(()),
                GROUP_END => return Err(Malformed("mismatched end group")),
                GROUP_START => self.skip_group(n, depth + 1)?,
                _ => {
                    self.value(wt)?;
                }
            }
        }
    }

    #[inline(always)]
    fn value(&mut self, wt: u8) -> Result<Value<'a>> {
        Ok(match wt {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => Value::Fixed64(self.fixed64()?),
            LEN => {
                let n = self.varint()?;
                Value::Bytes(self.take(usize::try_from(n).map_err(|_| Malformed("length too large"))?)?)
            }
            FIXED32 => {
                self.take(4)?;
                Value::Other
            }
            _ => return Err(Malformed("invalid wire type")),
        })
    }

    /// The next field as (number, value); unknown groups are skipped on the way. Inlined
    /// into the readers' loops: a call a field, its result returned through memory, was a
    /// tenth of reading a span.
    #[inline(always)]
    pub fn next(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        Ok(self.next_at()?.map(|(_, n, v)| (n, v)))
    }

    /// ``next``, with the offset in the message at which the field's tag starts (after
    /// any group skipped before it): the field is ``buf[at..self.offset()]``.
    #[inline(always)]
    pub fn next_at(&mut self) -> Result<Option<(usize, u64, Value<'a>)>> {
        loop {
            if self.pos >= self.buf.len() {
                return Ok(None);
            }
            let at = self.pos;
            let tag = self.varint()?;
            let (n, wt) = (tag >> 3, (tag & 7) as u8);
            if n == 0 {
                return Err(Malformed("field number 0"));
            }
            match wt {
                GROUP_START => self.skip_group(n, 0)?,
                GROUP_END => return Err(Malformed("end group without a start")),
                _ => return Ok(Some((at, n, self.value(wt)?))),
            }
        }
    }

    /// Where the next field starts: the end of the one ``next_at`` returned.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

/// ``n`` as a varint, appended to ``out``.
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The key and length of a length-delimited field (field ``number``, wire type 2), whose
/// ``len`` bytes the caller appends next.
pub fn put_len_head(out: &mut Vec<u8>, number: u64, len: usize) {
    put_varint(out, number << 3 | LEN as u64);
    put_varint(out, len as u64);
}

/// A length-delimited field: its key, the body's length, the body.
pub fn put_len_field(out: &mut Vec<u8>, number: u64, body: &[u8]) {
    put_len_head(out, number, body.len());
    out.extend_from_slice(body);
}

#[inline]
pub fn utf8(b: &[u8]) -> Result<&str> {
    // most keys, names and values are short and ASCII: an OR of their bytes (vectorised)
    // settles them without the general validator's setup, ~100 instructions a call
    if b.len() <= 64 && b.iter().fold(0u8, |acc, &x| acc | x) < 0x80 {
        // SAFETY: every byte is below 0x80, ASCII, which is UTF-8
        return Ok(unsafe { std::str::from_utf8_unchecked(b) });
    }
    std::str::from_utf8(b).map_err(|_| Malformed("a string field is not UTF-8"))
}

/// The occurrences of length-delimited field ``number`` of a message, in order.
pub fn repeated(msg: &[u8], number: u64) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut f = Fields::new(msg);
    while let Some((n, v)) = f.next()? {
        if let (true, Value::Bytes(b)) = (n == number, v) {
            out.push(b);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::utf8;

    #[test]
    fn utf8_agrees_with_the_standard_validator_on_each_side_of_its_ascii_shortcut() {
        let mut cases: Vec<Vec<u8>> = vec![b"".to_vec(), b"gen_ai.tool.name".to_vec(), "caf\u{e9}".into(),
                                           vec![0xff], vec![0xc3], vec![0xed, 0xa0, 0x80], vec![0xc0, 0x80]];
        for n in [63, 64, 65, 200] {
            cases.push(vec![b'a'; n]);
            let mut bad = vec![b'a'; n];
            bad[n - 1] = 0x80;
            cases.push(bad);
            let mut two = vec![b'a'; n - 1];
            two.extend("\u{e9}".as_bytes());
            cases.push(two);
        }
        for c in cases {
            assert_eq!(utf8(&c).ok(), std::str::from_utf8(&c).ok(), "{c:?}");
        }
    }
}
