use alloc::format;
use alloc::string::String;
use core::fmt;

use sha2::{Digest, Sha256};

/// One SHA-256 digest of the audit chain.
pub type ChainHash = [u8; 32];

/// What the first record of a trail links back to: 32 zero bytes.
///
/// ```
/// assert_eq!(cairnloop::approvals::CHAIN_GENESIS, [0u8; 32]);
/// ```
pub const CHAIN_GENESIS: ChainHash = [0; 32];

/// The link of a record: SHA-256 of the previous record's link (32 bytes) followed by the
/// record's text exactly as the store keeps it (UTF-8). Anyone can check it with any
/// SHA-256: `sha256(bytes.fromhex(prev) + text.encode())` in Python.
///
/// ```
/// use cairnloop::approvals::{CHAIN_GENESIS, chain_link};
///
/// // SHA-256 of 32 zero bytes followed by "{}", from another implementation (Python's hashlib).
/// let link = chain_link(&CHAIN_GENESIS, "{}");
/// assert_eq!(
///     cairnloop::approvals::chain_hex(&link),
///     "fb1634c4e6cd4b1f1afe3ce2d6ef080f7ac5d1f357d723ad4dfca782733b62db"
/// );
/// assert_ne!(link, chain_link(&CHAIN_GENESIS, "{ }"));
/// ```
#[must_use]
pub fn chain_link(prev: &ChainHash, record: &str) -> ChainHash {
    let mut hasher = Sha256::new();
    hasher.update(prev);
    hasher.update(record.as_bytes());
    hasher.finalize().into()
}

/// A link as lowercase hex (64 characters).
///
/// ```
/// assert_eq!(cairnloop::approvals::chain_hex(&[0xab; 32]), "ab".repeat(32));
/// ```
#[must_use]
pub fn chain_hex(hash: &ChainHash) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(64);
    for byte in hash {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

/// A link read back from hex; `None` unless it is 64 hex digits.
///
/// ```
/// use cairnloop::approvals::{chain_hex, chain_from_hex};
/// assert_eq!(chain_from_hex(&chain_hex(&[7; 32])), Some([7; 32]));
/// assert_eq!(chain_from_hex("abc"), None);
/// ```
#[must_use]
pub fn chain_from_hex(text: &str) -> Option<ChainHash> {
    let digits = text.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let value = |digit: u8| char::from(digit).to_digit(16);
    let mut hash = [0; 32];
    for (byte, pair) in hash.iter_mut().zip(digits.chunks_exact(2)) {
        let (high, low) = (value(pair[0])?, value(pair[1])?);
        *byte = u8::try_from(high * 16 + low).ok()?;
    }
    Some(hash)
}

/// One record of a chained trail as the store keeps it: its place, the link it claims to
/// follow, its own link, and its text.
///
/// ```
/// use cairnloop::approvals::{CHAIN_GENESIS, ChainedRecord, chain_link};
///
/// let record = ChainedRecord::new(1, CHAIN_GENESIS, chain_link(&CHAIN_GENESIS, "{}"), "{}");
/// assert!(record.is_consistent());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainedRecord {
    /// Its place in the store's order (a sequence number or a position).
    pub seq: u64,
    /// The link of the record it follows, as stored with it.
    pub prev: ChainHash,
    /// Its own link, as stored.
    pub hash: ChainHash,
    /// The record's text, as stored.
    pub text: String,
}

impl ChainedRecord {
    /// A record as read from a store or an export.
    ///
    /// ```
    /// let record = cairnloop::approvals::ChainedRecord::new(3, [0; 32], [1; 32], "{}");
    /// assert_eq!(record.seq, 3);
    /// ```
    pub fn new(seq: u64, prev: ChainHash, hash: ChainHash, text: impl Into<String>) -> Self {
        Self {
            seq,
            prev,
            hash,
            text: text.into(),
        }
    }

    /// Whether its own link is the link of `prev` and its text.
    ///
    /// ```
    /// let record = cairnloop::approvals::ChainedRecord::new(3, [0; 32], [1; 32], "{}");
    /// assert!(!record.is_consistent());
    /// ```
    #[must_use]
    pub fn is_consistent(&self) -> bool {
        chain_link(&self.prev, &self.text) == self.hash
    }
}

