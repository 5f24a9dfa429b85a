//! Notifiers that tell people a call waits for them (feature `webhook`): an HTTPS webhook
//! with bodies for a generic endpoint, Slack and Teams, signed so that the receiver can
//! tell it from a forgery or a replay. It builds on [`approvals`](crate::approvals), whose
//! [`Notifier`](crate::approvals::Notifier) contract it keeps.

mod body;
mod signature;
mod webhook;

pub use body::{UnknownFormat, WebhookFormat};
pub use signature::{SIGNATURE_HEADER, SignatureError, sign, verify};
pub use webhook::{Webhook, WebhookError, WebhookNotifier};
