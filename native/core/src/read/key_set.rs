//! A set of attribute keys that every attribute of every span is looked up in: a
//! projection's (what records keep, what the conventions read).
//!
//! Why not a hash set: hashing a key of twenty-odd bytes and probing for it cost ~80
//! instructions, twice per attribute (callgrind on bench/hot_path.py). Keys are grouped by
//! length, and within a length told apart by their last eight bytes before a whole
//! comparison: a few instructions for a key of no length held, a word compare or two else.

/// The last eight bytes of ``key`` (fewer, zero-padded, for a shorter one) as a word.
fn tail(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[key.len() - n..]);
    u64::from_le_bytes(b)
}

#[derive(Clone, Debug, Default)]
pub struct KeySet {
    /// By length: (tail, key) of each key of that length.
    by_len: Vec<Vec<(u64, Box<[u8]>)>>,
}

impl KeySet {
    pub fn insert(&mut self, key: Vec<u8>) {
        if self.contains(&key) {
            return;
        }
        if self.by_len.len() <= key.len() {
            self.by_len.resize_with(key.len() + 1, Vec::new);
        }
        self.by_len[key.len()].push((tail(&key), key.into_boxed_slice()));
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        match self.by_len.get(key.len()) {
            Some(same_len) if !same_len.is_empty() => {
                let t = tail(key);
                same_len.iter().any(|(kt, k)| *kt == t && **k == *key)
            }
            _ => false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_len.iter().all(Vec::is_empty)
    }
}

impl FromIterator<Vec<u8>> for KeySet {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(keys: I) -> KeySet {
        let mut set = KeySet::default();
        for k in keys {
            set.insert(k);
        }
        set
    }
}

impl Extend<Vec<u8>> for KeySet {
    fn extend<I: IntoIterator<Item = Vec<u8>>>(&mut self, keys: I) {
        for k in keys {
            self.insert(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeySet;

    #[test]
    fn a_key_is_held_only_when_inserted_whatever_its_length_or_tail() {
        let keys = ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "session.id", "a", "", "tokens",
                    "xx_tokens", "yy_tokens", "caf\u{e9}.name"];
        let set: KeySet = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        for k in keys {
            assert!(set.contains(k.as_bytes()), "{k}");
        }
        // the same tail and length, another head; a prefix; a longer key; a length none has
        for k in ["zz_tokens", "gen_ai.usage.input_token", "session.idx", "gen_ai.usage.input_tokens.x",
                  "b", "ab", &"k".repeat(300)] {
            assert!(!set.contains(k.as_bytes()), "{k}");
        }
        let mut twice = set.clone();
        twice.insert(b"a".to_vec());
        assert_eq!(twice.by_len[1].len(), 1);
        assert!(KeySet::default().is_empty() && !set.is_empty() && !KeySet::default().contains(b""));
    }
}
