/// Bounds on the JSON arguments of a call by name, checked before the work grows with the
/// input: the size before parsing, the depth and string lengths while parsing. A call past
/// any of them is blocked with a field error (`NeedsInput`), never parsed further.
///
/// | limit | default | code when exceeded |
/// |---|---|---|
/// | `max_bytes` | 64 KiB | `too_large` |
/// | `max_depth` | 32 nested arrays/objects | `too_deep` |
/// | `max_string_bytes` | 16 KiB per string or key | `string_too_long` |
///
/// Independently of these, every number must lie within ±(2^53 − 1) (code
/// `number_out_of_range`): RFC 8785 keeps numbers as IEEE 754 doubles, so a larger
/// integer could give two different inputs one idempotency key.
///
/// ```
/// use cairnloop::declare::InputLimits;
///
/// let limits = InputLimits::new().with_max_bytes(4096).with_max_depth(8);
/// assert_eq!(limits.max_bytes(), 4096);
/// assert_eq!(limits.max_depth(), 8);
/// assert_eq!(InputLimits::default().max_string_bytes(), 16 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct InputLimits {
    max_bytes: usize,
    max_depth: usize,
    max_string_bytes: usize,
}

/// serde_json refuses nesting past 128 on its own; our depth must stay below it so the
/// error is ours, with its code.
const PARSER_DEPTH_LIMIT: usize = 120;

impl InputLimits {
    /// The defaults: 64 KiB, depth 32, 16 KiB per string.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::new().max_bytes(), 64 * 1024);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            max_bytes: 64 * 1024,
            max_depth: 32,
            max_string_bytes: 16 * 1024,
        }
    }

    /// Sets the largest argument text, in bytes.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::new().with_max_bytes(10).max_bytes(), 10);
    /// ```
    #[must_use]
    pub const fn with_max_bytes(self, max_bytes: usize) -> Self {
        Self { max_bytes, ..self }
    }

    /// Sets the deepest nesting of arrays and objects (the arguments object is depth 1),
    /// at most 120.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::new().with_max_depth(1000).max_depth(), 120);
    /// ```
    #[must_use]
    pub const fn with_max_depth(self, max_depth: usize) -> Self {
        let max_depth = if max_depth > PARSER_DEPTH_LIMIT {
            PARSER_DEPTH_LIMIT
        } else {
            max_depth
        };
        Self { max_depth, ..self }
    }

    /// Sets the longest string or object key, in bytes.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::new().with_max_string_bytes(64).max_string_bytes(), 64);
    /// ```
    #[must_use]
    pub const fn with_max_string_bytes(self, max_string_bytes: usize) -> Self {
        Self {
            max_string_bytes,
            ..self
        }
    }

    /// The largest argument text, in bytes.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::default().max_bytes(), 65536);
    /// ```
    #[must_use]
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The deepest nesting of arrays and objects.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::default().max_depth(), 32);
    /// ```
    #[must_use]
    pub const fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The longest string or key, in bytes.
    ///
    /// ```
    /// assert_eq!(cairnloop::declare::InputLimits::default().max_string_bytes(), 16384);
    /// ```
    #[must_use]
    pub const fn max_string_bytes(&self) -> usize {
        self.max_string_bytes
    }
}

impl Default for InputLimits {
    fn default() -> Self {
        Self::new()
    }
}
