//! The audit chain's verifier against every single change of a trail: each record's text
//! changed, each record removed, a record put after each, each link made again, two
//! records swapped; the first record out of place is named, and an untouched trail and
//! its parts hold. Links are computed here from their definition (SHA-256 of the previous
//! link and the text), not with the code under test.
#![cfg(feature = "serde")]

use cairnloop::approvals::{
    CHAIN_GENESIS, ChainBreak, ChainVerifier, ChainedRecord, chain_hex, chain_link,
};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn link(prev: &[u8; 32], text: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(prev);
    hasher.update(text.as_bytes());
    hasher.finalize().into()
}

/// A trail of `texts`, places 1, 3, 5, … (gaps, as PostgreSQL's positions have).
fn trail(texts: &[String]) -> Vec<ChainedRecord> {
    let mut prev = CHAIN_GENESIS;
    (1..)
        .step_by(2)
        .zip(texts)
        .map(|(seq, text)| {
            let hash = link(&prev, text);
            let record = ChainedRecord::new(seq, prev, hash, text.as_str());
            prev = hash;
            record
        })
        .collect()
}

fn check(records: &[ChainedRecord]) -> Result<u64, ChainBreak> {
    let mut verifier = ChainVerifier::new();
    for record in records {
        verifier.check(record)?;
    }
    Ok(verifier.finish().records)
}

