//! A small shop for a rig agent, one tool per way a governed call can end: look up an
//! order (read-only: runs at once), refund an order (high-write: a person approves it),
//! delete a customer (destructive: always blocked). The context records every tool that
//! ran, so that a run can show what did and what did not.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cairnloop::rig::{RigError, RigTools};
use cairnloop::{
    FieldError, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry,
    ToolSpec,
};
use rig_agent::agent::{Agent, AgentBuilder};
use rig_agent::completion::{CompletionRequest, Message};
use rig_agent::core::message::{ToolResultContent, UserContent};
use rig_agent::test_utils::MockCompletionModel;
use rig_agent::tool::ToolSet;
use rig_agent::tool::server::ToolServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The host's context: the tools that ran, in order, and whether refunds are paused (an
/// operator's switch, read on every call).
#[derive(Clone, Default)]
pub struct Shop {
    ran: Arc<Mutex<Vec<String>>>,
    refunds_paused: Arc<AtomicBool>,
}

impl Shop {
    /// Pauses refunds (or resumes them): the refund tool's policy refuses while paused.
    pub fn pause_refunds(&self, paused: bool) {
        self.refunds_paused.store(paused, Ordering::SeqCst);
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
    type Context = Shop;

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

    fn authorize(_: &cairnloop::Actor<'_>, _: &Shop) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
        let order = call.input().order;
        call.context().record(format!("lookup_order({order})"));
        match order {
            1001 => Ok(format!("order {order}: shipped on 2026-11-30")),
            _ => Err(format!("no order {order}")),
        }
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refund {
    pub order: u32,
    pub cents: u64,
}

pub struct RefundOrder;

impl Tool for RefundOrder {
    const SPEC: ToolSpec = ToolSpec::new(
        "refund_order",
        "Refund order",
        "Refunds an order to the original payment method.",
        RiskTier::HighWrite,
    );
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read"), Scope::new("refunds:write")];
    type Input = Refund;
    type Output = String;
    type Error = String;
    type Context = Shop;

    fn validate(_: &Refund) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &cairnloop::Actor<'_>, shop: &Shop) -> Result<(), PolicyDenial> {
        if shop.refunds_paused.load(Ordering::SeqCst) {
            Err(PolicyDenial::Denied("refunds are paused"))
        } else {
            Ok(())
        }
    }

    fn preview(refund: &Refund, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        Some(write!(
            out,
            "Refund {}.{:02} EUR for order {}",
            refund.cents / 100,
            refund.cents % 100,
            refund.order
        ))
    }

    async fn run(call: Invocation<'_, Self>) -> Result<String, String> {
        let Refund { order, cents } = *call.input();
        call.context()
            .record(format!("refund_order({order}, {cents})"));
        Ok(format!("refunded {cents} cents on order {order}"))
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
    type Context = Shop;

    fn validate(_: &CustomerRef) -> Result<(), InputErrors> {
        Ok(())
    }

    fn authorize(_: &cairnloop::Actor<'_>, _: &Shop) -> Result<(), PolicyDenial> {
        Ok(())
    }

    async fn run(call: Invocation<'_, Self>) -> Result<(), String> {
        // Never reached: a destructive tool is always blocked. Were it reached, it shows.
        call.context()
            .record(format!("delete_customer({})", call.input().customer));
        Ok(())
    }
}

/// The shop's tools, each callable by name with its input schema.
pub static SHOP: Registry<Shop> = Registry::new(&[
    ToolEntry::mcp::<LookupOrder>(),
    ToolEntry::mcp::<RefundOrder>(),
    ToolEntry::mcp::<DeleteCustomer>(),
]);

/// A rig agent over `model` whose tools are the governed ones (and nothing else), with the
/// hook that answers a governed tool the model was not offered.
///
/// # Errors
///
/// As [`RigTools::add_to`].
pub fn governed_agent<S>(
    model: MockCompletionModel,
    governed: &RigTools<Shop, S>,
) -> Result<Agent, RigError>
where
    S: cairnloop::approvals::ApprovalStore + Send + Sync + 'static,
{
    let mut tools = ToolSet::default();
    governed.add_to(&mut tools)?;
    let server = ToolServer::new().run();
    server.add_tools(tools);
    Ok(AgentBuilder::new(model)
        .preamble("You help a shop's customers. Tell the user what each tool result says.")
        .tool_server_handle(server)
        .add_hook(governed.hook())
        .build())
}

/// A tool result as the model was sent it.
#[derive(Debug)]
pub struct Seen {
    /// The id of the call it answers.
    pub call: String,
    /// Whether rig marked it an error (failed, refused, or not run).
    pub is_error: bool,
    /// Its text blocks, joined.
    pub text: String,
    /// Its JSON block: a tool's output, or the governor's body for a call that did not run.
    pub json: Option<Value>,
}

/// Every tool result in `request`'s history, oldest first.
pub fn tool_results(request: &CompletionRequest) -> Vec<Seen> {
    let mut seen = Vec::new();
    for message in &request.chat_history {
        let Message::User { content } = message else {
            continue;
        };
        for item in content {
            let UserContent::ToolResult(result) = item else {
                continue;
            };
            let mut text = String::new();
            let mut json = None;
            for block in &result.content {
                match block {
                    ToolResultContent::Text(block) => text.push_str(&block.text),
                    ToolResultContent::Json { value } => json = Some(value.clone()),
                    ToolResultContent::Image(_) => {}
                }
            }
            seen.push(Seen {
                call: result.call.to_string(),
                is_error: result.is_error,
                text,
                json,
            });
        }
    }
    seen
}
