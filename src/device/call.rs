use crate::device::reader::{Kind, RawString, Reader, Syntax};
use crate::device::reply::Refusal;

/// Longest call text a device reads, in bytes.
pub const MAX_CALL_BYTES: usize = 512;

/// A call as a model sends it, `{"name": "…", "arguments": {…}}`, read strictly and
/// without an allocator: the text is UTF-8 and at most [`MAX_CALL_BYTES`], no member but
/// those two, none twice, the name a string; the arguments' syntax and depth are checked
/// here (before descending), their fields by the tool's [`Args`](crate::device::Args).
///
/// ```
/// use cairnloop::device::CallText;
///
/// let call = CallText::parse(br#"{"name":"read_sensor","arguments":{"sensor":2}}"#)?;
/// let mut name = [0; 64];
/// assert_eq!(call.name(&mut name), Some("read_sensor"));
/// assert_eq!(call.arguments(), br#"{"sensor":2}"#);
/// assert!(CallText::parse(br#"{"name":"read_sensor","extra":1}"#).is_err());
/// # Ok::<(), cairnloop::device::Refusal>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CallText<'a> {
    name: RawString<'a>,
    arguments: &'a [u8],
}

impl<'a> CallText<'a> {
    /// Reads `line`; what is not a call is refused with its reason.
    ///
    /// ```
    /// use cairnloop::device::{CallText, Refusal};
    /// assert_eq!(CallText::parse(b"\xff").unwrap_err(), Refusal::NotUtf8);
    /// ```
    pub fn parse(line: &'a [u8]) -> Result<Self, Refusal> {
        if line.len() > MAX_CALL_BYTES {
            return Err(Refusal::Oversized);
        }
        if core::str::from_utf8(line).is_err() {
            return Err(Refusal::NotUtf8);
        }
        envelope(line).map_err(|syntax| Refusal::Malformed {
            code: syntax.code,
            message: syntax.message,
        })
    }

    /// The tool's name, unescaped into `buffer`; `None` when it does not fit (no tool's
    /// name is longer than 64 bytes).
    ///
    /// ```
    /// # use cairnloop::device::CallText;
    /// let call = CallText::parse(br#"{"name":"p\u0075rge"}"#)?;
    /// assert_eq!(call.name(&mut [0; 64]), Some("purge"));
    /// # Ok::<(), cairnloop::device::Refusal>(())
    /// ```
    pub fn name<'b>(&self, buffer: &'b mut [u8]) -> Option<&'b str> {
        let len = self.name.decode_into(buffer)?;
        core::str::from_utf8(buffer.get(..len)?).ok()
    }

    /// The arguments' text (`{}` when the call has none).
    ///
    /// ```
    /// # use cairnloop::device::CallText;
    /// assert_eq!(CallText::parse(br#"{"name":"purge"}"#)?.arguments(), b"{}");
    /// # Ok::<(), cairnloop::device::Refusal>(())
    /// ```
    #[must_use]
    pub const fn arguments(&self) -> &'a [u8] {
        self.arguments
    }
}

/// `{"name": "…", "arguments": {…}}`, strictly: no other member, none twice, the name a
/// string; the arguments' syntax and depth are checked here, their fields at gate 1.
fn envelope(line: &[u8]) -> Result<CallText<'_>, Syntax> {
    const NOT_A_CALL: Syntax = Syntax {
        code: "invalid_call",
        message: "a call is {\"name\": \"…\", \"arguments\": {…}} and nothing else",
    };
    let limits = crate::declare::InputLimits::new();
    let mut reader = Reader::new(line, limits.max_depth().saturating_add(1));
    if reader.next_kind()? != Kind::Object {
        return Err(NOT_A_CALL);
    }
    reader.open_object(1)?;
    let (mut name, mut arguments) = (None, None);
    let mut first = true;
    while let Some(key) = reader.next_key(first)? {
        first = false;
        let mut member = [0_u8; 9];
        let member = key
            .decode_into(&mut member)
            .and_then(|len| member.get(..len))
            .unwrap_or(b"?");
        match member {
            b"name" if name.is_none() => {
                if reader.next_kind()? != Kind::String {
                    return Err(NOT_A_CALL);
                }
                name = Some(reader.string()?);
            }
            b"arguments" if arguments.is_none() => {
                let start = reader.position();
                reader.skip_value(2)?;
                arguments = line.get(start..reader.position());
            }
            b"name" | b"arguments" => {
                return Err(Syntax {
                    code: "duplicate_key",
                    message: "a member of the call appears more than once",
                });
            }
            _ => return Err(NOT_A_CALL),
        }
    }
    reader.end()?;
    Ok(CallText {
        name: name.ok_or(NOT_A_CALL)?,
        arguments: arguments.unwrap_or(b"{}"),
    })
}
