use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::approvals::ApprovalLane;
use crate::declare::IdempotencyKey;

/// The lanes a store wrote or read lately in this process, so that the next move of one
/// starts without a round trip. A copy may be stale when another process moved the lane
/// since: the move's compare-and-set finds that, and the lane is read again. Bounded: the
/// map starts again when full.
#[derive(Default)]
pub(crate) struct KeptLanes {
    lanes: Mutex<HashMap<IdempotencyKey, ApprovalLane>>,
}

/// Most lanes kept before the map starts again.
const CAPACITY: usize = 4096;

impl KeptLanes {
    /// The copy of the lane with this key, if one is kept.
    pub(crate) fn get(&self, key: &IdempotencyKey) -> Option<ApprovalLane> {
        let lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.get(key).cloned()
    }

    /// Keeps `lane`, unless a newer version of it is kept already (two moves of one lane
    /// in this process may finish in either order).
    pub(crate) fn keep(&self, lane: &ApprovalLane) {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        if lanes.len() >= CAPACITY {
            lanes.clear();
        }
        match lanes.get_mut(&lane.key()) {
            Some(kept) if kept.version() > lane.version() => {}
            Some(kept) => *kept = lane.clone(),
            None => {
                lanes.insert(lane.key(), lane.clone());
            }
        }
    }

    /// Forgets the copy of the lane with this key: it proved stale, or is gone.
    pub(crate) fn forget(&self, key: &IdempotencyKey) {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::{Governor, MemoryStore, Outcome};
    use crate::declare::{
        Actor, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry,
        ToolSpec,
    };
    use crate::gate::{LaneAction, Timestamp};
    use crate::json::ToolCall;
    use std::string::String;

    struct Note;

    impl Tool for Note {
        const SPEC: ToolSpec = ToolSpec::new("note", "Note", "Writes a note.", RiskTier::LowWrite);
        const SCOPES: &'static [Scope] = &[];
        type Input = std::collections::BTreeMap<String, u32>;
        type Output = ();
        type Error = String;
        type Context = ();
        fn validate(_: &Self::Input) -> Result<(), InputErrors> {
            Ok(())
        }
        fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
            Ok(())
        }
        async fn run(_: Invocation<'_, Self>) -> Result<(), String> {
            Ok(())
        }
    }

    static TOOLS: Registry<()> = Registry::new(&[ToolEntry::json::<Note>()]);

    /// A pending lane for the call with argument `n`.
    fn pending(n: u32) -> ApprovalLane {
        let governor = Governor::new(&TOOLS).with_store(MemoryStore::new());
        let arguments = std::format!("{{\"n\": {n}}}");
        let call = ToolCall::new("note", &arguments);
        match pollster::block_on(governor.call(&call, &Actor::new("agent", &[]), &())) {
            Ok(Outcome::AwaitingApproval(lane)) => *lane,
            other => panic!("a proposal, got {other:?}"),
        }
    }

    #[test]
    fn a_newer_copy_is_never_replaced_by_an_older_one() {
        let kept = KeptLanes::default();
        let opened = pending(1);
        let approved = opened
            .moved(
                LaneAction::Approve,
                Timestamp::from_unix_millis(u64::MAX / 2),
                Some("ops"),
                None,
            )
            .expect("a pending lane can be approved");
        kept.keep(&approved);
        kept.keep(&opened);
        assert_eq!(
            kept.get(&opened.key()).map(|lane| lane.version()),
            Some(approved.version())
        );
        kept.forget(&opened.key());
        assert!(kept.get(&opened.key()).is_none());
        kept.keep(&opened);
        kept.keep(&approved);
        assert_eq!(
            kept.get(&opened.key()).map(|lane| lane.version()),
            Some(approved.version())
        );
    }

    #[test]
    fn the_map_stays_bounded() {
        let kept = KeptLanes::default();
        let first = pending(0);
        kept.keep(&first);
        for n in 1..=u32::try_from(CAPACITY).expect("small") {
            kept.keep(&pending(n));
        }
        // The map started again once it was full: the first lane is gone, the last kept.
        assert!(kept.get(&first.key()).is_none());
        let count = kept
            .lanes
            .lock()
            .map(|lanes| lanes.len())
            .unwrap_or(usize::MAX);
        assert!(count <= CAPACITY, "{count} lanes kept");
    }
}
