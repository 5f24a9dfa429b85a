#!/usr/bin/env bash
# Compile time of 200 governed tools: a host crate with a static cairnloop registry,
# beside the same 200 tools written with rmcp's #[tool] attribute macros.
# Dependencies are built first; then each host crate's own `cargo check` and
# `cargo build` are timed after touching its source (median of 3 runs).
# Usage: scripts/compile_time.sh [TOOLS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=${1:-200}
work=$root/target/compile-time
rm -rf "$work" && mkdir -p "$work/cairnloop_host/src" "$work/rmcp_host/src"

cat > "$work/cairnloop_host/Cargo.toml" <<TOML
[package]
name = "cairnloop_host"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
cairnloop = { path = "$root", features = ["mcp"] }
schemars = "1"
serde = { version = "1", features = ["derive"] }
[workspace]
TOML

cat > "$work/rmcp_host/Cargo.toml" <<TOML
[package]
name = "rmcp_host"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
rmcp = { version = "3.11", default-features = false, features = ["server", "macros"] }
schemars = "1"
serde = { version = "1", features = ["derive"] }
[workspace]
TOML

{
  echo "use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};"
  for i in $(seq 0 $((tools - 1))); do
    cat <<RS
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct Input$i { pub order: u32, pub note: String }
pub struct Tool$i;
impl Tool for Tool$i {
    const SPEC: ToolSpec = ToolSpec::new("tool_$i", "Tool $i", "Tool number $i.", RiskTier::LowWrite);
    const SCOPES: &'static [Scope] = &[Scope::new("orders:write")];
    type Input = Input$i;
    type Output = String;
    type Error = String;
    type Context = ();
    fn validate(_: &Input$i) -> Result<(), InputErrors> { Ok(()) }
    fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
    async fn run(call: Invocation<'_, Self>) -> Result<String, String> { Ok(call.input().order.to_string()) }
}
RS
  done
  echo "pub static TOOLS: Registry<()> = Registry::new(&["
  for i in $(seq 0 $((tools - 1))); do echo "    ToolEntry::mcp::<Tool$i>(),"; done
  echo "]);"
} > "$work/cairnloop_host/src/lib.rs"

{
  echo "use rmcp::{ErrorData, handler::server::wrapper::Parameters, tool, tool_router};"
  for i in $(seq 0 $((tools - 1))); do
    echo "#[derive(serde::Deserialize, schemars::JsonSchema)]"
    echo "pub struct Input$i { pub order: u32, pub note: String }"
  done
  echo "pub struct Server;"
  echo "#[tool_router(server_handler)]"
  echo "impl Server {"
  for i in $(seq 0 $((tools - 1))); do
    cat <<RS
    #[tool(description = "Tool number $i.")]
    async fn tool_$i(&self, Parameters(input): Parameters<Input$i>) -> Result<String, ErrorData> { Ok(input.order.to_string()) }
RS
  done
  echo "}"
} > "$work/rmcp_host/src/lib.rs"

median3() { sort -n | sed -n 2p; }
measure() { # crate, cargo subcommand
  local dir=$work/$1
  (cd "$dir" && cargo "$2" --quiet >/dev/null 2>&1)  # dependencies, once
  for _ in 1 2 3; do
    touch "$dir/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && cargo "$2" --quiet)
    end=$(date +%s.%N)
    python3 -c "print($end - $start)"
  done | median3
}

printf '%-28s %10s %10s\n' "host crate ($tools tools)" "check (s)" "build (s)"
for crate in cairnloop_host rmcp_host; do
  printf '%-28s %10.2f %10.2f\n' "$crate" "$(measure $crate check)" "$(measure $crate build)"
done
