use super::rules::{Violation, expect_valid, to_spec_error};
use super::text;
use crate::declare::{ApprovalMode, RiskTier, SpecError};

/// What a tool is, frozen at compile time: its name, title and description for the model,
/// its risk tier, the approval mode (derived from the tier unless set), whether it is
/// idempotent, the result states it declares, and whether it reaches the open world.
///
/// A `ToolSpec` can only be made valid: [`ToolSpec::new`] and the builder methods check
/// rules 1–5 by `const` evaluation, so in a `const` item a bad declaration is
/// a compile error whose message names the rule and the fix. The `try_*` twins return the
/// same rule as a [`SpecError`] for specs built at run time, from text that is only
/// borrowed (`ToolSpecOf<'a>`), so a host that checks declarations from configuration
/// leaks nothing:
///
/// ```
/// use cairnloop::{RiskTier, SpecError, declare::ToolSpecOf};
///
/// let config = String::from("delete_customer");
/// let spec = ToolSpecOf::try_new(&config, "Delete customer", "Deletes.", RiskTier::Destructive)?;
/// assert_eq!(spec.name(), "delete_customer");
/// # Ok::<(), SpecError>(())
/// ```
///
/// ```
/// use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
///
/// const SPEC: ToolSpec = ToolSpec::new(
///     "refund_order",
///     "Refund order",
///     "Refunds an order to the original payment method.",
///     RiskTier::HighWrite,
/// )
/// .with_result_states(&["refunded", "already_refunded"])
/// .idempotent();
///
/// assert_eq!(SPEC.approval_mode(), ApprovalMode::RequiresApproval);
/// assert!(SPEC.is_idempotent());
/// assert!(SPEC.is_open_world());
/// ```
///
/// # When a bad spec is caught
///
/// Rust evaluates a `const` when something uses it. A free `const` or `static` item is
/// always evaluated, so `cargo check` rejects a bad one. An associated `const SPEC` in an
/// `impl Tool` is evaluated when it is used: registering the tool in a
/// [`Registry`](crate::Registry) that lives in a `static` makes `cargo check`
/// reject it; a `SPEC` that only run-time code reaches is rejected by `cargo build`; a
/// `SPEC` that nothing uses is never evaluated and so never rejected.
///
/// ```compile_fail
/// use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
///
/// // Rule 4: a low-write tool cannot run without approval.
/// const SPEC: ToolSpec = ToolSpec::new("add_note", "Add note", "Adds a note.", RiskTier::LowWrite)
///     .with_approval(ApprovalMode::Auto);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ToolSpecOf<'a> {
    name: &'a str,
    title: &'a str,
    description: &'a str,
    risk_tier: RiskTier,
    approval_mode: ApprovalMode,
    loosened_because: Option<&'a str>,
    idempotent: bool,
    open_world: bool,
    result_states: &'a [&'a str],
    quorum: u8,
}

/// The most approvers a quorum may ask for ([`ToolSpec::with_quorum`]).
///
/// ```
/// use cairnloop::{RiskTier, SpecError, ToolSpec, declare::MAX_QUORUM};
/// let deploy = ToolSpec::try_new("deploy", "Deploy", "Deploys.", RiskTier::HighWrite)?;
/// assert_eq!(deploy.try_with_quorum(MAX_QUORUM + 1), Err(SpecError::QuorumOutOfRange));
/// # Ok::<(), SpecError>(())
/// ```
pub const MAX_QUORUM: u8 = 5;

/// How a quorum is quoted in a compile error.
const QUORUM_TEXT: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

const fn quorum_text(n: u8) -> &'static str {
    if (n as usize) < QUORUM_TEXT.len() {
        QUORUM_TEXT[n as usize]
    } else {
        "a number above 9"
    }
}

/// A [`ToolSpecOf`] whose text lives for the whole program: what a tool's `const SPEC`
/// is, and what a registry holds.
pub type ToolSpec = ToolSpecOf<'static>;

