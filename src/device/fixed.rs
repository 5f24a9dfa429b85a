use core::fmt;

/// Text in a fixed buffer of `N` bytes: what a device keeps of an id, an output or a
/// call's canonical arguments, with no heap. A write that does not fit fails and leaves
/// what was written before it.
///
/// ```
/// use core::fmt::Write;
/// use cairnloop::device::FixedText;
///
/// let mut text = FixedText::<8>::new();
/// write!(text, "t={}", 42)?;
/// assert_eq!(text.as_str(), "t=42");
/// assert!(text.write_str("too long").is_err());
/// assert_eq!(text.as_str(), "t=42");
/// # Ok::<(), core::fmt::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FixedText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> FixedText<N> {
    /// Empty text.
    ///
    /// ```
    /// assert!(cairnloop::device::FixedText::<4>::new().as_str().is_empty());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }

    /// `text` copied in, or `None` when it is longer than `N` bytes.
    ///
    /// ```
    /// use cairnloop::device::FixedText;
    /// assert_eq!(FixedText::<4>::from_str("op-1").unwrap().as_str(), "op-1");
    /// assert!(FixedText::<3>::from_str("op-1").is_none());
    /// ```
    #[must_use]
    #[allow(
        clippy::should_implement_trait,
        reason = "it cannot fail with FromStr's error"
    )]
    pub fn from_str(text: &str) -> Option<Self> {
        let mut fixed = Self::new();
        fmt::Write::write_str(&mut fixed, text).ok()?;
        Some(fixed)
    }

    /// The text.
    ///
    /// ```
    /// assert_eq!(cairnloop::device::FixedText::<4>::from_str("ab").unwrap().as_str(), "ab");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        // Only whole `str`s are ever written in.
        core::str::from_utf8(self.bytes.get(..self.len).unwrap_or(&[])).unwrap_or("")
    }
}

impl<const N: usize> Default for FixedText<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for FixedText<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        self.bytes
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl<const N: usize> fmt::Display for FixedText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<const N: usize> fmt::Debug for FixedText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
