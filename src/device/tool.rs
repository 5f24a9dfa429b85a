use core::fmt::{self, Write as _};
use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use crate::declare::rules::{Violation, fail};
use crate::declare::{Actor, InputErrors, SpecError, Tool, ToolEntry, text};
use crate::device::fields::{Args, Field, MAX_FIELDS};
use crate::device::fixed::FixedText;
use crate::gate::{Blocked, Decision, ModePolicy, decide, execute};

/// Longest field name: `/name` must fit a field error's inline path.
pub const MAX_FIELD_NAME: usize = crate::declare::INLINE_TEXT - 1;

/// Bytes of a tool's output (or error) a device keeps for its reply; longer text ends
/// in `…`.
pub const OUTPUT_BYTES: usize = 48;

/// A [`Tool`] a device calls by name: its arguments are [`Field`]s, decoded without an
/// allocator, and its input is built from them.
///
/// ```
/// use cairnloop::device::{Args, DeviceTool, Field};
/// use cairnloop::{Actor, FieldError, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec};
///
/// struct ReadSensor;
/// impl Tool for ReadSensor {
///     const SPEC: ToolSpec = ToolSpec::new("read_sensor", "Read sensor", "Reads a sensor.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[];
///     type Input = u8; type Output = i32; type Error = &'static str; type Context = ();
///     fn validate(_: &u8) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<i32, &'static str> { Ok(215) }
/// }
/// impl DeviceTool for ReadSensor {
///     const FIELDS: &'static [Field] = &[Field::integer("sensor", 0, 3)];
///     fn input(args: &Args) -> Result<u8, InputErrors> {
///         args.integer(0)
///             .and_then(|n| u8::try_from(n).ok())
///             .ok_or_else(|| InputErrors::one(FieldError::new("/sensor", "required", "is required")))
///     }
/// }
/// ```
pub trait DeviceTool: Tool<Output: fmt::Display, Error: fmt::Display> {
    /// The fields of the arguments, listed in alphabetical order (the order of their
    /// canonical JSON), at most [`MAX_FIELDS`], each name `[A-Za-z0-9_-]` and at most
    /// [`MAX_FIELD_NAME`] bytes. Checked at compile time by [`DeviceEntry::of`].
    const FIELDS: &'static [Field];

    /// The tool's input from its decoded arguments (`args.integer(i)` is field `i` of
    /// [`DeviceTool::FIELDS`]). Every field is present and of its kind when this runs.
    fn input(args: &Args) -> Result<Self::Input, InputErrors>;
}

/// What one call through a device entry came to.
pub(crate) enum Handled {
    /// It ran: its output (or error) as text.
    Ran {
        ok: bool,
        text: FixedText<OUTPUT_BYTES>,
    },
    /// It needs approval and the lane table held it (the table's reply is kept there).
    Held,
    /// A gate blocked it.
    Blocked(Blocked),
}

/// What the lane table says of a call that needs approval: run it now (its lane was
/// approved and is now claimed), or hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    Run,
    Hold,
}

type Handler<C> =
    fn(&Args, &Actor<'_>, &C, &ModePolicy<C>, &mut dyn FnMut() -> Admission) -> Handled;

/// A tool in a [`DeviceRegistry`]: its entry as the gates read it, its fields, and the
/// one function that decodes, decides and runs it.
///
/// ```
/// # use cairnloop::device::{Args, DeviceEntry, DeviceTool, Field};
/// # use cairnloop::{Actor, FieldError, InputErrors, Invocation, PolicyDenial, RiskTier, Scope, Tool, ToolSpec};
/// # struct Ping;
/// # impl Tool for Ping {
/// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers.", RiskTier::ReadOnly);
/// #     const SCOPES: &'static [Scope] = &[];
/// #     type Input = (); type Output = &'static str; type Error = &'static str; type Context = ();
/// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
/// #     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, &'static str> { Ok("pong") }
/// # }
/// # impl DeviceTool for Ping {
/// #     const FIELDS: &'static [Field] = &[];
/// #     fn input(_: &Args) -> Result<(), InputErrors> { Ok(()) }
/// # }
/// const PING: DeviceEntry<()> = DeviceEntry::of::<Ping>();
/// assert_eq!(PING.entry().spec().name(), "ping");
/// ```
pub struct DeviceEntry<C: 'static> {
    entry: ToolEntry<C>,
    fields: &'static [Field],
    handle: Handler<C>,
}