impl<'a> ToolSpecOf<'a> {
    /// A spec with the approval mode derived from `risk_tier`, not idempotent, reaching the
    /// open world, with no declared result states. Invalid input fails compilation in a
    /// `const` item (and panics at run time; use [`ToolSpec::try_new`] there).
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec = ToolSpec::new(
    ///     "lookup_order",
    ///     "Look up order",
    ///     "Finds an order by its number.",
    ///     RiskTier::ReadOnly,
    /// );
    /// assert_eq!(SPEC.approval_mode(), ApprovalMode::Auto);
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn new(
        name: &'a str,
        title: &'a str,
        description: &'a str,
        risk_tier: RiskTier,
    ) -> Self {
        expect_valid(Self::check_new(name, title, description, risk_tier))
    }

    /// [`ToolSpec::new`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{RiskTier, SpecError, ToolSpec};
    ///
    /// let err = ToolSpec::try_new("note", "Add\nnote", "Adds a note.", RiskTier::LowWrite);
    /// assert_eq!(err, Err(SpecError::TitleControlCharacter));
    /// ```
    pub const fn try_new(
        name: &'a str,
        title: &'a str,
        description: &'a str,
        risk_tier: RiskTier,
    ) -> Result<Self, SpecError> {
        to_spec_error(Self::check_new(name, title, description, risk_tier))
    }

    const fn check_new(
        name: &'a str,
        title: &'a str,
        description: &'a str,
        risk_tier: RiskTier,
    ) -> Result<Self, Violation<'a>> {
        if !text::is_tool_name(name) {
            return Err(Violation::new(SpecError::InvalidName, name));
        }
        if text::is_blank(title) {
            return Err(Violation::new(SpecError::EmptyTitle, title));
        }
        if text::has_control(title, false) {
            return Err(Violation::new(SpecError::TitleControlCharacter, title));
        }
        if text::is_blank(description) {
            return Err(Violation::new(SpecError::EmptyDescription, description));
        }
        if text::has_control(description, true) {
            return Err(Violation::new(
                SpecError::DescriptionControlCharacter,
                description,
            ));
        }
        Ok(Self {
            name,
            title,
            description,
            risk_tier,
            approval_mode: risk_tier.derived_approval_mode(),
            loosened_because: None,
            idempotent: false,
            open_world: true,
            result_states: &[],
            quorum: 1,
        })
    }

    /// Sets an approval mode at least as strict as the derived one (tightening). A weaker
    /// mode fails compilation (rule 4); to loosen, use [`ToolSpec::loosen_approval`].
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec = ToolSpec::new("export", "Export", "Exports data.", RiskTier::ReadOnly)
    ///     .with_approval(ApprovalMode::RequiresApproval);
    /// assert_eq!(SPEC.approval_mode(), ApprovalMode::RequiresApproval);
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn with_approval(self, mode: ApprovalMode) -> Self {
        expect_valid(self.check_with_approval(mode))
    }

    /// [`ToolSpec::with_approval`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, RiskTier, SpecError, ToolSpec};
    ///
    /// let spec = ToolSpec::try_new("refund", "Refund", "Refunds.", RiskTier::HighWrite)?;
    /// assert_eq!(spec.try_with_approval(ApprovalMode::Auto), Err(SpecError::WeakerApprovalMode));
    /// # Ok::<(), SpecError>(())
    /// ```
    pub const fn try_with_approval(self, mode: ApprovalMode) -> Result<Self, SpecError> {
        to_spec_error(self.check_with_approval(mode))
    }

