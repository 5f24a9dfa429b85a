// Rule 6: an empty scope.
use cairnloop::Scope;

const SCOPE: Scope = Scope::new("");

fn main() {
    let _ = SCOPE;
}
