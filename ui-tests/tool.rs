// What the cases share: a tool on a `u32` that does nothing, declared with the `SPEC` and
// `SCOPES` given and no policy of its own, so that each case shows only the declaration it
// is about. The compiler points at the case's own lines, where the `SPEC` is written.
macro_rules! tool {
    ($ty:ident, $spec:expr, $scopes:expr) => {
        struct $ty;

        impl cairnloop::Tool for $ty {
            const SPEC: cairnloop::ToolSpec = $spec;
            const SCOPES: &'static [cairnloop::Scope] = $scopes;
            type Input = u32;
            type Output = ();
            type Error = ();
            type Context = ();

            fn validate(_: &u32) -> Result<(), cairnloop::InputErrors> {
                Ok(())
            }

            async fn run(_: cairnloop::Invocation<'_, Self>) -> Result<(), ()> {
                Ok(())
            }
        }
    };
}
