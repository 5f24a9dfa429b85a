//! A small support desk, one tool per risk tier: look up an order (read-only), add an
//! internal note (low-write), refund an order (high-write), delete a customer
//! (destructive). Written once: the examples register these (`mod.rs` beside this file),
//! the rig example registers three of them, and the integration tests add tools of their
//! own (`tests/fixtures/desk.rs`).
#![allow(dead_code, unused_macros, reason = "each example and test uses a part")]

use core::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cairnloop::{
    Actor, FieldError, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The host's context: an operator's switch that freezes refunds (read on every call), and
/// what ran, in order. Clones share both, so a host can flip the switch and show the log
/// while its agent holds a clone.
#[derive(Clone, Default)]
pub struct Desk {
    refunds_frozen: Arc<AtomicBool>,
    ran: Arc<Mutex<Vec<String>>>,
}

impl Desk {
    /// A desk whose refunds are frozen from the start.
    pub fn frozen() -> Self {
        let desk = Self::default();
        desk.freeze_refunds(true);
        desk
    }

    /// Freezes refunds (or thaws them): the refund tool's policy refuses while frozen.
    pub fn freeze_refunds(&self, frozen: bool) {
        self.refunds_frozen.store(frozen, Ordering::SeqCst);
    }

    /// What ran so far, as `tool(arguments)`.
    pub fn ran(&self) -> Vec<String> {
        self.ran
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, run: String) {
        self.ran
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(run);
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderRef {
    pub order: u32,
}

pub struct LookupOrder;

impl Tool for LookupOrder {
    const SPEC: ToolSpec = ToolSpec::new(
        "lookup_order",
        "Look up order",
        "Finds an order by its number.",
        RiskTier::ReadOnly,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
    type Input = OrderRef;
    type Output = String;
    type Error = String;
    type Context = Desk;

    fn validate(input: &OrderRef) -> Result<(), InputErrors> {
        if input.order == 0 {
            return Err(InputErrors::one(FieldError::new(
                "/order",
                "out_of_range",
                "order numbers start at 1",
            )));
        }
        Ok(())
    }

    fn authorize(actor: &Actor<'_>, _: &Desk) -> Result<(), PolicyDenial> {
        match actor.account() {
            Some(_) => Ok(()),
            None => Err(PolicyDenial::Denied("order lookups need an account")),
        }
    }

    async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
        let order = call.input().order;
        call.context().record(format!("lookup_order({order})"));
        match order {
            1001 => Ok("shipped".into()),
            n => Err(format!("order {n} not found")),
        }
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Note {
    pub ticket: u32,
    pub body: String,
    #[serde(default)]
    pub api_token: Option<String>,
}

pub struct InternalNote;

impl Tool for InternalNote {
    const SPEC: ToolSpec = ToolSpec::new(
        "internal_note",
        "Add internal note",
        "Adds a staff-only note to a ticket.",
        RiskTier::LowWrite,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("tickets:write")];
    type Input = Note;
    type Output = ();
    type Error = String;
    type Context = Desk;

    fn validate(note: &Note) -> Result<(), InputErrors> {
        let mut errors = InputErrors::new();
        if note.ticket == 0 {
            errors.push(FieldError::new(
                "/ticket",
                "out_of_range",
                "ticket numbers start at 1",
            ));
        }
        if note.body.trim().is_empty() {
            errors.push(FieldError::new("/body", "required", "the note is empty"));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn authorize(_: &Actor<'_>, _: &Desk) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<(), String> {
        call.context()
            .record(format!("internal_note({})", call.input().ticket));
        Ok(())
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Damaged,
    Late,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refund {
    pub order: u32,
    pub cents: u64,
    pub reason: Reason,
}

pub struct RefundOrder;

impl Tool for RefundOrder {
    const SPEC: ToolSpec = ToolSpec::new(
        "refund_order",
        "Refund order",
        "Refunds an order to the original payment method.",
        RiskTier::HighWrite,
    )
    .with_result_states(&["refunded", "already_refunded"]);
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read"), Scope::new("refunds:write")];
    type Input = Refund;
    type Output = &'static str;
    type Error = String;
    type Context = Desk;

    fn validate(_: &Refund) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &Actor<'_>, desk: &Desk) -> Result<(), PolicyDenial> {
        if desk.refunds_frozen.load(Ordering::SeqCst) {
            Err(PolicyDenial::Denied("refunds are frozen for the audit"))
        } else {
            Ok(())
        }
    }

    fn preview(refund: &Refund, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        Some(write!(
            out,
            "Refund {}.{:02} EUR for order {} ({:?})",
            refund.cents / 100,
            refund.cents % 100,
            refund.order,
            refund.reason
        ))
    }

    async fn run(call: Invocation<'_, Self>) -> Result<&'static str, String> {
        let Refund { order, cents, .. } = *call.input();
        call.context()
            .record(format!("refund_order({order}, {cents})"));
        Ok("refunded")
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerRef {
    pub customer: u64,
}

pub struct DeleteCustomer;

impl Tool for DeleteCustomer {
    const SPEC: ToolSpec = ToolSpec::new(
        "delete_customer",
        "Delete customer",
        "Deletes a customer and all their data.",
        RiskTier::Destructive,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("customers:delete")];
    type Input = CustomerRef;
    type Output = ();
    type Error = String;
    type Context = Desk;

    fn validate(_: &CustomerRef) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(actor: &Actor<'_>, _: &Desk) -> Result<(), PolicyDenial> {
        if actor.id().starts_with("admin") {
            Ok(())
        } else {
            Err(PolicyDenial::Denied("only administrators delete customers"))
        }
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), String> {
        unreachable!("a destructive tool is always blocked")
    }
}

/// Registers a tool for calls by name, with its input schema when MCP is on.
#[cfg(feature = "schemars")]
macro_rules! by_name {
    ($tool:ty) => {
        cairnloop::ToolEntry::mcp::<$tool>()
    };
}
#[cfg(not(feature = "schemars"))]
macro_rules! by_name {
    ($tool:ty) => {
        cairnloop::ToolEntry::json::<$tool>()
    };
}

/// Every scope the four tools require.
pub const EVERY_SCOPE: &[&str] = &[
    "orders:read",
    "tickets:write",
    "refunds:write",
    "customers:delete",
];
