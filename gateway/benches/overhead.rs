//! What the gateway adds to a call: the same auto call (`read_text_file` of a small file)
//! sent straight to the official filesystem MCP server and through `cairnloop-gateway`
//! in front of another instance of it, both over stdio from rmcp's client, interleaved
//! in one run (each round sends one of each, the order alternating), so that the machine's
//! drift touches both alike.
//!
//! The gateway runs as a desktop client starts it: `cairnloop-gateway serve CONFIG --store
//! FILE`, a SQLite store whose audit trail is the gateway's audit sink (each decision is
//! one record appended to the same file, committed before the call is forwarded).
//!
//! ```text
//! cargo bench -p cairnloop-gateway --bench overhead            # 3,000 rounds
//! cargo bench -p cairnloop-gateway --bench overhead -- 10000   # more
//! ```
//!
//! Needs `node` and the server from `npm ci` in `tests/mcp-ts` (or
//! `CAIRNLOOP_FILESYSTEM_SERVER`). Prints the figures and whether the goal is met
//! (≤ 1 ms added at the median, ≤ 10 % at the 99th percentile); it asserts nothing about
//! time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

#[path = "../tests/support/filesystem.rs"]
mod support;

const WARM_UP: usize = 300;
const ROUNDS: usize = 3_000;

type Client = RunningService<RoleClient, ()>;

async fn connect(program: &Path, args: &[&str]) -> Client {
    let command = tokio::process::Command::new(program).configure(|command| {
        command.args(args);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    ().serve(transport).await.expect("MCP handshake")
}

/// One call, timed; its answer must be the file's text, executed.
async fn timed(client: &Client, tool: &str, arguments: &Value, gateway: bool) -> Duration {
    let request = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().expect("object").clone());
    let started = Instant::now();
    let result = client.call_tool(request).await.expect("call");
    let took = started.elapsed();
    let result = serde_json::to_value(result).expect("result");
    assert_eq!(result["content"][0]["text"], "hello", "{result}");
    if gateway {
        assert_eq!(
            result["structuredContent"]["status"], "executed",
            "{result}"
        );
    }
    took
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    // Nearest rank: the smallest value with at least p of the samples at or below it.
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    let rounds = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse::<usize>().ok())
        .unwrap_or(ROUNDS);
    let Some(script) = support::filesystem_server() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("cairnloop-gateway-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let share = dir.join("share");
    std::fs::create_dir_all(&share).expect("share");
    let share = share.canonicalize().expect("share");
    let file = share.join("hello.txt");
    std::fs::write(&file, "hello").expect("file");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nlocal_actor = \"agent\"\nlocal_scopes = [\"fs:read\", \"fs:write\"]\n\n\
             [upstreams.fs]\ncommand = \"node\"\nargs = [{script:?}, {share:?}]\n{tools}",
            script = script.display().to_string(),
            share = share.display().to_string(),
            tools = include_str!("../tests/configs/filesystem-tools.toml"),
        ),
    )
    .expect("config");
    let store = dir.join("lanes.db");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (direct, through) = runtime.block_on(async {
        let direct = connect(
            Path::new("node"),
            &[&script.display().to_string(), &share.display().to_string()],
        )
        .await;
        let gateway = PathBuf::from(env!("CARGO_BIN_EXE_cairnloop-gateway"));
        let through = connect(
            &gateway,
            &[
                "serve",
                &config.display().to_string(),
                "--store",
                &store.display().to_string(),
            ],
        )
        .await;
        let arguments = json!({ "path": file.display().to_string() });
        for _ in 0..WARM_UP {
            timed(&direct, "read_text_file", &arguments, false).await;
            timed(&through, "fs_read_text_file", &arguments, true).await;
        }
        let mut direct_times = Vec::with_capacity(rounds);
        let mut through_times = Vec::with_capacity(rounds);
        for round in 0..rounds {
            if round % 2 == 0 {
                direct_times.push(timed(&direct, "read_text_file", &arguments, false).await);
                through_times.push(timed(&through, "fs_read_text_file", &arguments, true).await);
            } else {
                through_times.push(timed(&through, "fs_read_text_file", &arguments, true).await);
                direct_times.push(timed(&direct, "read_text_file", &arguments, false).await);
            }
        }
        let _ = direct.cancel().await;
        let _ = through.cancel().await;
        (direct_times, through_times)
    });
    let _ = std::fs::remove_dir_all(&dir);
    report(rounds, direct, through);
}

fn report(rounds: usize, mut direct: Vec<Duration>, mut through: Vec<Duration>) {
    direct.sort_unstable();
    through.sort_unstable();
    println!(
        "gateway overhead: read_text_file of a 5-byte file, {rounds} interleaved rounds after {WARM_UP} warm-up calls each"
    );
    println!(
        "gateway: `cairnloop-gateway serve`, SQLite store (one file); audit sink: that store (one record per decision)"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>10}",
        "", "p50 ms", "p90 ms", "p99 ms"
    );
    for (name, times) in [("direct", &direct), ("gateway", &through)] {
        println!(
            "{name:<10} {:>10.3} {:>10.3} {:>10.3}",
            ms(percentile(times, 0.50)),
            ms(percentile(times, 0.90)),
            ms(percentile(times, 0.99)),
        );
    }
    let added_p50 = ms(percentile(&through, 0.50)) - ms(percentile(&direct, 0.50));
    let p99_ratio = ms(percentile(&through, 0.99)) / ms(percentile(&direct, 0.99));
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "added at p50: {added_p50:.3} ms (goal <= 1 ms: {}); p99 ratio: {p99_ratio:.3}x (goal <= 1.10x: {})",
        verdict(added_p50 <= 1.0),
        verdict(p99_ratio <= 1.10),
    );
}
