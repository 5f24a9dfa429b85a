// Rule 6: a wildcard scope.
use cairnloop::Scope;

const SCOPE: Scope = Scope::new("orders:*");

fn main() {
    let _ = SCOPE;
}
