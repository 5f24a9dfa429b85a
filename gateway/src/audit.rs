//! The audit trail's chain, checked and exported: `cairnloop-gateway audit verify` and
//! `audit export`. An export is JSON Lines, one record per line with its links, that a
//! person can check without the store: each record's `hash` is SHA-256 of the `prev`
//! link's 32 bytes followed by the record's text (the JSON string `record`, decoded:
//! the exact text the store keeps, even when someone made it something else than JSON).

use std::io::{BufRead, Write};

use cairnloop::approvals::{
    ChainBreak, ChainReport, ChainVerifier, ChainedRecord, StoreError, chain_from_hex, chain_hex,
};

use crate::store::Opened;

/// Records read from a store per page.
const PAGE: usize = 20_000;

/// Why a trail could not be checked or written out (not whether it holds: see
/// [`Checked`]).
///
/// ```
/// use cairnloop_gateway::audit::AuditError;
///
/// let bad = AuditError::Line { line: 3, why: "not JSON".into() };
/// assert_eq!(bad.to_string(), "line 3 of the export: not JSON");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The store could not be read.
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    /// A line of an export is not a chained record.
    #[error("line {line} of the export: {why}")]
    Line {
        /// The line, from 1.
        line: u64,
        /// What is wrong with it.
        why: String,
    },
    /// Reading or writing a file.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What checking a trail found: it holds (with what was checked, and in
/// [`ChainReport::watched_found`] whether a head kept from before is in it), or the first
/// record that was changed, removed or inserted.
///
/// ```
/// use cairnloop_gateway::audit::Checked;
/// use cairnloop::approvals::ChainBreak;
///
/// let broken = Checked::Broken(ChainBreak::Changed { seq: 7 });
/// assert!(!broken.holds());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// Every record links to the one before it.
    Holds(ChainReport),
    /// The first record out of place.
    Broken(ChainBreak),
}

impl Checked {
    /// Whether the trail holds, and holds the head watched for.
    ///
    /// ```
    /// # use cairnloop_gateway::audit::Checked;
    /// # use cairnloop::approvals::ChainBreak;
    /// assert!(!Checked::Broken(ChainBreak::Inserted { seq: 2 }).holds());
    /// ```
    #[must_use]
    pub fn holds(&self) -> bool {
        matches!(self, Self::Holds(report) if report.watched_found != Some(false))
    }
}

impl From<Result<ChainReport, ChainBreak>> for Checked {
    fn from(checked: Result<ChainReport, ChainBreak>) -> Self {
        checked.map_or_else(Self::Broken, Self::Holds)
    }
}

/// A verifier from the trail's start, watching for `head` if given.
fn verifier(verifier: ChainVerifier, head: Option<[u8; 32]>) -> ChainVerifier {
    match head {
        Some(head) => verifier.watching(head),
        None => verifier,
    }
}

/// Up to [`PAGE`] chained records of `store` after `after`.
async fn page(store: &Opened, after: u64) -> Result<Vec<ChainedRecord>, StoreError> {
    match store {
        Opened::File(store) => store.chained_since(after, PAGE).await,
        Opened::Postgres(store) => store.chained_since(after, PAGE).await,
    }
}

/// Checks the whole trail of `store` from its first record (on PostgreSQL, what is final
/// is linked first); with `head`, also that a head kept from before is the link of one
/// of its records.
///
/// # Errors
///
/// The store cannot be read.
pub async fn verify_store(store: &Opened, head: Option<[u8; 32]>) -> Result<Checked, AuditError> {
    let start = verifier(ChainVerifier::new(), head);
    Ok(match store {
        Opened::File(store) => store.verify_audit_with(start).await?,
        Opened::Postgres(store) => store.verify_audit_with(start).await?,
    }
    .into())
}

/// Writes the whole trail of `store` to `out` as JSON Lines
/// (`{"seq":…,"prev":"…","hash":"…","record":"…"}`, the record's text as a JSON
/// string); answers how many records.
///
/// # Errors
///
/// The store cannot be read, or `out` written.
pub async fn export(store: &Opened, out: &mut dyn Write) -> Result<u64, AuditError> {
    if let Opened::Postgres(store) = store {
        store.seal_audit().await?;
    }
    let mut written = 0;
    let mut after = 0;
    loop {
        let records = page(store, after).await?;
        let Some(last) = records.last() else {
            out.flush()?;
            return Ok(written);
        };
        after = last.seq;
        for record in &records {
            let line = serde_json::json!({
                "seq": record.seq,
                "prev": chain_hex(&record.prev),
                "hash": chain_hex(&record.hash),
                "record": record.text,
            });
            writeln!(out, "{line}")?;
            written += 1;
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    seq: u64,
    prev: &'a str,
    hash: &'a str,
    record: String,
}

/// Checks an export read from `input`, anchored at its first record's `prev` (the
/// genesis link when it starts at the trail's start); with `head`, also that a head kept
/// from before is in it.
///
/// # Errors
///
/// A line that is not a chained record, or the input cannot be read.
///
/// ```
/// use cairnloop::approvals::{CHAIN_GENESIS, chain_hex, chain_link};
/// use cairnloop_gateway::audit::verify_export;
///
/// let text = r#"{"kind":"refusal"}"#;
/// let line = serde_json::json!({
///     "seq": 1,
///     "prev": chain_hex(&CHAIN_GENESIS),
///     "hash": chain_hex(&chain_link(&CHAIN_GENESIS, text)),
///     "record": text,
/// })
/// .to_string();
/// assert!(verify_export(line.as_bytes(), None).unwrap().holds());
/// let changed = line.replace("refusal", "decision");
/// assert!(!verify_export(changed.as_bytes(), None).unwrap().holds());
/// ```
pub fn verify_export(input: impl BufRead, head: Option<[u8; 32]>) -> Result<Checked, AuditError> {
    let mut verifier = verifier(ChainVerifier::anchored_at_first(), head);
    for (number, text) in (1..).zip(input.lines()) {
        let text = text?;
        if text.is_empty() {
            continue;
        }
        let bad = |why: String| AuditError::Line { line: number, why };
        let line: Line<'_> = serde_json::from_str(&text).map_err(|error| bad(error.to_string()))?;
        let link = |hex: &str, what: &str| {
            chain_from_hex(hex).ok_or_else(|| bad(format!("`{what}` is not 64 hex digits")))
        };
        let record = ChainedRecord::new(
            line.seq,
            link(line.prev, "prev")?,
            link(line.hash, "hash")?,
            line.record,
        );
        if let Err(broken) = verifier.check(&record) {
            return Ok(Checked::Broken(broken));
        }
    }
    Ok(Checked::Holds(verifier.finish()))
}
