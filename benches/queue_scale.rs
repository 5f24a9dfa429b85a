//! The console's queue over 1,000,000 pending lanes in PostgreSQL: the first page and
//! every filtered page (tool, tiers, proposer, accounts, all together, and the page after
//! a mark), each timed through the store as the console calls it, with the server's plan
//! beside it, and the capped count. The lanes are loaded in bulk with SQL from a few
//! proposals made through the library (keys, tools, people and accounts varied in the
//! columns and the stored lanes alike). It stops by itself; not part of `.ci/run`.
//!
//! ```sh
//! scripts/with_postgres.sh --fsync cargo bench -p cairnloop-benches --bench queue_scale
//! ```
//!
//! Options: `--lanes N` (1,000,000), `--runs R` per query (20).

use std::time::{Duration, Instant};

use cairnloop::approvals::{ApprovalStore, LaneMark, LaneQuery};
use cairnloop::gate::LaneState;
use cairnloop::stores::PostgresStore;
use cairnloop::{Actor, Governor, Outcome, Registry, RiskTier, ToolCall, ToolEntry};
use serde::{Deserialize, Serialize};

#[macro_use]
#[path = "../tests/fixtures/plain_tool.rs"]
mod plain_tool;

#[derive(Deserialize, Serialize)]
struct Job {
    order: u64,
}

plain_tool!(
    RefundOrder,
    "refund_order",
    HighWrite,
    [],
    |input: Job| -> u64 { input.order }
);
plain_tool!(
    IssueCredit,
    "issue_credit",
    LowWrite,
    [],
    |input: Job| -> u64 { input.order }
);
plain_tool!(
    CloseTicket,
    "close_ticket",
    LowWrite,
    [],
    |input: Job| -> u64 { input.order }
);

static TOOLS: Registry<()> = Registry::new(&[
    ToolEntry::json::<RefundOrder>(),
    ToolEntry::json::<IssueCredit>(),
    ToolEntry::json::<CloseTicket>(),
]);

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut lanes, mut runs) = (1_000_000u64, 20usize);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--lanes" => lanes = args.next().and_then(|n| n.parse().ok()).unwrap_or(lanes),
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--bench" => {}
            other => panic!("unknown option {other}"),
        }
    }
    let server = std::env::var("CAIRNLOOP_POSTGRES")
        .expect("run under scripts/with_postgres.sh: CAIRNLOOP_POSTGRES names the server");
    let store = PostgresStore::connect(&server).unwrap();
    let governor = Governor::new(&TOOLS).with_store(store);
    // One template lane per tool, made by the library.
    for tool in ["refund_order", "issue_credit", "close_ticket"] {
        let agent = Actor::new("agent-7", &[]).with_account("acct-0");
        let call = ToolCall::new(tool, r#"{"order": 1}"#);
        let outcome = pollster::block_on(governor.call(&call, &agent, &())).unwrap();
        assert!(matches!(outcome, Outcome::AwaitingApproval(_)));
    }
    let loading = Instant::now();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(load(&server, lanes));
    println!(
        "{lanes} pending lanes loaded in {:.1} s (bulk SQL from 3 lanes made by the library)\n",
        loading.elapsed().as_secs_f64()
    );
    let store = governor.store();
    let all = LaneQuery::new(LaneState::Pending);
    let first = pollster::block_on(store.query_lanes(&all, 50)).unwrap();
    let mark = LaneMark::of(&first[first.len() - 1]);
    let accounts: Vec<String> = (0..3).map(|n| format!("acct-{n}")).collect();
    let cases: Vec<(&str, LaneQuery)> = vec![
        ("first page", all.clone()),
        ("the page after a mark", all.clone().after(mark)),
        ("by tool", all.clone().tool("issue_credit")),
        ("by tiers", all.clone().tiers([RiskTier::HighWrite])),
        ("by proposer", all.clone().proposer("agent-17")),
        (
            "an operator's 3 accounts",
            all.clone().accounts(accounts.clone()),
        ),
        (
            "tool, tiers, proposer and accounts",
            all.clone()
                .tool("refund_order")
                .tiers([RiskTier::HighWrite])
                .proposer("agent-1")
                .accounts(accounts.clone()),
        ),
        (
            "a proposer outside those accounts (none)",
            all.clone().proposer("agent-3").accounts(accounts),
        ),
    ];
    let mut slow = Vec::new();
    println!("| page of 50 | rows | median ms | max ms | plan |");
    println!("|---|---:|---:|---:|---|");
    for (name, query) in &cases {
        let mut times = Vec::with_capacity(runs);
        let mut rows = 0;
        for _ in 0..runs {
            let started = Instant::now();
            rows = pollster::block_on(store.query_lanes(query, 50))
                .unwrap()
                .len();
            times.push(started.elapsed());
        }
        times.sort();
        let plan = pollster::block_on(store.explain_queue(query, 50)).unwrap();
        // Every index the plan reads ("... using NAME" or "Bitmap Index Scan on NAME").
        let indexes: Vec<&str> = plan
            .lines()
            .filter_map(|line| {
                line.split(" using ")
                    .nth(1)
                    .or_else(|| line.split("Bitmap Index Scan on ").nth(1))
            })
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        let index = if indexes.is_empty() {
            String::from("no index: a scan")
        } else {
            indexes.join(", ")
        };
        println!(
            "| {name} | {rows} | {:.2} | {:.2} | {index} |",
            ms(times[runs / 2]),
            ms(times[runs - 1])
        );
        if times[runs / 2] > Duration::from_millis(10) {
            slow.push((name, plan));
        }
    }
    for (name, plan) in slow {
        println!("\nplan of {name} (slower than 10 ms):\n{plan}");
    }
    let started = Instant::now();
    let count = pollster::block_on(store.count_lanes(&all, 10_001)).unwrap();
    println!(
        "\ncount capped at 10,001: {count} in {:.2} ms",
        ms(started.elapsed())
    );
    println!(
        "\nplan of the first page:\n{}",
        pollster::block_on(store.explain_queue(&all, 50)).unwrap()
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

/// Copies the three template lanes `lanes` times over, with new keys, proposers (50),
/// accounts (200) and times, in the columns and in the stored lanes alike.
async fn load(server: &str, lanes: u64) {
    let (client, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "CREATE TEMP TABLE template AS
               SELECT row_number() OVER (ORDER BY tool) - 1 AS n, key, lane, tool, tier, expires_at
               FROM cairnloop_lanes;
             INSERT INTO cairnloop_lanes
                    (key, state, version, lane, tool, tier, proposer, account, proposed_at, expires_at)
             SELECT k.key, 'pending', 0,
                    replace(replace(replace(t.lane, t.key, k.key),
                                    '\"agent-7\"', '\"agent-' || (g % 50) || '\"'),
                            '\"acct-0\"', '\"acct-' || (g % 200) || '\"'),
                    t.tool, t.tier, 'agent-' || (g % 50), 'acct-' || (g % 200),
                    1700000000000 + g * 7, t.expires_at
               FROM generate_series(1, {lanes}) AS g
               JOIN template AS t ON t.n = g % 3
               CROSS JOIN LATERAL (SELECT md5(g::text) || md5((g + {lanes})::text) AS key) AS k;
             ANALYZE cairnloop_lanes;"
        ))
        .await
        .unwrap();
}
