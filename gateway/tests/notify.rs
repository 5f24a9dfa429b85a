//! `[[notify]]`: a call that waits is told to a receiver of our own over HTTPS (a test
//! authority's certificate, tests/support/receiver.py) through the store's outbox: a
//! gateway killed with SIGKILL while the receiver is down loses no notice, the gateway
//! started again sends it once, signed, linking to the call, with no more of the
//! arguments than the preview; a receiver's variable that is not set stops the gateway
//! at start, naming the variable and never its value.

#[path = "../../tests/fixtures/receiver.rs"]
mod receiver;
#[path = "support/filesystem.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::filesystem_server;

const SECRET: &str = "a long random signing secret";

/// A folder of this run's own, the configuration in it (see [`configuration`]), and the
/// store's path; `None` when the filesystem server is not installed.
fn prepared(name: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let script = filesystem_server()?;
    let (dir, share) = workspace(name);
    let config = configuration(&dir, &share, &script);
    Some((dir.join("lanes.db"), config, share))
}

/// A folder of this run's own, with a share in it and a test authority's certificates.
fn workspace(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("cairnloop-notify-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let share = dir.join("share");
    std::fs::create_dir_all(&share).unwrap();
    receiver::authorities(&dir);
    (dir, share.canonicalize().unwrap())
}

/// A configuration in front of the filesystem server on `share`, telling the receiver
/// named by `DESK_URL` (under the test authority), signed with `DESK_SECRET`.
fn configuration(dir: &Path, share: &Path, script: &Path) -> PathBuf {
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nlocal_actor = \"agent\"\nlocal_scopes = [\"fs:read\", \"fs:write\"]\nhold_secs = 0\n\n\
             [[notify]]\nname = \"desk\"\nurl_env = \"DESK_URL\"\nsecret_env = \"DESK_SECRET\"\n\
             root_certificate = {ca:?}\nlink = \"https://approvals.example.com\"\n\n\
             [upstreams.fs]\ncommand = \"node\"\nargs = [{script:?}, {share:?}]\n\n{tools}",
            ca = dir.join("ca.pem").display().to_string(),
            script = script.display().to_string(),
            share = share.display().to_string(),
            tools = include_str!("configs/filesystem-tools.toml"),
        ),
    )
    .unwrap();
    config
}

/// The gateway over stdio, as a desktop client starts it, spoken to in JSON-RPC lines.
struct Served {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Served {
    fn start(config: &Path, store: &Path, env: &[(&str, String)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
            .arg("serve")
            .arg(config)
            .arg("--store")
            .arg(store)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut served = Self { child, lines };
        served.ask(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": { "name": "notify-test", "version": "1" },
            }),
        );
        served.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        served
    }

    fn send(&mut self, frame: &Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
    }

    fn ask(&mut self, id: u32, method: &str, params: Value) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let line = self.lines.next().expect("the gateway answers").unwrap();
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port of 127.0.0.1 that nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_gateway_killed_while_the_receiver_is_down_loses_no_notice_and_the_next_sends_it_once() {
    let Some((store, config, share)) = prepared("killed") else {
        return;
    };
    let dir = store.parent().unwrap();
    let port = free_port();
    let env = [
        ("DESK_URL", format!("https://127.0.0.1:{port}/hook")),
        ("DESK_SECRET", SECRET.to_owned()),
    ];
    let target = share.join("notified.txt");
    let write = json!({
        "name": "fs_write_file",
        "arguments": { "path": target.display().to_string(), "content": "s3cret-content" },
    });

    // The receiver is down: the gateway tries, fails, and is killed before it can retry.
    let mut first = Served::start(&config, &store, &env);
    let waiting = first.ask(1, "tools/call", write);
    assert_eq!(
        waiting["result"]["structuredContent"]["status"], "awaiting_approval",
        "{waiting}"
    );
    std::thread::sleep(Duration::from_millis(1_500));
    first.child.kill().unwrap();
    drop(first);

    // The receiver comes back, and so does a gateway: the notice goes out, once.
    let desk = receiver::Receiver::listen(dir, true, &[], port);
    let _second = Served::start(&config, &store, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while desk.posts().is_empty() {
        assert!(Instant::now() < deadline, "no notice within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Marked delivered: not sent again on the passes that follow.
    std::thread::sleep(Duration::from_secs(3));
    let posts = desk.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let (headers, body) = (&posts[0]["headers"], posts[0]["body"].as_str().unwrap());
    let signature = (headers.as_object().unwrap().iter())
        .find(|(name, _)| name.eq_ignore_ascii_case(cairnloop::notifiers::SIGNATURE_HEADER))
        .and_then(|(_, value)| value.as_str())
        .expect("signed");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    cairnloop::notifiers::verify(
        SECRET.as_bytes(),
        signature,
        body.as_bytes(),
        now,
        Duration::from_secs(300),
    )
    .expect("a signature made with the configured secret");
    let notice: Value = serde_json::from_str(body).unwrap();
    assert_eq!(notice["tool"], "fs_write_file", "{notice}");
    assert!(
        body.contains("notified.txt"),
        "the preview names the file: {body}"
    );
    assert!(
        body.contains("https://approvals.example.com/proposals/"),
        "{body}"
    );
    assert!(
        !body.contains("s3cret-content"),
        "no more of the arguments than the preview: {body}"
    );
    assert!(!target.exists());
}

#[test]
fn a_receivers_variable_that_is_not_set_stops_the_gateway_at_start_naming_it() {
    let Some((store, config, _)) = prepared("unset") else {
        return;
    };
    let output = Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
        .arg("serve")
        .arg(&config)
        .arg("--store")
        .arg(&store)
        .env(
            "DESK_URL",
            "https://hooks.example.com/services/T0/B0/tok-hunter2",
        )
        .env_remove("DESK_SECRET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("[[notify]] `desk`: $DESK_SECRET is not set"),
        "{said}"
    );
    assert!(!said.contains("tok-hunter2"), "{said}");
}
