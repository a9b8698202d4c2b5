//! A run's measures as Python added them: counts and costs are what senders wrote, so inf,
//! NaN, bools and integers past 2**53 are not measures and are skipped (issue 9, defect 1);
//! token counts are summed exactly as integers (`int(f)` of each, of any size) and the
//! total made a float once, correctly rounded; costs are `sum()`ed as the running Python
//! sums floats.

use crate::error::{Error, Result};
use crate::model::value::Value;

// a count is capped where a float still holds it
const MAX_COUNT: i64 = 1 << 53;

/// `_finite(v)`: a number that is a measure, as a float; None for anything else.
pub fn finite(v: &Value<'_>) -> Option<f64> {
    match v {
        Value::Int(n) if (-MAX_COUNT..=MAX_COUNT).contains(n) => Some(*n as f64),
        Value::Float(x) if x.is_finite() => Some(*x),
        _ => None, // a bool, an int past 2**53 (BigInt is past 2**63), anything else
    }
}

/// How Python's `sum()` of floats adds: 3.12 and later compensate rounding (Neumaier),
/// 3.11 adds in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatSum {
    Plain,
    Neumaier,
}

/// `sum(xs)` of floats, from the int 0 (so a lone -0.0 sums to 0.0), as CPython adds them.
pub fn py_sum(xs: &[f64], how: FloatSum) -> f64 {
    let Some((&first, rest)) = xs.split_first() else { return 0.0 };
    let mut total = 0.0 + first;
    let mut c = 0.0f64;
    for &x in rest {
        match how {
            FloatSum::Plain => total += x,
            FloatSum::Neumaier => {
                let t = total + x;
                if total.abs() >= x.abs() {
                    c += (total - t) + x;
                } else {
                    c += (x - t) + total;
                }
                total = t;
            }
        }
    }
    if c != 0.0 && c.is_finite() {
        total += c;
    }
    total
}

/// A sum of `int(f)` over floats, exact whatever their size: in 128 bits while it fits,
/// then as a big integer (a double of 1e300 is a 301-digit int to Python).
#[derive(Default)]
pub struct TokenSum {
    small: i128,
    /// sign and magnitude (little-endian 32-bit limbs), once the sum left 128 bits
    big: Option<(bool, Vec<u32>)>,
}

impl TokenSum {
    pub fn add(&mut self, f: f64) {
        let t = f.trunc();
        if self.big.is_none() && t.abs() < 1e30 && self.small.abs() < 1i128 << 120 {
            self.small += t as i128;
            return;
        }
        let big = self.big.get_or_insert_with(|| {
            let small = std::mem::take(&mut self.small);
            (small < 0, limbs_of(small.unsigned_abs(), 0))
        });
        let (m, e) = mantissa_exponent(t.abs());
        add_signed(big, t < 0.0, &limbs_of(m, e));
    }

    /// `float(total)`: nearest, ties to even; OverflowError past a double's range.
    pub fn float(&self) -> Result<f64> {
        let Some((negative, mag)) = &self.big else { return Ok(self.small as f64) };
        let x = to_f64(mag);
        if x.is_infinite() {
            return Err(Error::Overflow("int too large to convert to float".into()));
        }
        Ok(if *negative { -x } else { x })
    }
}

/// A whole double's value as m * 2^e (m below 2^53).
fn mantissa_exponent(t: f64) -> (u128, u32) {
    if t == 0.0 {
        return (0, 0);
    }
    let bits = t.to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32 - 1075;
    let m = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
    if exp >= 0 {
        (m, exp as u32)
    } else {
        (m >> (-exp) as u32, 0) // a whole number: the low bits are zero
    }
}

