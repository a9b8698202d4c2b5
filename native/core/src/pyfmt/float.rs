//! ``repr(x)`` of a float, as CPython writes it: the shortest digits that read back as the
//! same double (David Gay's mode 0), the nearest of those to x and, when two are equally
//! near, the one whose last digit is even; positional when the decimal point falls within
//! 16 digits of them (``0.0001``, ``1234567890123456.0``), else scientific with a signed
//! exponent of at least two digits (``1e-05``, ``1e+16``).

/// Appends ``repr(x)`` (``nan``, ``inf`` and ``-inf`` for the non-finite ones).
pub fn repr(x: f64, out: &mut Vec<u8>) {
    if x.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_sign_negative() {
        out.push(b'-');
    }
    let x = x.abs();
    if x.is_infinite() {
        out.extend_from_slice(b"inf");
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let (digits, decpt) = shortest(x);
    let n = digits.len() as i32;
    if decpt > -4 && decpt <= 16 {
        if decpt <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat(b'0').take((-decpt) as usize));
            out.extend_from_slice(&digits);
        } else if decpt >= n {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat(b'0').take((decpt - n) as usize));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..decpt as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[decpt as usize..]);
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = decpt - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let e = e.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(e.to_string().as_bytes());
    }
}

/// ``repr(x)`` as a String.
pub fn repr_string(x: f64) -> String {
    let mut out = Vec::with_capacity(24);
    repr(x, &mut out);
    String::from_utf8(out).expect("ASCII")
}

/// The shortest round-trip digits of a positive finite x and where the decimal point falls
/// (``decpt``: the value is 0.DIGITS x 10^decpt).
fn shortest(x: f64) -> (Vec<u8>, i32) {
    // Rust's `{:e}` gives the shortest digits that read back to x and the nearest of them,
    // but on an exact tie between two it does not pick the even one as CPython does
    // (562949953421312.25: Rust ...3, CPython ...2)
    let s = format!("{:e}", x);
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mantissa.bytes().filter(|&c| c != b'.').collect();
    let n = digits.len();
    if digits[n - 1] % 2 == 1 {
        if let Some(even) = even_of_a_tie(x, &digits, exp) {
            digits = even;
        }
    }
    (digits, exp + 1)
}

/// When x lies exactly halfway between two n-digit decimals (n = digits.len(), at exponent
/// exp) and the even one of them also reads back as x: that one's digits.
fn even_of_a_tie(x: f64, digits: &[u8], exp: i32) -> Option<Vec<u8>> {
    let n = digits.len();
    // every double's decimal expansion ends within 767 significant digits: this is exact
    let exact = format!("{:.800e}", x);
    let (mantissa, exact_exp) = exact.split_once('e')?;
    if exact_exp.parse::<i32>().ok()? != exp {
        return None;
    }
    let all: Vec<u8> = mantissa.bytes().filter(|&c| c != b'.').collect();
    let (head, tail) = all.split_at(n);
    if tail[0] != b'5' || tail[1..].iter().any(|&c| c != b'0') {
        return None;
    }
    // the two candidates are head and head + 1 in the last place; the even one is whichever
    // ends in an even digit
    let mut candidate = head.to_vec();
    if candidate[n - 1] % 2 == 1 {
        let mut i = n;
        loop {
            if i == 0 {
                return None; // 99..9 + 1 has more digits: not a same-length tie
            }
            i -= 1;
            if candidate[i] == b'9' {
                candidate[i] = b'0';
            } else {
                candidate[i] += 1;
                break;
            }
        }
    }
    let text = format!("{}e{}", std::str::from_utf8(&candidate).ok()?, exp - (n as i32 - 1));
    (text.parse::<f64>().ok()? == x).then(|| trimmed(candidate))
}

fn trimmed(mut digits: Vec<u8>) -> Vec<u8> {
    while digits.len() > 1 && digits[digits.len() - 1] == b'0' {
        digits.pop();
    }
    digits
}

/// `str(int(x))` of a finite float: its integer part, every digit exact (a float of 1e300
/// is a 301-digit int to Python).
pub fn int_text(x: f64) -> String {
    let t = x.trunc();
    if t.abs() < 9.0e18 {
        return (t as i64).to_string();
    }
    // |t| = m * 2^e exactly, m below 2^53, e > 0: m doubled e times, in base 10^9 limbs
    let bits = t.abs().to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32 - 1075;
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    let mut limbs: Vec<u64> = vec![mantissa % 1_000_000_000, mantissa / 1_000_000_000 % 1_000_000_000,
                                   mantissa / 1_000_000_000_000_000_000];
    for _ in 0..exp {
        let mut carry = 0;
        for limb in limbs.iter_mut() {
            let v = *limb * 2 + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    while limbs.len() > 1 && *limbs.last().expect("a limb") == 0 {
        limbs.pop();
    }
    let mut out = String::new();
    if t < 0.0 {
        out.push('-');
    }
    out.push_str(&limbs.last().expect("a limb").to_string());
    for limb in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{limb:09}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::repr_string;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        for (x, text) in [
            (0.0, "0.0"), (-0.0, "-0.0"), (1.5, "1.5"), (0.1, "0.1"), (1e16, "1e+16"), (1e15, "1000000000000000.0"),
            (1e-4, "0.0001"), (1e-5, "1e-05"), (123456789012345678.0, "1.2345678901234568e+17"), (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"), (2.0, "2.0"), (1234567890123456.0, "1234567890123456.0"),
        ] {
            assert_eq!(repr_string(x), text, "{x:e}");
        }
    }

    #[test]
    fn the_integer_part_of_a_large_float_is_exact() {
        assert_eq!(super::int_text(-2.5), "-2");
        assert_eq!(super::int_text(1e19), "10000000000000000000");
        assert_eq!(super::int_text(2f64.powi(70)), "1180591620717411303424");
        assert_eq!(super::int_text(-1e300).len(), 302);
    }

    #[test]
    fn an_exact_tie_takes_the_even_digit_as_python_does() {
        assert_eq!(repr_string(562949953421312.25), "562949953421312.2");
    }
}
