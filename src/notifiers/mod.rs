//! Notifiers that tell people a call waits for them (feature `webhook`): an HTTPS webhook
//! with bodies for a generic endpoint, Slack and Teams, signed so that the receiver can
//! tell it from a forgery or a replay. It builds on [`approvals`](crate::approvals), whose
//! [`Notifier`](crate::approvals::Notifier) contract it keeps.

mod body;
mod signature;
mod webhook;

#[cfg(feature = "slack")]
pub(crate) use body::{SLACK_APPROVE, SLACK_REASON, SLACK_REJECT};
pub use body::{UnknownFormat, WebhookFormat};
pub use signature::{SIGNATURE_HEADER, SignatureError, sign, verify};
pub use webhook::{Webhook, WebhookError, WebhookNotifier};
#[cfg(feature = "slack")]
pub(crate) use webhook::{agent, roots_in};
