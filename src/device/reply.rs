use core::fmt;

use crate::device::fixed::FixedText;
use crate::device::tool::OUTPUT_BYTES;
use crate::gate::{Blocked, LaneState, Timestamp, TransitionError};

/// What a device answers to a call or to an operator's input. Its `Display` is one line,
/// for the model and the operator alike.
///
/// ```
/// use cairnloop::device::{Refusal, Reply};
/// assert_eq!(Reply::Refused(Refusal::LaneTableFull).to_string(), "refused: every lane holds a live call (lane_table_full)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The call ran and returned this output.
    Executed {
        /// The tool.
        tool: &'static str,
        /// Its output (cut with `…` past 48 bytes).
        output: FixedText<OUTPUT_BYTES>,
    },
    /// The call ran and returned this error.
    Failed {
        /// The tool.
        tool: &'static str,
        /// Its error.
        error: FixedText<OUTPUT_BYTES>,
    },
    /// The call waits for an operator: in `slot`, to be approved by quoting `code`.
    Awaiting {
        /// The tool.
        tool: &'static str,
        /// The lane's slot.
        slot: usize,
        /// The code an approval quotes.
        code: u32,
        /// When the proposal expires.
        expires_at: Timestamp,
        /// Whether this call opened the lane (else it was already waiting).
        new: bool,
    },
    /// The call's lane has ended and nothing runs again: it ran, was refused, or expired.
    Ended {
        /// The tool.
        tool: &'static str,
        /// The lane's slot.
        slot: usize,
        /// Where the lane stands.
        state: LaneState,
    },
    /// A gate blocked the call.
    Blocked {
        /// The tool, when the name was known.
        tool: Option<&'static str>,
        /// Why.
        blocked: Blocked,
    },
    /// An operator's decision was taken.
    Decided {
        /// The tool.
        tool: &'static str,
        /// The lane's slot.
        slot: usize,
        /// Where the lane stands now.
        state: LaneState,
    },
    /// The input was refused before anything moved.
    Refused(Refusal),
}

/// Why a device refused an input before anything moved.
///
/// ```
/// assert_eq!(cairnloop::device::Refusal::CodeMismatch.code(), "code_mismatch");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The call text is longer than the device reads.
    Oversized,
    /// The call text is not UTF-8.
    NotUtf8,
    /// The call text is not a call: JSON that is broken, too deep, or not
    /// `{"name": …, "arguments": {…}}`.
    Malformed {
        /// The field error code (`invalid_json`, `too_deep`, `duplicate_key`, …).
        code: &'static str,
        /// What is wrong.
        message: &'static str,
    },
    /// Every lane holds a call a person may still decide or that may still run.
    LaneTableFull,
    /// The arguments' canonical text is longer than a lane holds.
    ArgumentsTooLong,
    /// An id breaks the device's identity rule, or is longer than a lane holds.
    InvalidId,
    /// No lane is in that slot.
    NoSuchLane,
    /// The code quoted is not the code of the call in that slot: the approval was for
    /// another call.
    CodeMismatch,
    /// The proposer tried to approve their own call.
    SelfApproval,
    /// The lane's time ran out; it is now expired.
    Expired,
    /// The clock reads earlier than the lane's last move.
    ClockWentBackwards,
    /// A rejection needs a reason (not blank, no control characters).
    ReasonRequired,
    /// The lane cannot make that move (approved twice, decided after it ended).
    Transition(TransitionError),
}

impl Refusal {
    /// A stable machine code, such as `lane_table_full`.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::Refusal::Oversized.code(), "too_large");
    /// ```
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Oversized => "too_large",
            Self::NotUtf8 => "not_utf8",
            Self::Malformed { code, .. } => code,
            Self::LaneTableFull => "lane_table_full",
            Self::ArgumentsTooLong => "arguments_too_long",
            Self::InvalidId => "invalid_id",
            Self::NoSuchLane => "no_such_lane",
            Self::CodeMismatch => "code_mismatch",
            Self::SelfApproval => "self_approval",
            Self::Expired => "expired",
            Self::ClockWentBackwards => "clock_went_backwards",
            Self::ReasonRequired => "reason_required",
            Self::Transition(_) => "invalid_transition",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Oversized => f.write_str("the call is longer than the device reads"),
            Self::NotUtf8 => f.write_str("the call is not UTF-8 text"),
            Self::Malformed { message, .. } => write!(f, "not a call: {message}"),
            Self::LaneTableFull => f.write_str("every lane holds a live call"),
            Self::ArgumentsTooLong => f.write_str("the arguments are longer than a lane holds"),
            Self::InvalidId => f.write_str(
                "an id must be printable ASCII with no space, at most 64 bytes (16 for a proposer)",
            ),
            Self::NoSuchLane => f.write_str("no lane in that slot"),
            Self::CodeMismatch => f.write_str("the code is not that of the call in that slot"),
            Self::SelfApproval => f.write_str("the proposer cannot approve their own call"),
            Self::Expired => f.write_str("the approval expired"),
            Self::ClockWentBackwards => f.write_str("the clock went backwards"),
            Self::ReasonRequired => f.write_str("a rejection needs a reason"),
            Self::Transition(error) => write!(f, "{error}"),
        }?;
        write!(f, " ({})", self.code())
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Executed { tool, output } => write!(f, "executed {tool}: {output}"),
            Self::Failed { tool, error } => write!(f, "failed {tool}: {error}"),
            Self::Awaiting {
                tool,
                slot,
                code,
                expires_at,
                new,
            } => write!(
                f,
                "{} {tool}: slot {slot}, code {code:08x}, until t={}",
                if *new {
                    "awaiting approval"
                } else {
                    "still awaiting approval"
                },
                expires_at.unix_millis()
            ),
            Self::Ended { tool, slot, state } => {
                write!(f, "not run {tool}: slot {slot} is {}", state.words())
            }
            Self::Blocked {
                tool: Some(tool),
                blocked,
            } => write!(f, "blocked {tool}: {blocked} ({})", blocked.code()),
            Self::Blocked {
                tool: None,
                blocked,
            } => write!(f, "blocked: {blocked} ({})", blocked.code()),
            Self::Decided { tool, slot, state } => {
                write!(f, "{} {tool}: slot {slot}", state.words())
            }
            Self::Refused(refusal) => write!(f, "refused: {refusal}"),
        }
    }
}
