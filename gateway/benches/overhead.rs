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
//! A third instance is reached through a relay that does no work: this bench's own
//! binary, started with `--relay`, copying lines between its standard streams and the
//! server's. Any proxy pays what the relay adds (two more pipes, one more process to
//! wake): it is the floor the gateway's figures are read against.
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

/// The relay: starts `program` with `args` and copies each line between this process's
/// standard streams and the program's, doing nothing else.
fn relay(program: &str, args: &[String]) {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the relayed server");
    let mut to_child = child.stdin.take().expect("stdin");
    let from_child = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        for line in std::io::BufReader::new(from_child).lines() {
            let Ok(line) = line else { break };
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                break;
            }
        }
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if writeln!(to_child, "{line}").is_err() {
            break;
        }
    }
    drop(to_child);
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--relay") {
        return relay(&args[at + 1], &args[at + 2..]);
    }
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
    let (direct, relayed, through) = runtime.block_on(async {
        let server = [script.display().to_string(), share.display().to_string()];
        let direct = connect(Path::new("node"), &[&server[0], &server[1]]).await;
        let relayed = connect(
            &std::env::current_exe().expect("this bench"),
            &["--relay", "node", &server[0], &server[1]],
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
        // Each round calls all three, in an order that turns with the round.
        let arms = [
            (&direct, "read_text_file", false),
            (&relayed, "read_text_file", false),
            (&through, "fs_read_text_file", true),
        ];
        for _ in 0..WARM_UP {
            for (client, tool, gateway) in arms {
                timed(client, tool, &arguments, gateway).await;
            }
        }
        let mut times = [(); 3].map(|()| Vec::with_capacity(rounds));
        for round in 0..rounds {
            for turn in 0..3 {
                let arm = (round + turn) % 3;
                let (client, tool, gateway) = arms[arm];
                times[arm].push(timed(client, tool, &arguments, gateway).await);
            }
        }
        for client in [direct, relayed, through] {
            let _ = client.cancel().await;
        }
        let [direct, relayed, through] = times;
        (direct, relayed, through)
    });
    let _ = std::fs::remove_dir_all(&dir);
    report(rounds, direct, relayed, through);
}

fn report(
    rounds: usize,
    mut direct: Vec<Duration>,
    mut relayed: Vec<Duration>,
    mut through: Vec<Duration>,
) {
    for times in [&mut direct, &mut relayed, &mut through] {
        times.sort_unstable();
    }
    println!(
        "gateway overhead: read_text_file of a 5-byte file, {rounds} interleaved rounds after {WARM_UP} warm-up calls each"
    );
    println!(
        "gateway: `cairnloop-gateway serve`, SQLite store (one file); audit sink: that store (one record per decision)"
    );
    println!("relay: a process that copies lines both ways and does nothing else");
    println!(
        "{:<10} {:>10} {:>10} {:>10}",
        "", "p50 ms", "p90 ms", "p99 ms"
    );
    for (name, times) in [
        ("direct", &direct),
        ("relay", &relayed),
        ("gateway", &through),
    ] {
        println!(
            "{name:<10} {:>10.3} {:>10.3} {:>10.3}",
            ms(percentile(times, 0.50)),
            ms(percentile(times, 0.90)),
            ms(percentile(times, 0.99)),
        );
    }
    let added_p50 =
        |times: &[Duration]| ms(percentile(times, 0.50)) - ms(percentile(&direct, 0.50));
    let p99_ratio =
        |times: &[Duration]| ms(percentile(times, 0.99)) / ms(percentile(&direct, 0.99));
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "relay (the floor of any proxy): added at p50 {:.3} ms, p99 ratio {:.3}x",
        added_p50(&relayed),
        p99_ratio(&relayed),
    );
    println!(
        "gateway: added at p50: {:.3} ms (goal <= 1 ms: {}); p99 ratio: {:.3}x (goal <= 1.10x: {}); \
         p99 against the relay's: {:.3}x",
        added_p50(&through),
        verdict(added_p50(&through) <= 1.0),
        p99_ratio(&through),
        verdict(p99_ratio(&through) <= 1.10),
        ms(percentile(&through, 0.99)) / ms(percentile(&relayed, 0.99)),
    );
}
