//! The audit chain on PostgreSQL. Writers never wait for each other there (an event's
//! position is its transaction's id), so an event cannot be linked as it is written:
//! the one before it may still commit later. Events are linked once they are final
//! (below the oldest running transaction), in position order, by one sealer at a time
//! (the chain's row is locked), from any process: one chain. Each event's links are a
//! row of `cairnloop_links` at its position; an event without one reads as linked to
//! nothing, which the verifier names.

use core::future::Future;
use core::task::Poll;
use std::string::ToString;
use std::time::Duration;
use std::vec::Vec;

use deadpool_postgres::{Object, Pool};

use crate::approvals::{ChainHash, ChainedRecord, StoreError, chain_link};

/// How often each process links the events that became final, unless told otherwise.
pub(crate) const SEAL_EVERY: Duration = Duration::from_secs(1);

/// Events linked in one transaction.
const SEAL_PAGE: i64 = 5_000;

/// The chain's reach, locked for this transaction; `SKIP LOCKED` when another sealer
/// may do the work instead.
const HEAD: &str = "SELECT position, hash FROM cairnloop_chain FOR UPDATE";
const HEAD_UNLESS_TAKEN: &str = "SELECT position, hash FROM cairnloop_chain FOR UPDATE SKIP LOCKED";

/// Final events past the chain's reach, in order (the horizon as `EVENTS_SINCE` reads it).
const UNSEALED: &str = "
    SELECT position, record FROM cairnloop_events
    WHERE position > $1
      AND position < $2 + pg_snapshot_xmin(pg_current_snapshot())::text::bigint
    ORDER BY position LIMIT $3";

const LINK: &str = "
    INSERT INTO cairnloop_links (position, prev, hash)
    SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[])";

const MOVE_HEAD: &str = "UPDATE cairnloop_chain SET position = $1, hash = $2";

/// The linked events in a range of positions, in order.
/// The events in a range of positions, in order, and their links (read apart and
/// matched here: two range scans cost the server less than a join).
const EVENTS_BETWEEN: &str = "
    SELECT position, record FROM cairnloop_events
    WHERE position > $1 AND position <= $2 ORDER BY position";
const LINKS_BETWEEN: &str = "
    SELECT position, prev, hash FROM cairnloop_links
    WHERE position > $1 AND position <= $2 ORDER BY position";

/// The first position and the chain's reach.
const EXTENT: &str = "
    SELECT coalesce((SELECT min(position) FROM cairnloop_events), 0), position
    FROM cairnloop_chain";

/// Up to `$2` events after `$1`, within the chain's reach, in order.
const EVENTS_SINCE: &str = "
    SELECT position, record FROM cairnloop_events
    WHERE position > $1 AND position <= (SELECT position FROM cairnloop_chain)
    ORDER BY position LIMIT $2";

/// Links the final events past the chain's reach, a page per transaction; answers how
/// many. With `wait`, waits for another sealer; without, leaves the work to it.
pub(crate) async fn seal(client: &mut Object, base: i64, wait: bool) -> Result<u64, StoreError> {
    let mut sealed = 0;
    loop {
        let transaction = client.transaction().await.map_err(backend)?;
        let head = transaction
            .query_opt(if wait { HEAD } else { HEAD_UNLESS_TAKEN }, &[])
            .await
            .map_err(backend)?;
        let Some(head) = head else {
            return Ok(sealed);
        };
        let (mut position, mut prev): (i64, ChainHash) =
            (head.get(0), link_of(head.get::<_, Option<&[u8]>>(1)));
        let rows = transaction
            .query(UNSEALED, &[&position, &base, &SEAL_PAGE])
            .await
            .map_err(backend)?;
        if rows.is_empty() {
            transaction.commit().await.map_err(backend)?;
            return Ok(sealed);
        }
        let mut positions = Vec::with_capacity(rows.len());
        let mut prevs = Vec::with_capacity(rows.len());
        let mut hashes = Vec::with_capacity(rows.len());
        for row in &rows {
            let hash = chain_link(&prev, row.get::<_, &str>(1));
            position = row.get(0);
            positions.push(position);
            prevs.push(prev.to_vec());
            hashes.push(hash.to_vec());
            prev = hash;
        }
        transaction
            .execute(LINK, &[&positions, &prevs, &hashes])
            .await
            .map_err(backend)?;
        transaction
            .execute(MOVE_HEAD, &[&position, &&prev[..]])
            .await
            .map_err(backend)?;
        transaction.commit().await.map_err(backend)?;
        sealed += rows.len() as u64;
        if (rows.len() as i64) < SEAL_PAGE {
            return Ok(sealed);
        }
    }
}