/// Where a trail stops being the one that was written: the first record found out of
/// place, by its place in the store.
///
/// ```
/// use cairnloop::approvals::ChainBreak;
///
/// let changed = ChainBreak::Changed { seq: 41 };
/// assert_eq!(changed.to_string(), "record 41 was changed: its link does not match its text");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainBreak {
    /// The record's text (or its link) is not what was written.
    #[error("record {seq} was changed: its link does not match its text")]
    Changed {
        /// The record.
        seq: u64,
    },
    /// The record was put in between two records that were written one after the other.
    #[error("record {seq} was inserted: the record after it follows the record before it")]
    Inserted {
        /// The record.
        seq: u64,
    },
    /// A record (or more) is missing right before `before`: it links to one that is not
    /// there. When `after` is the record right before it, that record may instead have
    /// been rewritten with a new link.
    #[error("{}", removed(*after, *before))]
    Removed {
        /// The record before the gap, if any.
        after: Option<u64>,
        /// The first record after the gap.
        before: u64,
    },
    /// Records are not in ascending order.
    #[error("record {seq} is out of order")]
    OutOfOrder {
        /// The record.
        seq: u64,
    },
}

fn removed(after: Option<u64>, before: u64) -> String {
    match after {
        Some(after) => format!(
            "record {before} does not follow record {after}: a record between them was removed, or record {after} was rewritten with a new link"
        ),
        None => format!(
            "record {before} does not follow the trail's start: records before it were removed"
        ),
    }
}

/// A whole trail checked: how many records, from which to which, and the head (the last
/// record's link), which a person can keep to check a later copy against.
///
/// ```
/// use cairnloop::approvals::{CHAIN_GENESIS, ChainVerifier, ChainedRecord, chain_link};
///
/// let mut verifier = ChainVerifier::new();
/// let first = chain_link(&CHAIN_GENESIS, "{\"a\":1}");
/// verifier.check(&ChainedRecord::new(1, CHAIN_GENESIS, first, "{\"a\":1}")).unwrap();
/// let report = verifier.finish();
/// assert_eq!((report.records, report.head), (1, first));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainReport {
    /// Records checked.
    pub records: u64,
    /// The first record's place, if any.
    pub first: Option<u64>,
    /// The last record's place, if any.
    pub last: Option<u64>,
    /// The link the first record follows ([`CHAIN_GENESIS`] for a whole trail).
    pub anchor: ChainHash,
    /// The last record's link (the anchor when there is none).
    pub head: ChainHash,
    /// Whether the link watched for ([`ChainVerifier::watching`]) is the anchor or the
    /// link of one of the records; `None` when none was watched for.
    pub watched_found: Option<bool>,
}

impl fmt::Display for ChainReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} records", self.records)?;
        if let (Some(first), Some(last)) = (self.first, self.last) {
            write!(f, " ({first} to {last})")?;
        }
        write!(f, ", head {}", chain_hex(&self.head))
    }
}

