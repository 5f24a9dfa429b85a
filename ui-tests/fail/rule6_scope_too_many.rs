// Rule 6: a tool may require at most 64 scopes.
use cairnloop::{Registry, RiskTier, Scope, ToolEntry, ToolSpec};

#[macro_use]
#[path = "../tool.rs"]
mod tool;

tool!(
    Everything,
    ToolSpec::new("everything", "Everything", "Needs every scope.", RiskTier::ReadOnly),
    &SCOPES
);

const SCOPES: [Scope; 65] = [
    Scope::new("s:0"),
    Scope::new("s:1"),
    Scope::new("s:2"),
    Scope::new("s:3"),
    Scope::new("s:4"),
    Scope::new("s:5"),
    Scope::new("s:6"),
    Scope::new("s:7"),
    Scope::new("s:8"),
    Scope::new("s:9"),
    Scope::new("s:10"),
    Scope::new("s:11"),
    Scope::new("s:12"),
    Scope::new("s:13"),
    Scope::new("s:14"),
    Scope::new("s:15"),
    Scope::new("s:16"),
    Scope::new("s:17"),
    Scope::new("s:18"),
    Scope::new("s:19"),
    Scope::new("s:20"),
    Scope::new("s:21"),
    Scope::new("s:22"),
    Scope::new("s:23"),
    Scope::new("s:24"),
    Scope::new("s:25"),
    Scope::new("s:26"),
    Scope::new("s:27"),
    Scope::new("s:28"),
    Scope::new("s:29"),
    Scope::new("s:30"),
    Scope::new("s:31"),
    Scope::new("s:32"),
    Scope::new("s:33"),
    Scope::new("s:34"),
    Scope::new("s:35"),
    Scope::new("s:36"),
    Scope::new("s:37"),
    Scope::new("s:38"),
    Scope::new("s:39"),
    Scope::new("s:40"),
    Scope::new("s:41"),
    Scope::new("s:42"),
    Scope::new("s:43"),
    Scope::new("s:44"),
    Scope::new("s:45"),
    Scope::new("s:46"),
    Scope::new("s:47"),
    Scope::new("s:48"),
    Scope::new("s:49"),
    Scope::new("s:50"),
    Scope::new("s:51"),
    Scope::new("s:52"),
    Scope::new("s:53"),
    Scope::new("s:54"),
    Scope::new("s:55"),
    Scope::new("s:56"),
    Scope::new("s:57"),
    Scope::new("s:58"),
    Scope::new("s:59"),
    Scope::new("s:60"),
    Scope::new("s:61"),
    Scope::new("s:62"),
    Scope::new("s:63"),
    Scope::new("s:64"),
];

static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<Everything>()]);

fn main() {
    let _ = &TOOLS;
}
