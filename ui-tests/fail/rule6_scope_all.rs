// Rule 6: `all` is a wildcard too.
use cairnloop::Scope;

const SCOPE: Scope = Scope::new("ALL");

fn main() {
    let _ = SCOPE;
}
