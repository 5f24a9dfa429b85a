//! Governance against the simplest code that does the same job (its floor), measured in
//! one run. Each group prints `ratio = ours / floor` (medians) at the end.
//!
//! `cargo bench -p cairnloop-benches --bench governance`

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;

use cairnloop::{
    Actor, ApprovalMode, Decision, IdempotencyKey, InputErrors, Invocation, ModePolicy,
    PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec, decide,
};
use cairnloop_benches::{self as benches, Path, R10, R100, R1000, R10000, SHIPMENT, name};
use criterion::{BatchSize, BenchmarkId, Criterion};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------------------
// 1. The typed decision.

struct Lookup;
struct Refund;

macro_rules! typed {
    ($ty:ident, $tier:expr) => {
        impl Tool for $ty {
            const SPEC: ToolSpec = ToolSpec::new("t", "T", "D.", $tier);
            const SCOPES: &'static [Scope] =
                &[Scope::new("orders:read"), Scope::new("refunds:write")];
            type Input = u32;
            type Output = ();
            type Error = ();
            type Context = ();
            fn validate(_: &u32) -> Result<(), InputErrors> {
                Ok(())
            }
            fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
                Ok(())
            }
            async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
                Ok(())
            }
        }
    };
}
typed!(Lookup, RiskTier::ReadOnly);
typed!(Refund, RiskTier::HighWrite);

#[derive(Debug, PartialEq)]
enum Floor {
    Execute,
    Await,
    Blocked,
}

/// By hand: the same scope comparison, a policy call and the match on the mode.
#[inline(never)]
fn floor_decision(
    required: &[&str],
    granted: &[&str],
    policy: fn() -> bool,
    mode: ApprovalMode,
) -> Floor {
    if !required
        .iter()
        .all(|r| granted.iter().any(|g| g.as_bytes() == r.as_bytes()))
        || !policy()
    {
        return Floor::Blocked;
    }
    match mode {
        ApprovalMode::Auto => Floor::Execute,
        ApprovalMode::RequiresApproval => Floor::Await,
        ApprovalMode::AlwaysBlock => Floor::Blocked,
    }
}

fn allow() -> bool {
    true
}

fn typed_decision(c: &mut Criterion) {
    let granted = ["tickets:write", "orders:read", "refunds:write"];
    let actor = Actor::new("agent", &granted);
    let policy = ModePolicy::new();
    let required = ["orders:read", "refunds:write"];
    let mut group = c.benchmark_group("typed_decision");
    group.bench_function("auto/cairnloop", |b| {
        b.iter(|| {
            matches!(
                decide::<Lookup>(black_box(7), black_box(&actor), &(), &policy),
                Decision::Execute { .. }
            )
        })
    });
    group.bench_function("auto/floor", |b| {
        b.iter(|| {
            floor_decision(
                black_box(&required),
                black_box(&granted),
                allow,
                ApprovalMode::Auto,
            ) == Floor::Execute
        })
    });
    group.bench_function("approval/cairnloop", |b| {
        b.iter(|| {
            matches!(
                decide::<Refund>(black_box(7), black_box(&actor), &(), &policy),
                Decision::AwaitApproval(_)
            )
        })
    });
    group.bench_function("approval/floor", |b| {
        b.iter(|| {
            floor_decision(
                black_box(&required),
                black_box(&granted),
                allow,
                ApprovalMode::RequiresApproval,
            ) == Floor::Await
        })
    });
    group.finish();
    paired(
        "typed_decision",
        "auto/cairnloop",
        2.0,
        || {
            black_box(matches!(
                decide::<Lookup>(black_box(7), black_box(&actor), &(), &policy),
                Decision::Execute { .. }
            ));
        },
        || {
            black_box(floor_decision(
                black_box(&required),
                black_box(&granted),
                allow,
                ApprovalMode::Auto,
            ));
        },
    );
}

// ---------------------------------------------------------------------------------------
// 2. Name resolution among 10 to 10,000 tools.

// The registries of 10 to 10,000 numbered tools are in `lib.rs` (the profile uses one).

