//! What the gateway adds to a call: the same auto call (`read_text_file` of a small file)
//! sent straight to the official filesystem MCP server and through `cairnloop-gateway`
//! in front of another instance of it, both over stdio from rmcp's client, interleaved
//! in one run (each round sends one of each, the order alternating), so that the machine's
//! drift touches both alike.
//!
//! The gateway runs as a desktop client starts it: `cairnloop-gateway serve CONFIG --store
//! FILE`, a SQLite store whose audit trail is the gateway's audit sink (each decision is
//! one record appended to the same file: an auto call's is handed to the store's thread
//! without a wait, and committed with its next batch, within 100 ms).
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
//! Each arm's CPU per call is read from `/proc` over the timed rounds: the proxy's (the
//! relay's, the gateway's) and the server's behind it.
//!
//! `CAIRNLOOP_BENCH_GATEWAY=PATH` measures another build of the gateway (an older commit's,
//! say) against the same floor, so that two builds can be run turn about on a machine whose
//! speed drifts between runs.
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

/// A client of the server `program` starts, and the process id of `program`.
async fn connect(program: &Path, args: &[&str]) -> (Client, u32) {
    let command = tokio::process::Command::new(program).configure(|command| {
        command.args(args);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    let pid = transport.id().expect("a process id");
    (().serve(transport).await.expect("MCP handshake"), pid)
}

/// The CPU time a process has used, its threads' included (Linux: user and system time
/// from `/proc/PID/stat`, in clock ticks); `None` where there is no such file.
fn cpu_of(pid: u32, tick: Duration) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u32>().ok()? + fields.get(12)?.parse::<u32>().ok()?;
    Some(tick * ticks)
}

/// The process whose parent is `pid` (the server a proxy started).
fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let child: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
        let parent: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (parent == pid).then_some(child)
    })
}

/// The length of a clock tick, as `getconf CLK_TCK` says (100 per second by default).
fn clock_tick() -> Duration {
    let per_second = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8(out.stdout)
                .ok()?
                .trim()
                .parse::<u32>()
                .ok()
        })
        .unwrap_or(100);
    Duration::from_secs(1) / per_second
}

/// Each arm's processes: the proxy (none for the direct arm) and the server.
struct Processes {
    proxy: Option<u32>,
    server: Option<u32>,
}

impl Processes {
    fn cpu(&self, tick: Duration) -> [Option<Duration>; 2] {
        [self.proxy, self.server].map(|pid| pid.and_then(|pid| cpu_of(pid, tick)))
    }
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
    let tick = clock_tick();
    let measured = runtime.block_on(async {
        let server = [script.display().to_string(), share.display().to_string()];
        let (direct, direct_pid) = connect(Path::new("node"), &[&server[0], &server[1]]).await;
        let (relayed, relay_pid) = connect(
            &std::env::current_exe().expect("this bench"),
            &["--relay", "node", &server[0], &server[1]],
        )
        .await;
        // Another build of the gateway may be measured against the same floor.
        let gateway = std::env::var_os("CAIRNLOOP_BENCH_GATEWAY").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_cairnloop-gateway")),
            PathBuf::from,
        );
        let (through, gateway_pid) = connect(
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
        let processes = [
            Processes {
                proxy: None,
                server: Some(direct_pid),
            },
            Processes {
                proxy: Some(relay_pid),
                server: child_of(relay_pid),
            },
            Processes {
                proxy: Some(gateway_pid),
                server: child_of(gateway_pid),
            },
        ];
        let before = processes.each_ref().map(|arm| arm.cpu(tick));
        let mut times = [(); 3].map(|()| Vec::with_capacity(rounds));
        for round in 0..rounds {
            for turn in 0..3 {
                let arm = (round + turn) % 3;
                let (client, tool, gateway) = arms[arm];
                times[arm].push(timed(client, tool, &arguments, gateway).await);
            }
        }
        let after = processes.each_ref().map(|arm| arm.cpu(tick));
        for client in [direct, relayed, through] {
            let _ = client.cancel().await;
        }
        // Each process's CPU over the timed rounds, per call of its arm.
        let per_call = |arm: usize, which: usize| -> Option<Duration> {
            let used = after[arm][which]?.checked_sub(before[arm][which]?)?;
            Some(used / u32::try_from(rounds).unwrap_or(u32::MAX))
        };
        let cpu = [0, 1, 2].map(|arm| [per_call(arm, 0), per_call(arm, 1)]);
        let [direct, relayed, through] = times;
        (direct, relayed, through, cpu)
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (direct, relayed, through, cpu) = measured;
    report(rounds, direct, relayed, through);
    report_cpu(rounds, tick, cpu);
}

/// CPU per call of each arm: its proxy's (nothing for the direct arm) and its server's.
fn report_cpu(rounds: usize, tick: Duration, cpu: [[Option<Duration>; 2]; 3]) {
    let us = |cpu: Option<Duration>| {
        cpu.map_or("n/a".to_string(), |cpu| {
            format!("{:.1}", cpu.as_secs_f64() * 1e6)
        })
    };
    println!(
        "CPU per call over the {rounds} timed rounds (user + system, from /proc, clock tick {} ms):",
        tick.as_millis()
    );
    println!("{:<10} {:>12} {:>12}", "", "proxy µs", "server µs");
    for (name, [proxy, server]) in ["direct", "relay", "gateway"].into_iter().zip(cpu) {
        let proxy = if name == "direct" {
            "-".to_string()
        } else {
            us(proxy)
        };
        println!("{name:<10} {proxy:>12} {:>12}", us(server));
    }
    if let [_, [Some(relay), _], [Some(gateway), _]] = cpu {
        let ratio = gateway.as_secs_f64() / relay.as_secs_f64().max(1e-9);
        let met = if ratio <= 2.0 { "met" } else { "NOT met" };
        println!(
            "gateway CPU per forwarded auto call against the relay's: {ratio:.2}x (goal <= 2x: {met})"
        );
    }
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