impl<C: 'static> DeviceEntry<C> {
    /// The entry of `T`; its spec, scopes and fields are checked at compile time.
    ///
    /// ```compile_fail
    /// # use cairnloop::device::{Args, DeviceEntry, DeviceTool, Field};
    /// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolSpec};
    /// # struct Move;
    /// # impl Tool for Move {
    /// #     const SPEC: ToolSpec = ToolSpec::new("move", "Move", "Moves.", RiskTier::HighWrite);
    /// #     const SCOPES: &'static [Scope] = &[];
    /// #     type Input = (); type Output = u8; type Error = u8; type Context = ();
    /// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #     async fn run(_: Invocation<'_, Self>) -> Result<u8, u8> { Ok(0) }
    /// # }
    /// impl DeviceTool for Move {
    ///     // Not in alphabetical order: the canonical key would differ from a host's.
    ///     const FIELDS: &'static [Field] = &[Field::integer("speed", 0, 9), Field::integer("position", 0, 9)];
    ///     fn input(_: &Args) -> Result<(), InputErrors> { Ok(()) }
    /// }
    /// const MOVE: DeviceEntry<()> = DeviceEntry::of::<Move>();
    /// ```
    #[must_use]
    pub const fn of<T: DeviceTool<Context = C>>() -> Self {
        const { check_fields(T::FIELDS) };
        Self {
            entry: ToolEntry::of::<T>(),
            fields: T::FIELDS,
            handle: handle::<T>,
        }
    }

    /// The tool's entry, as the gates and a host registry read it.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::DeviceEntry<()>) -> &str {
    /// entry.entry().spec().name()
    /// # }
    /// ```
    #[must_use]
    pub const fn entry(&self) -> &ToolEntry<C> {
        &self.entry
    }

    /// The tool's argument fields.
    ///
    /// ```
    /// # fn f(entry: &cairnloop::device::DeviceEntry<()>) -> usize {
    /// entry.fields().len()
    /// # }
    /// ```
    #[must_use]
    pub const fn fields(&self) -> &'static [Field] {
        self.fields
    }

    pub(crate) fn handle(
        &self,
        args: &Args,
        actor: &Actor<'_>,
        context: &C,
        policy: &ModePolicy<C>,
        admit: &mut dyn FnMut() -> Admission,
    ) -> Handled {
        (self.handle)(args, actor, context, policy, admit)
    }
}

/// The field rules, at compile time: at most [`MAX_FIELDS`], names `[A-Za-z0-9_-]` of at
/// most [`MAX_FIELD_NAME`] bytes, strictly alphabetical (so no two are equal).
const fn check_fields(fields: &[Field]) {
    if fields.len() > MAX_FIELDS {
        panic!("a device tool declares at most 16 fields");
    }
    let mut i = 0;
    while i < fields.len() {
        let name = fields[i].name();
        if !text::is_tool_name(name) || name.len() > MAX_FIELD_NAME {
            panic!("a device field name is 1 to 14 bytes of [A-Za-z0-9_-]");
        }
        if i > 0 && !is_before(fields[i - 1].name(), name) {
            panic!(
                "device fields must be listed in alphabetical order, each name once (the order of their canonical JSON)"
            );
        }
        i += 1;
    }
}

