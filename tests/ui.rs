//! The compile-time rules of DESIGN.md §2, one failing case each, and the valid
//! declarations that must keep compiling. The pass cases make trybuild run `cargo build`,
//! so errors found after monomorphization are checked too.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui-tests/pass/*.rs");
    cases.compile_fail("ui-tests/fail/*.rs");
}
