//! The compile-time rules, one failing case each with its `.stderr` checked in, and the
//! valid declarations that must keep compiling. The pass cases make trybuild run
//! `cargo build`, so errors found after monomorphization are checked too.

use cairnloop::SpecError;

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("pass/*.rs");
    cases.compile_fail("fail/*.rs");
}

/// The table of rules drives the cases: every rule's message is the compile error of
/// at least one case, except a registry of more than 65,536 tools, which no case could
/// build in reasonable time (its run-time twin is tested in the crate).
#[test]
fn every_rule_has_a_failing_case() {
    let expected: Vec<String> = std::fs::read_dir("fail")
        .expect("the cases")
        .map(|entry| entry.expect("a case").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "stderr"))
        .map(|path| std::fs::read_to_string(path).expect("a .stderr file"))
        .collect();
    for rule in SpecError::ALL {
        if rule == SpecError::TooManyTools {
            continue;
        }
        let message = format!("evaluation panicked: {}", rule.message());
        assert!(
            expected.iter().any(|stderr| stderr.contains(&message)),
            "no case fails with rule {} ({rule:?})",
            rule.rule()
        );
    }
}