/// Whether `a` sorts strictly before `b` by bytes (UTF-16 order for ASCII names).
const fn is_before(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// Gate 1's rest (the tool's input and `validate`) and gates 2–4, through the one typed
/// decision; a call that needs approval runs only if the lane table admits it.
fn handle<T: DeviceTool>(
    args: &Args,
    actor: &Actor<'_>,
    context: &T::Context,
    policy: &ModePolicy<T::Context>,
    admit: &mut dyn FnMut() -> Admission,
) -> Handled {
    let input = match T::input(args) {
        Ok(input) => input,
        Err(errors) => return Handled::Blocked(Blocked::NeedsInput { errors }),
    };
    let call = match decide::<T>(input, actor, context, policy) {
        Decision::Execute { call, .. } => call,
        Decision::AwaitApproval(pending) => {
            if admit() == Admission::Hold {
                return Handled::Held;
            }
            // The lane was approved and is now claimed: this is its one run.
            pending.into_approved_call()
        }
        Decision::Blocked(blocked) => return Handled::Blocked(blocked),
    };
    let mut text = FixedText::new();
    let ok = match block_on(execute(call)) {
        Ok(output) => {
            shown(&mut text, &output);
            true
        }
        Err(error) => {
            shown(&mut text, &error);
            false
        }
    };
    Handled::Ran { ok, text }
}

/// `value` as text, cut with `…` where it does not fit.
fn shown(text: &mut FixedText<OUTPUT_BYTES>, value: &dyn fmt::Display) {
    struct Cut<'t>(&'t mut FixedText<OUTPUT_BYTES>, bool);
    impl fmt::Write for Cut<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for c in s.chars() {
                // Room is kept for the `…` (3 bytes) until the text ends.
                if self.0.as_str().len() + c.len_utf8() + 3 > OUTPUT_BYTES {
                    self.1 = true;
                    return Err(fmt::Error);
                }
                let mut utf8 = [0; 4];
                self.0.write_str(c.encode_utf8(&mut utf8))?;
            }
            Ok(())
        }
    }
    let mut cut = Cut(text, false);
    let _ = write!(cut, "{value}");
    if cut.1 {
        let _ = text.write_str("…");
    }
}

/// Runs a tool's future to its end on the spot: device tools do their work when polled
/// (reading a register, setting a pin); one that waits is polled again until it is done.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
}

/// The tools of a device, looked up by name as a model sends it (exact bytes). Two names
/// equal ignoring ASCII case are a compile error, as in a host [`Registry`](crate::Registry).
///
/// ```
/// # use cairnloop::device::{Args, DeviceEntry, DeviceRegistry, DeviceTool, Field};
/// # use cairnloop::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolSpec};
/// # struct Ping;
/// # impl Tool for Ping {
/// #     const SPEC: ToolSpec = ToolSpec::new("ping", "Ping", "Answers.", RiskTier::ReadOnly);
/// #     const SCOPES: &'static [Scope] = &[];
/// #     type Input = (); type Output = &'static str; type Error = &'static str; type Context = ();
/// #     fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
/// #     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, &'static str> { Ok("pong") }
/// # }
/// # impl DeviceTool for Ping {
/// #     const FIELDS: &'static [Field] = &[];
/// #     fn input(_: &Args) -> Result<(), InputErrors> { Ok(()) }
/// # }
/// static TOOLS: DeviceRegistry<()> = DeviceRegistry::new(&[DeviceEntry::of::<Ping>()]);
/// assert!(TOOLS.get("ping").is_some());
/// assert!(TOOLS.get("Ping").is_none());
/// ```
pub struct DeviceRegistry<C: 'static> {
    tools: &'static [DeviceEntry<C>],
}

impl<C: 'static> DeviceRegistry<C> {
    /// A registry of `tools`; duplicate names fail the build.
    ///
    /// ```
    /// static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// assert_eq!(NONE.tools().len(), 0);
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn new(tools: &'static [DeviceEntry<C>]) -> Self {
        let mut i = 0;
        while i < tools.len() {
            let mut j = 0;
            while j < i {
                let (a, b) = (tools[j].entry.spec().name(), tools[i].entry.spec().name());
                if text::eq_ignore_ascii_case(a, b) {
                    fail(Violation::pair(SpecError::DuplicateToolName, b, a));
                }
                j += 1;
            }
            i += 1;
        }
        Self { tools }
    }

    /// The tool a model named, by exact bytes.
    ///
    /// ```
    /// static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// assert!(NONE.get("purge").is_none());
    /// ```
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&'static DeviceEntry<C>> {
        self.tools
            .iter()
            .find(|tool| tool.entry.spec().name().as_bytes() == name.as_bytes())
    }

    /// The position of the tool named `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.tools
            .iter()
            .position(|tool| tool.entry.spec().name().as_bytes() == name.as_bytes())
    }

    /// Every tool, in the order registered.
    ///
    /// ```
    /// static NONE: cairnloop::device::DeviceRegistry<()> = cairnloop::device::DeviceRegistry::new(&[]);
    /// assert!(NONE.tools().is_empty());
    /// ```
    #[must_use]
    pub const fn tools(&self) -> &'static [DeviceEntry<C>] {
        self.tools
    }
}