#[test]
fn the_link_is_sha256_of_the_previous_link_and_the_text() {
    let texts = ["{}", r#"{"kind":"decision"}"#, "ünïcode ✓"];
    let mut prev = CHAIN_GENESIS;
    for text in texts {
        assert_eq!(chain_link(&prev, text), link(&prev, text));
        prev = link(&prev, text);
    }
    // Python: hashlib.sha256(bytes(32) + b'{}').hexdigest()
    assert_eq!(
        chain_hex(&chain_link(&CHAIN_GENESIS, "{}")),
        "fb1634c4e6cd4b1f1afe3ce2d6ef080f7ac5d1f357d723ad4dfca782733b62db"
    );
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z{}\":,0-9]{0,40}", 3..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn an_untouched_trail_holds_and_so_does_any_part_of_it(texts in texts(), from in 0usize..40) {
        let records = trail(&texts);
        prop_assert_eq!(check(&records), Ok(records.len() as u64));
        let from = from % records.len();
        let mut part = ChainVerifier::anchored_at_first();
        for record in &records[from..] {
            prop_assert_eq!(part.check(record), Ok(()));
        }
        let report = part.finish();
        prop_assert_eq!(report.anchor, records[from].prev);
        prop_assert_eq!(report.head, records[records.len() - 1].hash);
    }

    #[test]
    fn a_changed_text_is_named(texts in texts(), at in 0usize..40, extra in "[a-z]{1,5}") {
        let mut records = trail(&texts);
        let at = at % records.len();
        records[at].text.push_str(&extra);
        prop_assert_eq!(check(&records), Err(ChainBreak::Changed { seq: records[at].seq }));
    }

    #[test]
    fn a_removed_record_is_named_by_its_neighbours(texts in texts(), at in 0usize..40) {
        let mut records = trail(&texts);
        let at = at % (records.len() - 1);
        let removed = records.remove(at);
        let expected = ChainBreak::Removed {
            after: at.checked_sub(1).map(|before| records[before].seq),
            before: records[at].seq,
        };
        prop_assert_eq!(check(&records), Err(expected), "removed {}", removed.seq);
    }

    #[test]
    fn a_record_put_in_between_with_a_true_link_is_named(texts in texts(), at in 0usize..40) {
        let mut records = trail(&texts);
        let at = at % (records.len() - 1);
        let prev = records[at].hash;
        let forged = ChainedRecord::new(records[at].seq + 1, prev, link(&prev, "forged"), "forged");
        records.insert(at + 1, forged);
        prop_assert_eq!(
            check(&records),
            Err(ChainBreak::Inserted { seq: records[at + 1].seq })
        );
    }

    #[test]
    fn a_record_rewritten_with_a_new_link_is_named_at_the_next(texts in texts(), at in 0usize..40) {
        let mut records = trail(&texts);
        let at = at % (records.len() - 1);
        records[at].text.push('!');
        records[at].hash = link(&records[at].prev, &records[at].text);
        prop_assert_eq!(
            check(&records),
            Err(ChainBreak::Removed { after: Some(records[at].seq), before: records[at + 1].seq })
        );
    }

    #[test]
    fn records_out_of_order_are_named(texts in texts(), at in 0usize..40) {
        let mut records = trail(&texts);
        let at = at % (records.len() - 1);
        records.swap(at, at + 1);
        prop_assert!(check(&records).is_err());
        let seq = records[at].seq;
        records[at + 1].seq = seq;
        prop_assert!(check(&records).is_err());
    }

    #[test]
    fn a_watched_head_is_found_only_where_it_is(texts in texts(), at in 0usize..40) {
        let records = trail(&texts);
        let at = at % records.len();
        let mut verifier = ChainVerifier::new().watching(records[at].hash);
        records.iter().try_for_each(|record| verifier.check(record)).unwrap();
        prop_assert_eq!(verifier.finish().watched_found, Some(true));
        let mut verifier = ChainVerifier::new().watching(link(&CHAIN_GENESIS, "elsewhere"));
        records.iter().try_for_each(|record| verifier.check(record)).unwrap();
        prop_assert_eq!(verifier.finish().watched_found, Some(false));
    }
}

/// A memory store that keeps a chain links each event as it is recorded, across the ring
/// as it drops its oldest: what it keeps verifies from the dropped one's link, each link
/// is the one computed here from its definition, and a compaction shows as a gap.
#[cfg(feature = "std")]
#[test]
fn a_memory_ring_with_a_chain_links_across_what_it_dropped() {
    use cairnloop::approvals::{ApprovalStore, AuditRecord, MemoryStore, RefusalEvent};
    use cairnloop::gate::Timestamp;

    let store = MemoryStore::new().with_event_capacity(3).with_audit_chain();
    let records: Vec<AuditRecord> = (0..5)
        .map(|n| {
            AuditRecord::Refusal(RefusalEvent::new(
                "slack",
                "stale",
                Timestamp::from_unix_millis(n),
            ))
        })
        .collect();
    for record in &records {
        pollster::block_on(store.append(record.clone())).unwrap();
    }
    let mut prev = CHAIN_GENESIS;
    let mut expected = Vec::new();
    for (seq, record) in (1..).zip(&records) {
        let text = serde_json::to_string(record).unwrap();
        let hash = link(&prev, &text);
        expected.push(ChainedRecord::new(seq, prev, hash, text));
        prev = hash;
    }
    assert_eq!(store.chained_since(0, 10).unwrap().unwrap(), expected[2..]);
    assert_eq!(store.chained_since(3, 1).unwrap().unwrap(), expected[3..4]);
    assert_eq!(store.evicted_events(), Ok(2));
    let report = store.verify_audit().unwrap().unwrap().unwrap();
    assert_eq!(
        (report.records, report.anchor, report.head),
        (3, expected[1].hash, prev)
    );
    assert_eq!(
        report.watched_found,
        Some(true),
        "the store's own head is kept"
    );

    // A store without a chain says so; one turned on late links from then on.
    let plain = MemoryStore::new();
    assert_eq!(plain.chained_since(0, 10), Ok(None));
    assert_eq!(plain.verify_audit(), Ok(None));
    pollster::block_on(plain.append(records[0].clone())).unwrap();
    let late = plain.with_audit_chain();
    pollster::block_on(late.append(records[1].clone())).unwrap();
    let linked = late.chained_since(0, 10).unwrap().unwrap();
    let text = serde_json::to_string(&records[1]).unwrap();
    assert_eq!(
        linked,
        [ChainedRecord::new(
            2,
            CHAIN_GENESIS,
            link(&CHAIN_GENESIS, &text),
            text
        )]
    );
}
