//! The layers of `src/`: each module (a folder) may reach only the layers below it, by
//! `use` and by inline paths alike. The check runs over the real tree, and over planted
//! violations that it must catch, so a check that passes everything would fail here.

use std::path::Path;

/// The layers, lowest first.
const LAYERS: [&str; 12] = [
    "declare",
    "gate",
    "device",
    "json",
    "declared",
    "approvals",
    "stores",
    "notifiers",
    "rig",
    "mcp",
    "remote",
    "console",
];

/// Every `crate::` reference in `source` that the layer `layer` may not make: one that
/// reaches a layer above it, or one that goes through the crate root's re-exports (which
/// could hide an upward step). `super::super` is refused for the same reason.
fn violations(layer: &str, source: &str) -> Vec<String> {
    let rank = LAYERS.iter().position(|l| *l == layer).expect("a layer");
    let mut found = Vec::new();
    for (number, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if code.contains("super::super") {
            found.push(format!(
                "line {}: `super::super` (use a `crate::` path)",
                number + 1
            ));
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = &rest[..at];
            rest = &rest[at + "crate::".len()..];
            // `$crate::` and identifiers ending in `crate` are not this crate's root.
            if before.ends_with('$') || before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            for target in first_segments(rest) {
                match LAYERS.iter().position(|l| *l == target) {
                    Some(other) if other <= rank => {}
                    Some(_) => found.push(format!("line {}: reaches up to `{target}`", number + 1)),
                    None => found.push(format!(
                        "line {}: `crate::{target}` goes around the layers (name its layer)",
                        number + 1
                    )),
                }
            }
        }
    }
    found
}

/// The first path segment of each path that starts at `rest`: `gate::X` → `gate`;
/// `{declare::A, gate::{B, C}}` → `declare`, `gate`.
fn first_segments(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let (mut depth, mut start, mut segments) = (0usize, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                segments.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                segments.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    segments.retain(|s| !s.is_empty());
    segments
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_layer_reaches_only_below_itself() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (mut checked, mut all) = (0, Vec::new());
    for layer in LAYERS {
        let mut files = Vec::new();
        rust_files(&src.join(layer), &mut files);
        assert!(!files.is_empty(), "src/{layer} is a folder with modules");
        for file in files {
            let source = std::fs::read_to_string(&file).expect("a source file");
            for violation in violations(layer, &source) {
                all.push(format!("{}: {violation}", file.display()));
            }
            checked += 1;
        }
    }
    assert!(all.is_empty(), "{all:#?}");
    // Nothing but the crate root lives outside a layer.
    let loose: Vec<_> = std::fs::read_dir(&src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file() && path.file_name().is_some_and(|name| name != "lib.rs"))
        .collect();
    assert!(loose.is_empty(), "files outside a layer: {loose:?}");
    assert!(checked > 20);
}

#[test]
fn the_check_catches_a_planted_upward_use() {
    let planted = "use crate::declare::Actor;\nuse crate::approvals::Governor;\n";
    assert_eq!(
        violations("gate", planted),
        ["line 2: reaches up to `approvals`"]
    );
    assert!(violations("approvals", planted).is_empty());
}

#[test]
fn the_check_catches_a_planted_upward_inline_path() {
    let planted = "fn f() {\n    let key = crate::json::canonical_json(&value);\n}\n";
    assert_eq!(
        violations("declare", planted),
        ["line 2: reaches up to `json`"]
    );
    assert!(violations("json", planted).is_empty());
}

#[test]
fn the_check_catches_a_planted_upward_step_in_a_group() {
    let planted = "use crate::{declare::Actor, gate::{Blocked, Verdict}, mcp::McpServer};";
    assert_eq!(violations("json", planted), ["line 1: reaches up to `mcp`"]);
    assert!(violations("mcp", planted).is_empty());
}

#[test]
fn the_check_refuses_paths_around_the_layers_and_ignores_comments() {
    assert_eq!(
        violations("gate", "use crate::Governor;"),
        ["line 1: `crate::Governor` goes around the layers (name its layer)"]
    );
    assert_eq!(
        violations("gate", "let x = super::super::mcp::thing();").len(),
        1
    );
    assert!(violations("gate", "/// see [`Governor`](crate::approvals::Governor)").is_empty());
    assert!(violations("gate", "let a = 1; // crate::mcp is above").is_empty());
}

/// The names the crate root re-exports, counted from `src/lib.rs`.
fn root_reexports(lib: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut statement = String::new();
    for line in lib.lines() {
        let code = line.split("//").next().unwrap_or("").trim();
        if statement.is_empty() && !code.starts_with("pub use ") {
            continue;
        }
        statement.push_str(code);
        statement.push(' ');
        if code.ends_with(';') {
            let body = statement
                .trim_start_matches("pub use ")
                .trim()
                .trim_end_matches(';');
            let list = match body.split_once('{') {
                Some((_, rest)) => rest.trim_end_matches('}').to_owned(),
                None => body.rsplit("::").next().unwrap_or(body).to_owned(),
            };
            names.extend(
                list.split(',')
                    .map(|name| name.trim().rsplit("::").next().unwrap_or("").to_owned())
                    .filter(|name| !name.is_empty()),
            );
            statement.clear();
        }
    }
    names
}

#[test]
fn the_crate_root_is_small_and_cites_nothing_outside_the_repository() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let names = root_reexports(&lib);
    assert!(names.contains(&"Governor".to_owned()), "{names:?}");
    assert!(
        names.len() <= 30,
        "{} names at the root: {names:?}",
        names.len()
    );
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        assert!(
            !source.contains("DESIGN.md"),
            "{} cites DESIGN.md",
            file.display()
        );
    }
}

#[test]
fn the_count_of_root_names_reads_grouped_and_single_uses() {
    let lib = "pub use a::{B, C,\n    D};\npub use e::F;\n// pub use g::H;\nuse i::J;\n";
    assert_eq!(root_reexports(lib), ["B", "C", "D", "F"]);
}
