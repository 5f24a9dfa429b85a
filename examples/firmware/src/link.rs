//! The host link: bytes arrive one at a time (as over a serial line) into a fixed buffer
//! and are handed on a line at a time. A line longer than the buffer is kept as far as it
//! fits and flagged, so the device refuses it whole instead of reading half a call.

use core::fmt;

use cairnloop::device::MAX_CALL_BYTES;

/// Room for `call`, an agent's id and the longest call the device reads.
const BUFFER: usize = 32 + MAX_CALL_BYTES;

pub struct LineBuffer {
    bytes: [u8; BUFFER],
    len: usize,
    /// How many bytes the line really had (more than `len` when it overflowed).
    seen: usize,
}

impl LineBuffer {
    pub const fn new() -> Self {
        Self {
            bytes: [0; BUFFER],
            len: 0,
            seen: 0,
        }
    }

    /// Takes one byte; at a newline, the line (without it) and its true length.
    pub fn push(&mut self, byte: u8) -> Option<(&[u8], usize)> {
        if byte == b'\n' {
            let (len, seen) = (self.len, self.seen);
            self.len = 0;
            self.seen = 0;
            return Some((self.bytes.get(..len).unwrap_or(&[]), seen));
        }
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
        self.seen += 1;
        None
    }
}

/// A line as the transcript shows it: non-UTF-8 bytes as `\xNN`, long lines shortened
/// with their length.
pub struct Shown<'a> {
    pub line: &'a [u8],
    pub seen: usize,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 96;
        let cut = self.line.len().min(SHOWN);
        for chunk in self.line.get(..cut).unwrap_or(&[]).utf8_chunks() {
            f.write_str(chunk.valid())?;
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02x}")?;
            }
        }
        if self.seen > cut {
            write!(f, "… ({} bytes)", self.seen)?;
        }
        Ok(())
    }
}

/// The words of an operator's or the clock's line.
#[cfg(not(feature = "direct"))]
pub struct Words<'a>(core::str::SplitAsciiWhitespace<'a>);

#[cfg(not(feature = "direct"))]
impl<'a> Words<'a> {
    pub fn of(line: &'a str) -> Self {
        Self(line.split_ascii_whitespace())
    }

    pub fn word(&mut self) -> Option<&'a str> {
        self.0.next()
    }

    pub fn number(&mut self) -> Option<u64> {
        self.word()?.parse().ok()
    }

    pub fn hex(&mut self) -> Option<u32> {
        u32::from_str_radix(self.word()?, 16).ok()
    }
}
