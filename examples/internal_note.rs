//! A low-write tool: every call waits for a human, who sees a preview of what it would do.
//!
//! `cargo run --example internal_note`

use core::fmt;

use cairnloop::{
    Actor, ApprovalMode, Decision, FieldError, InputErrors, Invocation, ModePolicy, PolicyDenial,
    RiskTier, Scope, Tool, ToolSpec, decide,
};

struct Note {
    ticket: u32,
    body: &'static str,
}

struct InternalNote;

impl Tool for InternalNote {
    const SPEC: ToolSpec = ToolSpec::new(
        "internal_note",
        "Add internal note",
        "Adds a note to a support ticket that only staff can read.",
        RiskTier::LowWrite,
    )
    .closed_world();
    const SCOPES: &'static [Scope] = &[Scope::new("tickets:write")];

    type Input = Note;
    type Output = ();
    type Error = ();
    type Context = ();

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

    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(()) // anyone holding tickets:write
    }

    fn preview(note: &Note, out: &mut dyn fmt::Write) -> Option<fmt::Result> {
        Some(write!(
            out,
            "Add to ticket #{} the staff-only note {:?}",
            note.ticket, note.body
        ))
    }

    async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

fn main() {
    let spec = InternalNote::SPEC;
    println!(
        "tool {:?}: tier {}, approval mode {}",
        spec.name(),
        spec.risk_tier(),
        spec.approval_mode()
    );
    let agent = Actor::new("support-agent", &["tickets:write"]);
    let host = ModePolicy::new();
    // A host in incident mode blocks every low-risk write; it can only tighten.
    let incident = ModePolicy::new().with_tier(RiskTier::LowWrite, ApprovalMode::AlwaysBlock);

    let calls = [
        (
            "normal",
            Note {
                ticket: 42,
                body: "Customer called twice about the delay.",
            },
            &host,
        ),
        (
            "normal",
            Note {
                ticket: 0,
                body: "  ",
            },
            &host,
        ),
        (
            "incident",
            Note {
                ticket: 42,
                body: "Escalate.",
            },
            &incident,
        ),
    ];
    for (label, note, policy) in calls {
        print!("[{label}] internal_note(ticket {}): ", note.ticket);
        match decide::<InternalNote>(note, &agent, &(), policy) {
            Decision::AwaitApproval(pending) => {
                let mut preview = String::new();
                pending.write_preview(&mut preview);
                println!(
                    "await approval (mode {} from {})",
                    pending.mode().resolved(),
                    pending.mode().source().as_str()
                );
                println!("    preview for the approver: {preview}");
            }
            Decision::Execute { .. } => println!("execute"),
            Decision::Blocked(blocked) => println!("blocked ({}): {blocked}", blocked.code()),
        }
    }
}