/// Links what became final `every` so often, for as long as the store lives; a failed
/// pass is tried again at the next.
pub(crate) async fn seal_periodically(pool: Pool, base: i64, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if let Ok(mut client) = pool.get().await {
            let _ = seal(&mut client, base, false).await;
        }
    }
}

/// Up to `limit` linked events after `after`, as stored.
pub(crate) async fn chained_since(
    client: &Object,
    after: u64,
    limit: usize,
) -> Result<Vec<ChainedRecord>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let events = client
        .query(EVENTS_SINCE, &[&after, &limit])
        .await
        .map_err(backend)?;
    let Some(last) = events.last().map(|event| event.get::<_, i64>(0)) else {
        return Ok(Vec::new());
    };
    let links = client
        .query(LINKS_BETWEEN, &[&after, &last])
        .await
        .map_err(backend)?;
    Ok(matched(&events, &links))
}

/// The linked events' extent: the position before the first, and the last.
pub(crate) async fn extent(client: &Object) -> Result<(i64, i64), StoreError> {
    let row = client.query_one(EXTENT, &[]).await.map_err(backend)?;
    Ok((row.get::<_, i64>(0).saturating_sub(1), row.get(1)))
}

/// The linked events with positions in `(after, through]`, as stored.
pub(crate) async fn chained_between(
    client: &Object,
    after: i64,
    through: i64,
) -> Result<Vec<ChainedRecord>, StoreError> {
    // Sent together: one round trip on the connection.
    let range: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&after, &through];
    let (events, links) = both(
        client.query(EVENTS_BETWEEN, &range),
        client.query(LINKS_BETWEEN, &range),
    )
    .await;
    Ok(matched(&events.map_err(backend)?, &links.map_err(backend)?))
}

/// Both futures' outputs, the two polled side by side (so that their statements are
/// pipelined on one connection).
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (core::pin::pin!(a), core::pin::pin!(b));
    let (mut first, mut second) = (None, None);
    core::future::poll_fn(|cx| {
        if first.is_none()
            && let Poll::Ready(output) = a.as_mut().poll(cx)
        {
            first = Some(output);
        }
        if second.is_none()
            && let Poll::Ready(output) = b.as_mut().poll(cx)
        {
            second = Some(output);
        }
        match (first.take(), second.take()) {
            (Some(one), Some(two)) => Poll::Ready((one, two)),
            (one, two) => {
                (first, second) = (one, two);
                Poll::Pending
            }
        }
    })
    .await
}

/// Events (position, record) with their links (position, prev, hash), both in order.
/// An event without a link reads as linked to nothing; a link without its event is
/// passed over (the next event's link tells).
fn matched(events: &[tokio_postgres::Row], links: &[tokio_postgres::Row]) -> Vec<ChainedRecord> {
    let mut links = links.iter().peekable();
    let mut records = Vec::with_capacity(events.len());
    for event in events {
        let position: i64 = event.get(0);
        while links
            .next_if(|link| link.get::<_, i64>(0) < position)
            .is_some()
        {}
        let (prev, hash) = match links.next_if(|link| link.get::<_, i64>(0) == position) {
            Some(link) => (link_of(link.get(1)), link_of(link.get(2))),
            None => ([0; 32], [0; 32]),
        };
        records.push(ChainedRecord::new(
            u64::try_from(position).unwrap_or(0),
            prev,
            hash,
            event.get::<_, &str>(1),
        ));
    }
    records
}

/// A stored link; one missing or of another length reads as zeros, which is no
/// record's link, so the verifier names its record.
fn link_of(stored: Option<&[u8]>) -> ChainHash {
    stored
        .and_then(|bytes| ChainHash::try_from(bytes).ok())
        .unwrap_or([0; 32])
}

fn backend(error: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(error.to_string())
}
