//! A stored audit trail checked page by page.

use alloc::vec::Vec;
use core::future::Future;

use crate::approvals::{ChainBreak, ChainReport, ChainVerifier, ChainedRecord, StoreError};

/// Reads pages with `page(after)` (each oldest first, empty at the end) and checks every
/// record's link with `verifier`.
pub(crate) async fn verify_pages<F, P>(
    mut verifier: ChainVerifier,
    mut page: P,
) -> Result<Result<ChainReport, ChainBreak>, StoreError>
where
    P: FnMut(u64) -> F,
    F: Future<Output = Result<Vec<ChainedRecord>, StoreError>>,
{
    let mut after = 0;
    loop {
        let records = page(after).await?;
        let Some(last) = records.last() else {
            return Ok(Ok(verifier.finish()));
        };
        after = last.seq;
        for record in &records {
            if let Err(broken) = verifier.check(record) {
                return Ok(Err(broken));
            }
        }
    }
}
