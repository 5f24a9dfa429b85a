//! `cairnloop-gateway check CONFIG`: reads a configuration and prints every problem, or
//! what it declares.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use cairnloop_gateway::config::Config;

const USAGE: &str = "usage: cairnloop-gateway check CONFIG

  check CONFIG   read CONFIG (TOML), print every problem with its line and column, and
                 exit 1 if there is one; otherwise list what it declares";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cairnloop-gateway: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let mut command = None;
    let mut path = None;
    while let Some(arg) = parser.next().map_err(|error| error.to_string())? {
        match arg {
            Short('h') | Long("help") => {
                println!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            Value(value) if command.is_none() => {
                command = Some(value.string().map_err(|error| error.to_string())?);
            }
            Value(value) if path.is_none() => path = Some(value),
            other => return Err(other.unexpected().to_string()),
        }
    }
    match command.as_deref() {
        Some("check") => {}
        Some(other) => return Err(format!("unknown command `{other}`")),
        None => return Err("a command is needed".into()),
    }
    let path = path.ok_or("`check` needs the configuration's path")?;
    let source = std::fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.to_string_lossy()))?;
    let shown = path.to_string_lossy();
    match Config::parse(&source) {
        Ok(config) => {
            println!("{shown}: ok");
            for upstream in &config.upstreams {
                let hidden = match upstream.default_tier {
                    Some(tier) => format!("tools not named: {}", tier.as_str()),
                    None => "tools not named: hidden and blocked".into(),
                };
                println!("upstream {} ({hidden})", upstream.id);
            }
            for tool in &config.tools {
                println!(
                    "  {} <- {}/{}: {}, {}",
                    tool.listed,
                    tool.upstream,
                    tool.tool,
                    tool.tier.as_str(),
                    tool.mode.as_str()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(problems) => {
            for problem in problems.iter() {
                eprintln!("{shown}:{problem}");
            }
            eprintln!(
                "{} problem(s); nothing is served from this file",
                problems.len()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