    const fn check_with_approval(self, mode: ApprovalMode) -> Result<Self, Violation<'a>> {
        if (mode as u8) < (self.derived_approval_mode() as u8) {
            return Err(Violation::new(SpecError::WeakerApprovalMode, mode.as_str()));
        }
        if self.quorum > 1 && matches!(mode, ApprovalMode::Auto) {
            return Err(Violation::new(SpecError::QuorumOnAuto, self.name));
        }
        Ok(Self {
            approval_mode: mode,
            loosened_because: None,
            ..self
        })
    }

    /// Loosens the approval mode below the derived one, on purpose and on the record: the
    /// justification is kept in the spec and carried by every audit record of the tool.
    ///
    /// The justification must be non-empty and on one line; `mode` must really be weaker
    /// than the derived mode; a destructive tool can never become `Auto`. Each of these
    /// fails compilation in a `const` item (rule 4).
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec = ToolSpec::new("add_tag", "Add tag", "Tags a ticket.", RiskTier::LowWrite)
    ///     .loosen_approval(ApprovalMode::Auto, "tags are cosmetic and removed in one click");
    /// assert_eq!(SPEC.approval_mode(), ApprovalMode::Auto);
    /// assert_eq!(SPEC.loosened_because(), Some("tags are cosmetic and removed in one click"));
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn loosen_approval(self, mode: ApprovalMode, justification: &'a str) -> Self {
        expect_valid(self.check_loosen_approval(mode, justification))
    }

    /// [`ToolSpec::loosen_approval`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{ApprovalMode, RiskTier, SpecError, ToolSpec};
    ///
    /// let spec = ToolSpec::try_new("wipe", "Wipe", "Wipes a disk.", RiskTier::Destructive)?;
    /// let err = spec.try_loosen_approval(ApprovalMode::Auto, "we have backups");
    /// assert_eq!(err, Err(SpecError::DestructiveAuto));
    /// # Ok::<(), SpecError>(())
    /// ```
    pub const fn try_loosen_approval(
        self,
        mode: ApprovalMode,
        justification: &'a str,
    ) -> Result<Self, SpecError> {
        to_spec_error(self.check_loosen_approval(mode, justification))
    }

    const fn check_loosen_approval(
        self,
        mode: ApprovalMode,
        justification: &'a str,
    ) -> Result<Self, Violation<'a>> {
        if matches!(self.risk_tier, RiskTier::Destructive) && matches!(mode, ApprovalMode::Auto) {
            return Err(Violation::new(SpecError::DestructiveAuto, self.name));
        }
        if (mode as u8) >= (self.derived_approval_mode() as u8) {
            return Err(Violation::new(SpecError::NotALoosening, mode.as_str()));
        }
        if text::is_blank(justification) || text::has_control(justification, false) {
            return Err(Violation::new(
                SpecError::MissingJustification,
                justification,
            ));
        }
        if self.quorum > 1 && matches!(mode, ApprovalMode::Auto) {
            return Err(Violation::new(SpecError::QuorumOnAuto, self.name));
        }
        Ok(Self {
            approval_mode: mode,
            loosened_because: Some(justification),
            ..self
        })
    }

    /// Marks the tool idempotent: calling it twice with the same input has the effect of
    /// calling it once.
    ///
    /// ```
    /// use cairnloop::{RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec =
    ///     ToolSpec::new("set_status", "Set status", "Sets a status.", RiskTier::LowWrite).idempotent();
    /// assert!(SPEC.is_idempotent());
    /// ```
    #[must_use]
    pub const fn idempotent(self) -> Self {
        Self {
            idempotent: true,
            ..self
        }
    }

    /// Marks the tool as closed-world: it touches only this system, not the internet or
    /// other parties. Tools are open-world unless marked.
    ///
    /// ```
    /// use cairnloop::{RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec =
    ///     ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly).closed_world();
    /// assert!(!SPEC.is_open_world());
    /// ```
    #[must_use]
    pub const fn closed_world(self) -> Self {
        Self {
            open_world: false,
            ..self
        }
    }

    /// Declares the result states the tool reports (rule 5: each `[a-z0-9_]+`, none twice).
    ///
    /// ```
    /// use cairnloop::{RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly)
    ///     .with_result_states(&["found", "not_found"]);
    /// assert_eq!(SPEC.result_states(), &["found", "not_found"]);
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn with_result_states(self, states: &'a [&'a str]) -> Self {
        expect_valid(self.check_result_states(states))
    }

    /// [`ToolSpec::with_result_states`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{RiskTier, SpecError, ToolSpec};
    ///
    /// let spec = ToolSpec::try_new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly)?;
    /// assert_eq!(spec.try_with_result_states(&["ok", "ok"]), Err(SpecError::DuplicateResultState));
    /// assert_eq!(spec.try_with_result_states(&["Not Found"]), Err(SpecError::InvalidResultState));
    /// # Ok::<(), SpecError>(())
    /// ```
    pub const fn try_with_result_states(self, states: &'a [&'a str]) -> Result<Self, SpecError> {
        to_spec_error(self.check_result_states(states))
    }

    const fn check_result_states(self, states: &'a [&'a str]) -> Result<Self, Violation<'a>> {
        let mut i = 0;
        while i < states.len() {
            if !text::is_result_state(states[i]) {
                return Err(Violation::new(SpecError::InvalidResultState, states[i]));
            }
            let mut j = 0;
            while j < i {
                if text::eq(states[i], states[j]) {
                    return Err(Violation::new(SpecError::DuplicateResultState, states[i]));
                }
                j += 1;
            }
            i += 1;
        }
        Ok(Self {
            result_states: states,
            ..self
        })
    }

    /// Asks `n` approvers of each call instead of one: `n` different people, none of them
    /// the proposer, each allowed to decide the call's tier. The call stays pending, with
    /// the approvals it has, until the `n`-th; a rejection by any of them rejects it.
    /// `n` is 1 to [`MAX_QUORUM`], and a tool whose calls run at once (`Auto`) takes no
    /// quorum above 1: each fails compilation in a `const` item (rule 8).
    ///
    /// ```
    /// use cairnloop::{RiskTier, ToolSpec};
    ///
    /// const SPEC: ToolSpec = ToolSpec::new("deploy", "Deploy", "Deploys to production.", RiskTier::HighWrite)
    ///     .with_quorum(2);
    /// assert_eq!(SPEC.quorum(), 2);
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn with_quorum(self, n: u8) -> Self {
        expect_valid(self.check_quorum(n))
    }

    /// [`ToolSpec::with_quorum`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{RiskTier, SpecError, ToolSpec};
    ///
    /// let read = ToolSpec::try_new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly)?;
    /// assert_eq!(read.try_with_quorum(2), Err(SpecError::QuorumOnAuto));
    /// let deploy = ToolSpec::try_new("deploy", "Deploy", "Deploys.", RiskTier::HighWrite)?;
    /// assert_eq!(deploy.try_with_quorum(6), Err(SpecError::QuorumOutOfRange));
    /// # Ok::<(), SpecError>(())
    /// ```
    pub const fn try_with_quorum(self, n: u8) -> Result<Self, SpecError> {
        to_spec_error(self.check_quorum(n))
    }

    const fn check_quorum(self, n: u8) -> Result<Self, Violation<'a>> {
        if n == 0 || n > MAX_QUORUM {
            return Err(Violation::new(SpecError::QuorumOutOfRange, quorum_text(n)));
        }
        if n > 1 && matches!(self.approval_mode, ApprovalMode::Auto) {
            return Err(Violation::new(SpecError::QuorumOnAuto, self.name));
        }
        Ok(Self { quorum: n, ..self })
    }

    /// How many approvers each call needs: 1 unless [`ToolSpec::with_quorum`] says more.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert_eq!(spec.quorum(), 1);
    /// ```
    #[must_use]
    pub const fn quorum(&self) -> u8 {
        self.quorum
    }

    /// The name a model calls the tool by.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    /// assert_eq!(spec.name(), "lookup");
    /// ```
    #[must_use]
    pub const fn name(&self) -> &'a str {
        self.name
    }

    /// The one-line title shown to people.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    /// assert_eq!(spec.title(), "Look up");
    /// ```
    #[must_use]
    pub const fn title(&self) -> &'a str {
        self.title
    }

    /// The description shown to the model.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    /// assert_eq!(spec.description(), "Looks up.");
    /// ```
    #[must_use]
    pub const fn description(&self) -> &'a str {
        self.description
    }

    /// The declared risk tier.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("lookup", "Look up", "Looks up.", RiskTier::ReadOnly);
    /// assert_eq!(spec.risk_tier(), RiskTier::ReadOnly);
    /// ```
    #[must_use]
    pub const fn risk_tier(&self) -> RiskTier {
        self.risk_tier
    }

    /// The approval mode in force: the derived one, a tightened one, or a justified
    /// loosening.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("wipe", "Wipe", "Wipes.", RiskTier::Destructive);
    /// assert_eq!(spec.approval_mode(), ApprovalMode::AlwaysBlock);
    /// ```
    #[must_use]
    pub const fn approval_mode(&self) -> ApprovalMode {
        self.approval_mode
    }

    /// The same spec at `tier` when it is higher (a call's input raised it): its tier,
    /// and its mode at least the one that tier derives. Never lower.
    pub(crate) const fn raised_to(self, tier: RiskTier) -> Self {
        if (tier as u8) <= (self.risk_tier as u8) {
            return self;
        }
        let derived = tier.derived_approval_mode();
        let approval_mode = if (derived as u8) > (self.approval_mode as u8) {
            derived
        } else {
            self.approval_mode
        };
        Self {
            risk_tier: tier,
            approval_mode,
            ..self
        }
    }

    /// The mode the risk tier demands, whatever was set explicitly.
    ///
    /// ```
    /// # use cairnloop::{ApprovalMode, RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite)
    ///     .with_approval(ApprovalMode::AlwaysBlock);
    /// assert_eq!(spec.derived_approval_mode(), ApprovalMode::RequiresApproval);
    /// ```
    #[must_use]
    pub const fn derived_approval_mode(&self) -> ApprovalMode {
        self.risk_tier.derived_approval_mode()
    }

    /// The justification of a loosened approval mode, or `None` when the mode is at least
    /// as strict as the derived one.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert_eq!(spec.loosened_because(), None);
    /// ```
    #[must_use]
    pub const fn loosened_because(&self) -> Option<&'a str> {
        self.loosened_because
    }

    /// Whether repeating a call with the same input has no further effect.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert!(!spec.is_idempotent());
    /// ```
    #[must_use]
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// Whether the tool may reach beyond this system (the internet, other parties).
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert!(spec.is_open_world());
    /// ```
    #[must_use]
    pub const fn is_open_world(&self) -> bool {
        self.open_world
    }

    /// The declared result states, in declared order.
    ///
    /// ```
    /// # use cairnloop::{RiskTier, ToolSpec};
    /// let spec = ToolSpec::new("note", "Note", "Adds a note.", RiskTier::LowWrite);
    /// assert!(spec.result_states().is_empty());
    /// ```
    #[must_use]
    pub const fn result_states(&self) -> &'a [&'a str] {
        self.result_states
    }
}

impl core::fmt::Debug for ToolSpecOf<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("title", &self.title)
            .field("description", &self.description)
            .field("risk_tier", &self.risk_tier)
            .field("approval_mode", &self.approval_mode)
            .field("loosened_because", &self.loosened_because)
            .field("idempotent", &self.idempotent)
            .field("open_world", &self.open_world)
            .field("result_states", &self.result_states)
            .finish()
    }
}