fn name_resolution(c: &mut Criterion) {
    let mut group = c.benchmark_group("name_resolution");
    for (size, registry) in [(10, &R10), (100, &R100), (1000, &R1000), (10_000, &R10000)] {
        let map: HashMap<&str, usize> = (0..size).map(|n| (name(n), n)).collect();
        let wanted = name(size * 3 / 4);
        assert!(registry.get(wanted).is_some() && map.contains_key(wanted));
        group.bench_with_input(BenchmarkId::new("cairnloop", size), &wanted, |b, wanted| {
            b.iter(|| {
                registry
                    .get(black_box(wanted))
                    .map(|entry| entry.scopes().len())
            })
        });
        group.bench_with_input(BenchmarkId::new("floor", size), &wanted, |b, wanted| {
            b.iter(|| map.get(black_box(wanted)).copied())
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// 3. Calls by name with a five-field JSON object (the fixture in `lib.rs`): one that
//    runs, three blocked at gates 0, 2 and 3, and a proposal; each against the floor.

fn by_name_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("by_name_call");
    // A sink that discards: the figure is the pipeline's, not the audit trail's.
    let discarding = benches::discarding();
    group.bench_function("cairnloop", |b| {
        b.iter(|| benches::call(&discarding, Path::Executes, black_box(SHIPMENT)))
    });
    // The default: every decision appended to the memory store's audit log.
    group.bench_function("cairnloop_store_log", |b| {
        b.iter_batched_ref(
            benches::governor_with_store_log,
            |governor| benches::call(governor, Path::Executes, black_box(SHIPMENT)),
            BatchSize::SmallInput,
        )
    });
    // Floor: decode, a direct call, and the output as JSON (the governor returns JSON).
    group.bench_function("floor", |b| b.iter(|| benches::floor(black_box(SHIPMENT))));
    group.finish();
    let floor = || {
        black_box(benches::floor(black_box(SHIPMENT)));
    };
    paired(
        "by_name_call",
        "cairnloop",
        2.5,
        || {
            black_box(benches::call(
                &discarding,
                Path::Executes,
                black_box(SHIPMENT),
            ));
        },
        floor,
    );

    let mut group = c.benchmark_group("by_name_blocked");
    for (path, name) in [
        (Path::UnknownTool, "gate0"),
        (Path::ScopeMissing, "gate2"),
        (Path::PolicyDenied, "gate3"),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| benches::call(&discarding, path, black_box(SHIPMENT)))
        });
    }
    group.bench_function("floor", |b| b.iter(|| benches::floor(black_box(SHIPMENT))));
    group.finish();
    for (path, name) in [
        (Path::UnknownTool, "gate0"),
        (Path::ScopeMissing, "gate2"),
        (Path::PolicyDenied, "gate3"),
    ] {
        paired(
            "by_name_blocked",
            name,
            1.2,
            || {
                black_box(benches::call(&discarding, path, black_box(SHIPMENT)));
            },
            floor,
        );
    }

    let mut group = c.benchmark_group("proposal");
    // The pipeline's figure: a sink and a store that discard (a store's bookkeeping is
    // measured by the store benches), the same call each time, each time a new proposal.
    let pipeline = benches::discarding_all();
    group.bench_function("cairnloop", |b| {
        b.iter(|| benches::call(&pipeline, Path::Proposal, black_box(SHIPMENT)))
    });
    // With the memory store, in a governor that lives on, as a host's does: each call new
    // arguments, so each one is a new proposal (the texts are made, and the lanes
    // dropped, outside the timing).
    group.bench_function("cairnloop_memory_store", |b| {
        b.iter_custom(|iterations| {
            let governor = benches::discarding();
            let texts = benches::distinct_shipments(1, iterations);
            let start = std::time::Instant::now();
            for text in &texts {
                black_box(benches::call(&governor, Path::Proposal, black_box(text)));
            }
            let elapsed = start.elapsed();
            drop(governor);
            elapsed
        })
    });
    // The second figure: a fresh governor and store for each call (made outside the
    // timing), so each proposal also opens its store's first node.
    group.bench_function("cairnloop_fresh_store", |b| {
        b.iter_batched_ref(
            benches::discarding,
            |governor| benches::call(governor, Path::Proposal, black_box(SHIPMENT)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("floor", |b| b.iter(|| benches::floor(black_box(SHIPMENT))));
    group.finish();
    paired(
        "proposal",
        "cairnloop",
        6.0,
        || {
            black_box(benches::call(
                &pipeline,
                Path::Proposal,
                black_box(SHIPMENT),
            ));
        },
        floor,
    );
}

// ---------------------------------------------------------------------------------------
// 4. The visibility filter over 1,000 tools for an actor with 5 scopes.

fn visibility(c: &mut Criterion) {
    let actor = Actor::new("agent", &benches::LISTING_SCOPES);
    let policy = ModePolicy::new();
    let ours = || cairnloop::gate::visible(&R1000, black_box(&actor), &(), &policy).count();
    let floor = benches::visibility_floor;
    let mut group = c.benchmark_group("visibility_1000");
    group.bench_function("cairnloop", |b| b.iter(ours));
    group.bench_function("floor", |b| b.iter(floor));
    group.finish();
    paired(
        "visibility_1000",
        "cairnloop",
        2.0,
        || {
            black_box(ours());
        },
        || {
            black_box(floor());
        },
    );
}

// ---------------------------------------------------------------------------------------
// 4b. `tools/list` over MCP for 100 tools, against serialising a precomputed answer.

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[allow(dead_code, reason = "listed, not called")]
struct Query {
    id: u32,
    note: String,
}

struct Listed<const N: usize>;

impl<const N: usize> Tool for Listed<N> {
    const SPEC: ToolSpec = ToolSpec::new(name(N), "Listed", "A listed tool.", RiskTier::ReadOnly);
    const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
    type Input = Query;
    type Output = String;
    type Error = String;
    type Context = ();
    fn validate(_: &Query) -> Result<(), InputErrors> {
        Ok(())
    }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> {
        Ok(())
    }
    async fn run(_: Invocation<'_, Self>) -> Result<String, String> {
        Ok(String::new())
    }
}

seq_macro::seq!(N in 0..100 { static LISTED: Registry<()> = Registry::new(&[#(ToolEntry::mcp::<Listed<N>>(),)*]); });

fn mcp_tools_list(c: &mut Criterion) {
    let governor = std::sync::Arc::new(cairnloop::Governor::new(&LISTED));
    let server = cairnloop::mcp::McpServer::new(governor, (), "agent").with_scopes(["orders:read"]);
    let precomputed =
        rmcp::model::ListToolsResult::with_all_items(server.list_tools_for_actor().unwrap());
    assert_eq!(precomputed.tools.len(), 100);
    let mut group = c.benchmark_group("mcp_tools_list_100");
    group.bench_function("cairnloop", |b| {
        b.iter(|| {
            let tools = server.list_tools_for_actor().unwrap();
            serde_json::to_vec(&rmcp::model::ListToolsResult::with_all_items(tools))
                .unwrap()
                .len()
        })
    });
    group.bench_function("floor", |b| {
        b.iter(|| serde_json::to_vec(black_box(&precomputed)).unwrap().len())
    });
    // Where the gap is: rmcp's `Tool` is owned, so a listing copies each entry; most of
    // the copy is the `_meta` map of risk tier and approval mode.
    group.bench_function("copy_of_entries", |b| {
        b.iter(|| black_box(&precomputed.tools).clone().len())
    });
    let mut without_meta = precomputed.tools.clone();
    for tool in &mut without_meta {
        tool.meta = None;
    }
    group.bench_function("copy_of_entries_without_meta", |b| {
        b.iter(|| black_box(&without_meta).clone().len())
    });
    group.finish();
    paired(
        "mcp_tools_list_100",
        "cairnloop",
        1.2,
        || {
            let tools = server.list_tools_for_actor().unwrap();
            black_box(
                serde_json::to_vec(&rmcp::model::ListToolsResult::with_all_items(tools))
                    .unwrap()
                    .len(),
            );
        },
        || {
            black_box(serde_json::to_vec(black_box(&precomputed)).unwrap().len());
        },
    );
}

/// The same 100 tools written for rig alone: rig keeps each definition (its schema made
/// once, at registration) and clones it for a listing.
struct RigListed<const N: usize>;

impl<const N: usize> rig_agent::core::tool::PortableTool for RigListed<N> {
    const NAME: &'static str = name(N);
    type Args = Query;
    type Output = String;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "A listed tool.".into()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Query)).unwrap_or_default()
    }

    async fn call(&self, _: Query) -> Result<String, Self::Error> {
        Ok(String::new())
    }
}

/// Listings of 100 tools an actor may call, against rig's: the names a model may call
/// (`Governor::visible`) against rig's `ToolSet::tool_definitions`, and the MCP listing
/// (`Governor::mcp_tools_for`) against rig's definitions as JSON values.
fn listings_against_rig(c: &mut Criterion) {
    let mut set = rig_agent::tool::ToolSet::default();
    seq_macro::seq!(N in 0..100 { set.add_tool(RigListed::<N>); });
    assert_eq!(set.tool_definitions().len(), 100);
    let governor = cairnloop::Governor::new(&LISTED);
    let actor = Actor::new("agent", &["orders:read"]);
    assert_eq!(governor.visible(&actor, &()).count(), 100);
    let visible = || governor.visible(black_box(&actor), &()).count();
    let rig_definitions = || black_box(&set).tool_definitions().len();
    let listing = || {
        governor
            .mcp_tools_for(black_box(&actor), &())
            .unwrap()
            .len()
    };
    let rig_values = || {
        serde_json::to_value(black_box(&set).tool_definitions())
            .unwrap()
            .as_array()
            .map_or(0, Vec::len)
    };
    // What a server sends: the listing written as JSON text (ours is larger: output
    // schemas naming every status, annotations, `_meta`).
    let listing_text = || {
        serde_json::to_string(&governor.mcp_tools_for(black_box(&actor), &()).unwrap())
            .unwrap()
            .len()
    };
    let rig_text = || {
        serde_json::to_string(&black_box(&set).tool_definitions())
            .unwrap()
            .len()
    };
    let mut group = c.benchmark_group("listing_100");
    group.bench_function("visible", |b| b.iter(visible));
    group.bench_function("rig_tool_definitions", |b| b.iter(rig_definitions));
    group.bench_function("mcp_tools_for", |b| b.iter(listing));
    group.bench_function("rig_to_value", |b| b.iter(rig_values));
    group.bench_function("mcp_tools_for_as_text", |b| b.iter(listing_text));
    group.bench_function("rig_definitions_as_text", |b| b.iter(rig_text));
    group.finish();
    paired(
        "listing_100",
        "visible",
        2.0,
        || {
            black_box(visible());
        },
        || {
            black_box(rig_definitions());
        },
    );
    paired(
        "listing_100",
        "mcp_tools_for",
        1.5,
        || {
            black_box(listing());
        },
        || {
            black_box(rig_values());
        },
    );
}

/// The default governor (every decision kept in its memory store's ring, which a long-lived
/// process has filled) against the same governor with a sink that discards.
fn default_governor(c: &mut Criterion) {
    let default = benches::governor_with_store_log();
    for _ in 0..cairnloop::approvals::MemoryStore::DEFAULT_EVENT_CAPACITY {
        benches::call(&default, Path::Executes, SHIPMENT);
    }
    let discarding = benches::discarding();
    let mut group = c.benchmark_group("default_governor");
    group.bench_function("cairnloop", |b| {
        b.iter(|| benches::call(&default, Path::Executes, black_box(SHIPMENT)))
    });
    group.bench_function("discarding_sink", |b| {
        b.iter(|| benches::call(&discarding, Path::Executes, black_box(SHIPMENT)))
    });
    group.finish();
    paired(
        "default_governor",
        "cairnloop",
        1.3,
        || {
            black_box(benches::call(&default, Path::Executes, black_box(SHIPMENT)));
        },
        || {
            black_box(benches::call(
                &discarding,
                Path::Executes,
                black_box(SHIPMENT),
            ));
        },
    );
}

/// A repeated call (the model asks again while a person decides) against the decision of
/// the same call: the same decode and gates, stopped at gate 4 by a host override.
fn repeated_call(c: &mut Criterion) {
    let repeated = benches::discarding();
    assert_eq!(
        benches::call(&repeated, Path::Proposal, SHIPMENT),
        "awaiting_approval"
    );
    let decision = cairnloop::Governor::new(&benches::SHIPPING)
        .with_audit_sink(cairnloop::approvals::DiscardAudit)
        .with_governance(cairnloop::Governance::new().with_mode_policy(
            ModePolicy::new().with_tier(RiskTier::HighWrite, ApprovalMode::AlwaysBlock),
        ));
    assert_eq!(
        benches::call(&decision, Path::Proposal, SHIPMENT),
        "always_blocked"
    );
    let mut group = c.benchmark_group("repeated_call");
    group.bench_function("cairnloop", |b| {
        b.iter(|| benches::call(&repeated, Path::Proposal, black_box(SHIPMENT)))
    });
    group.bench_function("decision", |b| {
        b.iter(|| benches::call(&decision, Path::Proposal, black_box(SHIPMENT)))
    });
    group.finish();
    paired(
        "repeated_call",
        "cairnloop",
        2.0,
        || {
            black_box(benches::call(
                &repeated,
                Path::Proposal,
                black_box(SHIPMENT),
            ));
        },
        || {
            black_box(benches::call(
                &decision,
                Path::Proposal,
                black_box(SHIPMENT),
            ));
        },
    );
}

// ---------------------------------------------------------------------------------------
// 4b. Against an agent framework's own dispatch: rig's tool set running the same tool by
//     name (parse, its future, the output as a tool result), without governance; the
//     governed call by name; and the governed tool inside rig's tool set.

fn rig_dispatch(c: &mut Criterion) {
    let plain = benches::rig_plain();
    let governed_in_rig = benches::rig_governed();
    let discarding = benches::discarding();
    assert!(benches::rig_call(&plain, SHIPMENT) && benches::rig_call(&governed_in_rig, SHIPMENT));
    let mut group = c.benchmark_group("rig_dispatch");
    group.bench_function("rig", |b| {
        b.iter(|| benches::rig_call(&plain, black_box(SHIPMENT)))
    });
    group.bench_function("cairnloop", |b| {
        b.iter(|| benches::call(&discarding, Path::Executes, black_box(SHIPMENT)))
    });
    group.bench_function("cairnloop_in_rig", |b| {
        b.iter(|| benches::rig_call(&governed_in_rig, black_box(SHIPMENT)))
    });
    group.bench_function("floor", |b| b.iter(|| benches::floor(black_box(SHIPMENT))));
    group.finish();
}

// ---------------------------------------------------------------------------------------
// 5. The idempotency key.

fn idempotency_key(c: &mut Criterion) {
    let input: serde_json::Value = serde_json::from_str(SHIPMENT).unwrap();
    let envelope = serde_json::json!({
        "account_id": "acme", "actor_id": "agent", "dedupe_token": null, "input": input, "tool_ref": "ship",
    });
    let mut group = c.benchmark_group("idempotency_key");
    group.bench_function("cairnloop", |b| {
        b.iter(|| {
            IdempotencyKey::for_call("ship", black_box(&input), Some("agent"), Some("acme"), None)
        })
    });
    group.bench_function("floor", |b| {
        b.iter(|| Sha256::digest(serde_json::to_vec(black_box(&envelope)).unwrap()))
    });
    group.finish();
    paired(
        "idempotency_key",
        "cairnloop",
        1.5,
        || {
            black_box(IdempotencyKey::for_call(
                "ship",
                black_box(&input),
                Some("agent"),
                Some("acme"),
                None,
            ));
        },
        || {
            black_box(Sha256::digest(
                serde_json::to_vec(black_box(&envelope)).unwrap(),
            ));
        },
    );
}

// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Paired ratios. Criterion times ours, then the floor, seconds apart; on a shared machine
// whose speed drifts, the ratio of those two medians drifts too. So each budget is also
// measured in turns: many short rounds, each timing ours and the floor back to back (in
// alternating order), each round giving one ratio. The median round is the figure.

/// One paired ratio: its bench, its goal, and the median, lowest and highest round.
#[derive(Clone, Copy)]
struct Paired {
    group: &'static str,
    bench: &'static str,
    goal: f64,
    median: f64,
    low: f64,
    high: f64,
}

/// The paired ratios measured in this run.
static PAIRED: std::sync::Mutex<Vec<Paired>> = std::sync::Mutex::new(Vec::new());

/// Whether the bench `group/bench` is selected by the filter given on the command line
/// (criterion's: here, words that the name contains, `a|b` for either).
fn selected(group: &str, bench: &str) -> bool {
    let name = format!("{group}/{bench}");
    let mut args = std::env::args().skip(1);
    let mut filters = Vec::new();
    while let Some(arg) = args.next() {
        if arg.starts_with("--") {
            let takes_value = [
                "--warm-up-time",
                "--measurement-time",
                "--sample-size",
                "--save-baseline",
                "--baseline",
                "--profile-time",
                "--noise-threshold",
                "--significance-level",
                "--confidence-level",
                "--nresamples",
                "--color",
                "--output-format",
                "--plotting-backend",
            ];
            if takes_value.contains(&arg.as_str()) {
                args.next();
            }
            continue;
        }
        filters.push(arg);
    }
    filters.is_empty()
        || filters
            .iter()
            .any(|filter| filter.split('|').any(|word| name.contains(word)))
}

/// Times ours against the floor in 41 rounds of turns (see above) and keeps the result
/// for the report.
fn paired(
    group: &'static str,
    bench: &'static str,
    goal: f64,
    mut ours: impl FnMut(),
    mut floor: impl FnMut(),
) {
    if !selected(group, bench) {
        return;
    }
    let time = |f: &mut dyn FnMut(), n: u64| {
        let start = std::time::Instant::now();
        for _ in 0..n {
            f();
        }
        start.elapsed().as_secs_f64()
    };
    // Enough floor iterations for a round of two milliseconds or more, and at least 64,
    // so that the first (colder) iteration of each turn weighs little.
    let mut n = 64;
    while time(&mut floor, n) < 2e-3 {
        n *= 2;
    }
    let mut ratios: Vec<f64> = (0..41)
        .map(|round| {
            let (a, b) = if round % 2 == 0 {
                let a = time(&mut ours, n);
                (a, time(&mut floor, n))
            } else {
                let b = time(&mut floor, n);
                (time(&mut ours, n), b)
            };
            a / b
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let (median, low, high) = (
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
    );
    if let Ok(mut paired) = PAIRED.lock() {
        paired.push(Paired {
            group,
            bench,
            goal,
            median,
            low,
            high,
        });
    }
}

/// The median of one benchmark, in nanoseconds, from criterion's own estimates.
fn median(group: &str, bench: &str) -> Option<f64> {
    // The workspace's target directory: cargo runs a bench from its package's folder.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")),
        PathBuf::from,
    );
    // A `BenchmarkId` nests a directory per part; a plain name `a/b` is kept as `a_b`.
    let read = |bench: &str| {
        let path = target
            .join("criterion")
            .join(group)
            .join(bench)
            .join("new/estimates.json");
        std::fs::read_to_string(path).ok()
    };
    let text = read(bench).or_else(|| read(&bench.replace('/', "_")))?;
    let estimates: serde_json::Value = serde_json::from_str(&text).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

fn report() {
    let rows: Vec<(&str, String, String, f64)> = vec![
        (
            "typed_decision",
            "auto/cairnloop".into(),
            "auto/floor".into(),
            2.0,
        ),
        (
            "typed_decision",
            "approval/cairnloop".into(),
            "approval/floor".into(),
            2.0,
        ),
        (
            "name_resolution",
            "cairnloop/10".into(),
            "floor/10".into(),
            1.0,
        ),
        (
            "name_resolution",
            "cairnloop/100".into(),
            "floor/100".into(),
            1.0,
        ),
        (
            "name_resolution",
            "cairnloop/1000".into(),
            "floor/1000".into(),
            1.0,
        ),
        (
            "name_resolution",
            "cairnloop/10000".into(),
            "floor/10000".into(),
            1.0,
        ),
        ("by_name_call", "cairnloop".into(), "floor".into(), 2.5),
        (
            "by_name_call",
            "cairnloop_store_log".into(),
            "floor".into(),
            2.5,
        ),
        ("by_name_blocked", "gate0".into(), "floor".into(), 1.2),
        ("by_name_blocked", "gate2".into(), "floor".into(), 1.2),
        ("by_name_blocked", "gate3".into(), "floor".into(), 1.2),
        ("proposal", "cairnloop".into(), "floor".into(), 6.0),
        (
            "proposal",
            "cairnloop_memory_store".into(),
            "floor".into(),
            f64::INFINITY,
        ),
        (
            "proposal",
            "cairnloop_fresh_store".into(),
            "floor".into(),
            f64::INFINITY,
        ),
        ("visibility_1000", "cairnloop".into(), "floor".into(), 2.0),
        (
            "mcp_tools_list_100",
            "cairnloop".into(),
            "floor".into(),
            1.2,
        ),
        (
            "mcp_tools_list_100",
            "copy_of_entries".into(),
            "floor".into(),
            f64::INFINITY,
        ),
        (
            "mcp_tools_list_100",
            "copy_of_entries_without_meta".into(),
            "floor".into(),
            f64::INFINITY,
        ),
        ("idempotency_key", "cairnloop".into(), "floor".into(), 1.5),
        (
            "listing_100",
            "visible".into(),
            "rig_tool_definitions".into(),
            2.0,
        ),
        (
            "listing_100",
            "mcp_tools_for".into(),
            "rig_to_value".into(),
            1.5,
        ),
        (
            "listing_100",
            "mcp_tools_for_as_text".into(),
            "rig_definitions_as_text".into(),
            f64::INFINITY,
        ),
        ("repeated_call", "cairnloop".into(), "decision".into(), 2.0),
        (
            "default_governor",
            "cairnloop".into(),
            "discarding_sink".into(),
            1.3,
        ),
        // No budget of their own: how the governed call compares with rig's dispatch.
        ("rig_dispatch", "rig".into(), "floor".into(), f64::INFINITY),
        ("rig_dispatch", "cairnloop".into(), "rig".into(), 1.0),
        (
            "rig_dispatch",
            "cairnloop_in_rig".into(),
            "rig".into(),
            f64::INFINITY,
        ),
    ];
    println!(
        "\n{:<18} {:<20} {:>12} {:>12} {:>7} {:>6}  met",
        "group", "bench", "ours (ns)", "floor (ns)", "ratio", "goal"
    );
    for (group, ours, floor, goal) in rows {
        match (median(group, &ours), median(group, &floor)) {
            (Some(a), Some(b)) => {
                let ratio = a / b;
                let met = if ratio <= goal { "yes" } else { "NO" };
                println!(
                    "{group:<18} {ours:<20} {a:>12.1} {b:>12.1} {ratio:>7.2} {goal:>6.2}  {met}"
                );
            }
            _ => println!("{group:<18} {ours:<20} (not measured in this run)"),
        }
    }
    let paired = PAIRED
        .lock()
        .map(|paired| paired.clone())
        .unwrap_or_default();
    if paired.is_empty() {
        return;
    }
    println!(
        "\npaired ratios (41 rounds of ours and the floor in turns)\n{:<18} {:<20} {:>7} {:>15} {:>6}  met",
        "group", "bench", "median", "rounds", "goal"
    );
    for Paired {
        group,
        bench,
        goal,
        median,
        low,
        high,
    } in paired
    {
        let met = if median <= goal { "yes" } else { "NO" };
        let range = format!("{low:.2}-{high:.2}");
        println!("{group:<18} {bench:<20} {median:>7.2} {range:>15} {goal:>6.2}  {met}");
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    typed_decision(&mut criterion);
    name_resolution(&mut criterion);
    by_name_call(&mut criterion);
    visibility(&mut criterion);
    mcp_tools_list(&mut criterion);
    rig_dispatch(&mut criterion);
    listings_against_rig(&mut criterion);
    repeated_call(&mut criterion);
    default_governor(&mut criterion);
    idempotency_key(&mut criterion);
    criterion.final_summary();
    report();
}
