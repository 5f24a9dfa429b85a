#!/usr/bin/env bash
# Compile time of 200 governed tools: a host crate with a static cairnloop registry,
# beside the floor (the same 200 serde inputs and plain async fns, dispatched by name
# without cairnloop) and the same 200 tools written with rmcp's #[tool] macros.
# Dependencies are built first; then each host crate's own `cargo check` and
# `cargo build` are timed after touching its source (incremental), and its `cargo build`
# after `cargo clean -p` (clean): RUNS interleaved runs (default 3), the median of each
# printed, then the ratios to rmcp and to the floor.
# Usage: [RUNS=3] scripts/compile_time.sh [TOOLS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=${1:-200}
work=$root/target/compile-time
rm -rf "$work" && mkdir -p "$work/cairnloop_host/src" "$work/rmcp_host/src" "$work/plain_host/src"

cat > "$work/plain_host/Cargo.toml" <<TOML
[package]
name = "plain_host"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
schemars = "1"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
[workspace]
TOML

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

{
  for i in $(seq 0 $((tools - 1))); do
    cat <<RS
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct Input$i { pub order: u32, pub note: String }
pub async fn tool_$i(input: Input$i) -> Result<String, String> { Ok(input.order.to_string()) }
RS
  done
  echo "pub async fn call(name: &str, arguments: &str) -> Result<serde_json::Value, String> {"
  echo "    match name {"
  for i in $(seq 0 $((tools - 1))); do
    echo "        \"tool_$i\" => { let input = serde_json::from_str(arguments).map_err(|e| e.to_string())?; serde_json::to_value(tool_$i(input).await?).map_err(|e| e.to_string()) }"
  done
  echo "        _ => Err(\"unknown tool\".into()),"
  echo "    }"
  echo "}"
} > "$work/plain_host/src/lib.rs"

median() { sort -n | sed -n "$(( ($1 + 1) / 2 ))p"; }
seconds() { # directory, command...: wall time of the command in the directory
  local dir=$1; shift
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && "$@")
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.3f}')"
}

crates=(plain_host cairnloop_host rmcp_host)
runs=${RUNS:-3}
for crate in "${crates[@]}"; do # dependencies, once, outside the timings
  (cd "$work/$crate" && cargo build --quiet >/dev/null 2>&1 && cargo check --quiet >/dev/null 2>&1)
done
# Interleaved: each run times every crate in turn, so a machine that slows down or
# speeds up during the script weighs on all three alike. The clean build comes first;
# an untimed `cargo check` then restores what `cargo clean -p` removed, so that the
# timed check and build are incremental.
load="$(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$runs"); do
  for crate in "${crates[@]}"; do
    dir=$work/$crate
    (cd "$dir" && cargo clean --quiet -p "$crate")
    echo "$crate clean $(seconds "$dir" cargo build --quiet)"
    (cd "$dir" && cargo check --quiet)
    touch "$dir/src/lib.rs"
    echo "$crate check $(seconds "$dir" cargo check --quiet)"
    touch "$dir/src/lib.rs"
    echo "$crate build $(seconds "$dir" cargo build --quiet)"
  done
done > "$work/times.txt"

time_of() { grep "^$1 $2 " "$work/times.txt" | cut -d' ' -f3 | median "$runs"; }
echo "load average before the runs: $load ($runs interleaved runs, median of each)"
printf '%-28s %10s %10s %12s\n' "host crate ($tools tools)" "check (s)" "build (s)" "clean (s)"
for crate in "${crates[@]}"; do
  printf '%-28s %10.2f %10.2f %12.2f\n' "$crate" "$(time_of "$crate" check)" \
    "$(time_of "$crate" build)" "$(time_of "$crate" clean)"
done
ratio() { python3 -c "print(f'{$(time_of "$1" "$3") / $(time_of "$2" "$3"):.2f}')"; }
for kind in check build clean; do
  echo "$kind: cairnloop / rmcp = $(ratio cairnloop_host rmcp_host $kind)x, cairnloop / floor = $(ratio cairnloop_host plain_host $kind)x"
done
