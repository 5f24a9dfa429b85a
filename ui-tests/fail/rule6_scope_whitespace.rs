// Rule 6: whitespace in a scope.
use cairnloop::Scope;

const SCOPE: Scope = Scope::new("orders: read");

fn main() {
    let _ = SCOPE;
}