/// m * 2^shift as limbs.
fn limbs_of(m: u128, shift: u32) -> Vec<u32> {
    let mut limbs = Vec::new();
    let mut v = m;
    while v > 0 {
        limbs.push(v as u32);
        v >>= 32;
    }
    let bit = shift % 32;
    if bit > 0 {
        let mut carry = 0u32;
        for l in limbs.iter_mut() {
            let next = *l >> (32 - bit);
            *l = (*l << bit) | carry;
            carry = next;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    let mut out = vec![0u32; (shift / 32) as usize];
    out.extend(limbs);
    out
}

fn cmp_mag(a: &[u32], b: &[u32]) -> std::cmp::Ordering {
    let len = |x: &[u32]| x.iter().rposition(|&l| l != 0).map_or(0, |i| i + 1);
    let (la, lb) = (len(a), len(b));
    la.cmp(&lb).then_with(|| a[..la].iter().rev().cmp(b[..lb].iter().rev()))
}

fn add_mag(a: &mut Vec<u32>, b: &[u32]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    let mut carry = 0u64;
    for i in 0..a.len() {
        let v = u64::from(a[i]) + u64::from(*b.get(i).unwrap_or(&0)) + carry;
        a[i] = v as u32;
        carry = v >> 32;
    }
    if carry > 0 {
        a.push(carry as u32);
    }
}

/// a - b, for |a| >= |b|.
fn sub_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for i in 0..a.len() {
        let mut v = i64::from(a[i]) - i64::from(*b.get(i).unwrap_or(&0)) - borrow;
        borrow = 0;
        if v < 0 {
            v += 1 << 32;
            borrow = 1;
        }
        out.push(v as u32);
    }
    out
}

fn add_signed(acc: &mut (bool, Vec<u32>), negative: bool, mag: &[u32]) {
    if acc.0 == negative {
        add_mag(&mut acc.1, mag);
    } else if cmp_mag(&acc.1, mag) != std::cmp::Ordering::Less {
        acc.1 = sub_mag(&acc.1, mag);
    } else {
        acc.1 = sub_mag(mag, &acc.1);
        acc.0 = negative;
    }
}

/// The magnitude as the nearest double, ties to even (infinity past the range).
fn to_f64(mag: &[u32]) -> f64 {
    let Some(top) = mag.iter().rposition(|&l| l != 0) else { return 0.0 };
    let bits = top as u32 * 32 + (32 - mag[top].leading_zeros());
    if bits <= 64 {
        let mut v = 0u64;
        for i in (0..=top).rev() {
            v = (v << 32) | u64::from(mag[i]);
        }
        return v as f64;
    }
    // the top 64 bits, and whether any bit below them is set (so that a tie in those 64
    // bits, which the conversion rounds to even, is known to be past the tie)
    let shift = bits - 64;
    let bit_at = |k: u32| (mag[(k / 32) as usize] >> (k % 32)) & 1;
    let mut top64 = 0u64;
    for k in (shift..bits).rev() {
        top64 = (top64 << 1) | u64::from(bit_at(k));
    }
    let sticky = (0..shift).any(|k| bit_at(k) == 1);
    if sticky {
        top64 |= 1;
    }
    let x = top64 as f64;
    if shift > 1100 {
        return f64::INFINITY;
    }
    x * 2f64.powi(shift as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_costs_are_measures_only_when_finite_numbers() {
        assert_eq!(finite(&Value::Int(3)), Some(3.0));
        assert_eq!(finite(&Value::Bool(true)), None);
        assert_eq!(finite(&Value::Int(1 << 54)), None);
        assert_eq!(finite(&Value::Float(f64::NAN)), None);
    }

    #[test]
    fn float_sums_are_pythons() {
        let xs = [0.1, 0.2, 0.3];
        assert_eq!(py_sum(&xs, FloatSum::Plain), 0.1 + 0.2 + 0.3);
        assert_eq!(py_sum(&xs, FloatSum::Neumaier), 0.6);
        assert_eq!(py_sum(&[-0.0], FloatSum::Plain).to_bits(), 0.0f64.to_bits());
        assert_eq!(py_sum(&[1e308, 1e308, -1e308], FloatSum::Neumaier), f64::INFINITY);
    }

    #[test]
    fn token_sums_are_exact_at_any_size() {
        let mut t = TokenSum::default();
        t.add(2.9);
        t.add(-1.5);
        assert_eq!(t.float().unwrap(), 1.0);
        let mut big = TokenSum::default();
        big.add(1e300);
        big.add(1.0);
        big.add(-1e300);
        assert_eq!(big.float().unwrap(), 1.0);
        let mut huge = TokenSum::default();
        huge.add(1.7e308);
        huge.add(1.7e308);
        assert!(huge.float().is_err());
        let mut near = TokenSum::default();
        near.add(2f64.powi(70));
        near.add(3.0);
        assert_eq!(near.float().unwrap(), 2f64.powi(70));
    }
}
