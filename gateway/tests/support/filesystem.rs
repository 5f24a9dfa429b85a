//! The official filesystem MCP server from npm, as the gateway's tests find it, and the
//! operator's command they decide with.

use std::path::{Path, PathBuf};

/// The installed server's entry point, or `None` when it is not installed and nobody
/// asked for it.
pub fn filesystem_server() -> Option<PathBuf> {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok();
    if let Some(named) = std::env::var_os("CAIRNLOOP_FILESYSTEM_SERVER") {
        let script = PathBuf::from(named);
        assert!(
            node && script.is_file(),
            "CAIRNLOOP_FILESYSTEM_SERVER names {}, which node cannot run",
            script.display()
        );
        return Some(script);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp-ts/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if script.is_file() && node {
        return Some(script);
    }
    eprintln!("no node or filesystem server: run `npm ci` in tests/mcp-ts to run these tests");
    None
}

/// `cairnloop-gateway operator --store STORE ARGS…`, with `env` set: what it printed, after
/// checking that it succeeded; what it said on its standard error.
#[allow(dead_code, reason = "the benchmark decides nothing")]
pub fn operator(store: &std::ffi::OsStr, env: &[(&str, &str)], args: &[&str]) -> (String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cairnloop-gateway"))
        .arg("operator")
        .arg("--store")
        .arg(store)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{said}");
    (String::from_utf8(output.stdout).unwrap(), said)
}