/// Checks a trail record by record, oldest first, and names the first record that was
/// changed, removed or inserted.
///
/// A whole trail starts at [`CHAIN_GENESIS`] ([`ChainVerifier::new`]); a part of one (an
/// export from a point, a ring that dropped its oldest records) starts at the link its
/// first record claims ([`ChainVerifier::anchored_at_first`]).
///
/// ```
/// use cairnloop::approvals::{CHAIN_GENESIS, ChainBreak, ChainVerifier, ChainedRecord, chain_link};
///
/// let texts = ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"];
/// let mut prev = CHAIN_GENESIS;
/// let mut trail = Vec::new();
/// for (seq, text) in (1..).zip(texts) {
///     let hash = chain_link(&prev, text);
///     trail.push(ChainedRecord::new(seq, prev, hash, text));
///     prev = hash;
/// }
/// trail.remove(1);
/// let mut verifier = ChainVerifier::new();
/// let found = trail.iter().try_for_each(|record| verifier.check(record));
/// assert_eq!(found, Err(ChainBreak::Removed { after: Some(1), before: 3 }));
/// ```
#[derive(Clone, Debug)]
pub struct ChainVerifier {
    anchor: Option<ChainHash>,
    /// The last two records' places and links: the last, and the one before it.
    last: Option<(u64, ChainHash)>,
    before_last: Option<ChainHash>,
    records: u64,
    first: Option<u64>,
    watched: Option<ChainHash>,
    found: bool,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl ChainVerifier {
    /// A verifier of a whole trail: its first record follows [`CHAIN_GENESIS`].
    ///
    /// ```
    /// assert_eq!(cairnloop::approvals::ChainVerifier::new().finish().records, 0);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            anchor: Some(CHAIN_GENESIS),
            last: None,
            before_last: None,
            records: 0,
            first: None,
            watched: None,
            found: false,
        }
    }

    /// The same verifier, also watching for `head`: a head printed by an earlier check,
    /// which must still be a link of the trail. A trail rewritten from some record on,
    /// its links made again, still links up; it no longer holds the heads it had.
    ///
    /// ```
    /// use cairnloop::approvals::{CHAIN_GENESIS, ChainVerifier, ChainedRecord, chain_link};
    ///
    /// let kept = chain_link(&CHAIN_GENESIS, "{\"n\":1}");
    /// let rewritten = chain_link(&CHAIN_GENESIS, "{\"n\":2}");
    /// let mut verifier = ChainVerifier::new().watching(kept);
    /// verifier.check(&ChainedRecord::new(1, CHAIN_GENESIS, rewritten, "{\"n\":2}")).unwrap();
    /// assert_eq!(verifier.finish().watched_found, Some(false));
    /// ```
    #[must_use]
    pub const fn watching(mut self, head: ChainHash) -> Self {
        self.watched = Some(head);
        self
    }

    /// A verifier of a part of a trail: its first record's claimed link is taken as the
    /// anchor, to be compared with a head kept from before.
    ///
    /// ```
    /// use cairnloop::approvals::{ChainVerifier, ChainedRecord, chain_link};
    ///
    /// let mut verifier = ChainVerifier::anchored_at_first();
    /// verifier.check(&ChainedRecord::new(9, [5; 32], chain_link(&[5; 32], "{}"), "{}")).unwrap();
    /// assert_eq!(verifier.finish().anchor, [5; 32]);
    /// ```
    #[must_use]
    pub const fn anchored_at_first() -> Self {
        Self {
            anchor: None,
            ..Self::new()
        }
    }

    /// Checks the next record.
    ///
    /// # Errors
    ///
    /// The [`ChainBreak`] this record shows; checking should stop there.
    ///
    /// ```
    /// use cairnloop::approvals::{CHAIN_GENESIS, ChainBreak, ChainVerifier, ChainedRecord};
    ///
    /// let mut verifier = ChainVerifier::new();
    /// let forged = ChainedRecord::new(1, CHAIN_GENESIS, [9; 32], "{}");
    /// assert_eq!(verifier.check(&forged), Err(ChainBreak::Changed { seq: 1 }));
    /// ```
    pub fn check(&mut self, record: &ChainedRecord) -> Result<(), ChainBreak> {
        let seq = record.seq;
        let expected = match self.last {
            Some((last_seq, _)) if seq <= last_seq => return Err(ChainBreak::OutOfOrder { seq }),
            Some((_, hash)) => hash,
            None => *self.anchor.get_or_insert(record.prev),
        };
        if record.prev == expected {
            if !record.is_consistent() {
                return Err(ChainBreak::Changed { seq });
            }
        } else if self.before_last == Some(record.prev) || self.last.is_none() {
            // It follows the record before the last one: the last one was put in between.
            // (The first record linking elsewhere than the anchor: records before it are gone.)
            return Err(match self.last {
                Some((last_seq, _)) => ChainBreak::Inserted { seq: last_seq },
                None => ChainBreak::Removed {
                    after: None,
                    before: seq,
                },
            });
        } else if record.is_consistent() {
            return Err(ChainBreak::Removed {
                after: self.last.map(|(last_seq, _)| last_seq),
                before: seq,
            });
        } else {
            return Err(ChainBreak::Changed { seq });
        }
        self.before_last = self.last.map(|(_, hash)| hash);
        self.last = Some((seq, record.hash));
        self.first.get_or_insert(seq);
        self.records += 1;
        self.found |= self.watched == Some(record.hash);
        Ok(())
    }

    /// What was checked.
    ///
    /// ```
    /// let report = cairnloop::approvals::ChainVerifier::new().finish();
    /// assert_eq!(report.head, cairnloop::approvals::CHAIN_GENESIS);
    /// ```
    #[must_use]
    pub fn finish(self) -> ChainReport {
        let anchor = self.anchor.unwrap_or(CHAIN_GENESIS);
        ChainReport {
            records: self.records,
            first: self.first,
            last: self.last.map(|(seq, _)| seq),
            anchor,
            head: self.last.map_or(anchor, |(_, hash)| hash),
            watched_found: self.watched.map(|watched| self.found || watched == anchor),
        }
    }
}
