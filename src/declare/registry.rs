use core::fmt;

use super::rules::Violation;
use super::text;
use crate::declare::{SpecError, ToolEntry};

/// Registries this small are searched name by name: cheaper than one hash.
const LINEAR_SEARCH_MAX: usize = 4;

/// The tools an agent may call, fixed at compile time.
///
/// Build it in a `static` item: then `cargo check` evaluates every tool's
/// `SPEC` and `SCOPES`, and rejects two tools whose names are equal or equal ignoring ASCII
/// case (rule 7). Names from a model resolve by exact byte equality only: no trimming, no
/// case folding, no Unicode normalisation.
///
/// ```
/// use cairnloop::{Actor, InputErrors, Invocation, PolicyDenial, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
///
/// struct LookupOrder;
/// impl Tool for LookupOrder {
///     const SPEC: ToolSpec = ToolSpec::new("lookup_order", "Look up order", "Finds an order.", RiskTier::ReadOnly);
///     const SCOPES: &'static [Scope] = &[Scope::new("orders:read")];
///     type Input = u32;
///     type Output = &'static str;
///     type Error = ();
///     type Context = ();
///     fn validate(_: &u32) -> Result<(), InputErrors> { Ok(()) }
///     fn authorize(_: &Actor<'_>, _: &()) -> Result<(), PolicyDenial> { Ok(()) }
///     async fn run(_: Invocation<'_, Self>) -> Result<&'static str, ()> { Ok("shipped") }
/// }
///
/// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<LookupOrder>()]);
///
/// assert!(TOOLS.get("lookup_order").is_some());
/// assert!(TOOLS.get("Lookup_Order").is_none());
/// assert!(TOOLS.get("lookup_order ").is_none());
/// assert_eq!(TOOLS.tools().len(), 1);
/// ```
pub struct Registry<C: ?Sized + 'static> {
    tools: &'static [ToolEntry<C>],
    /// Name → position, built on the first lookup (with `std`), so that resolving a name
    /// costs the same among 10 or 10,000 tools.
    #[cfg(feature = "std")]
    index: std::sync::OnceLock<std::collections::HashMap<&'static str, usize>>,
    /// What the layers above derive from the whole registry once and share (the MCP
    /// projection with its JSON Schemas): one value per type, made on first use.
    #[cfg(feature = "std")]
    derived: std::sync::Mutex<(
        u64,
        std::vec::Vec<std::sync::Arc<dyn core::any::Any + Send + Sync>>,
    )>,
}

/// Most tools one registry holds. The compile-time check for duplicate names sorts the
/// names' hashes in a scratch array of this size, so it stays fast for large registries.
pub const MAX_TOOLS: usize = 1 << 16;

/// Rule 7 for a whole registry.
const fn check_registry<C: ?Sized>(tools: &[ToolEntry<C>]) -> Result<(), Violation<'static>> {
    if tools.len() > MAX_TOOLS {
        return Err(Violation::new(
            SpecError::TooManyTools,
            tools[MAX_TOOLS].spec().name(),
        ));
    }
    if let Some((a, b)) = duplicate_names(tools) {
        return Err(Violation::pair(SpecError::DuplicateToolName, a, b));
    }
    Ok(())
}

/// FNV-1a over the ASCII-lowercased name: equal for names equal ignoring ASCII case.
const fn folded_hash(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i].to_ascii_lowercase() as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// Rule 7 in O(n log n): sort (hash, position) keys, then compare names only where the
/// hashes agree.
/// The first two names that are equal ignoring ASCII case, in registration order.
const fn duplicate_names<C: ?Sized>(
    tools: &[ToolEntry<C>],
) -> Option<(&'static str, &'static str)> {
    let n = tools.len();
    if n < 2 {
        return None;
    }
    // The low 16 bits carry the position (n <= MAX_TOOLS), the rest the hash.
    let mut keys = [0u64; MAX_TOOLS];
    let mut i = 0;
    while i < n {
        keys[i] = (folded_hash(tools[i].spec().name()) & !0xffff) | i as u64;
        i += 1;
    }
    heapsort(&mut keys, n);
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && keys[j] >> 16 == keys[i] >> 16 {
            let (a, b) = ((keys[i] & 0xffff) as usize, (keys[j] & 0xffff) as usize);
            let (first, second) = if a < b { (a, b) } else { (b, a) };
            let (first, second) = (tools[first].spec().name(), tools[second].spec().name());
            if text::eq_ignore_ascii_case(first, second) {
                return Some((first, second));
            }
            j += 1;
        }
        i += 1;
    }
    None
}

/// Sorts `keys[..n]` ascending, in place, in a `const` context.
const fn heapsort(keys: &mut [u64; MAX_TOOLS], n: usize) {
    let mut start = n / 2;
    while start > 0 {
        start -= 1;
        sift_down(keys, start, n);
    }
    let mut end = n;
    while end > 1 {
        end -= 1;
        let top = keys[0];
        keys[0] = keys[end];
        keys[end] = top;
        sift_down(keys, 0, end);
    }
}

const fn sift_down(keys: &mut [u64; MAX_TOOLS], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && keys[child] < keys[child + 1] {
            child += 1;
        }
        if keys[root] >= keys[child] {
            return;
        }
        let swap = keys[root];
        keys[root] = keys[child];
        keys[child] = swap;
        root = child;
    }
}

impl<C: ?Sized + 'static> Registry<C> {
    /// A registry of `tools`. In a `static` item, two names that are equal or equal
    /// ignoring ASCII case fail compilation (rule 7), as do more than [`MAX_TOOLS`] tools.
    ///
    /// ```compile_fail
    /// # use cairnloop::{InputErrors, Invocation, Registry, RiskTier, Scope, Tool, ToolEntry, ToolSpec};
    /// struct A;
    /// impl Tool for A {
    ///     const SPEC: ToolSpec = ToolSpec::new("refund", "Refund", "Refunds.", RiskTier::HighWrite);
    /// #   const SCOPES: &'static [Scope] = &[];
    /// #   type Input = (); type Output = (); type Error = (); type Context = ();
    /// #   fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #   async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    /// struct B;
    /// impl Tool for B {
    ///     const SPEC: ToolSpec = ToolSpec::new("Refund", "Refund", "Refunds.", RiskTier::HighWrite);
    /// #   const SCOPES: &'static [Scope] = &[];
    /// #   type Input = (); type Output = (); type Error = (); type Context = ();
    /// #   fn validate(_: &()) -> Result<(), InputErrors> { Ok(()) }
    /// #   async fn run(_: Invocation<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// }
    /// static TOOLS: Registry<()> = Registry::new(&[ToolEntry::of::<A>(), ToolEntry::of::<B>()]);
    /// ```
    #[track_caller]
    #[must_use]
    pub const fn new(tools: &'static [ToolEntry<C>]) -> Self {
        // Checked apart from construction: a `Result<Registry, _>` cannot be dropped in a
        // `const fn` (the registry owns a lazily built index).
        if let Err(violation) = check_registry(tools) {
            super::rules::fail(violation);
        }
        Self::unchecked(tools)
    }

    const fn unchecked(tools: &'static [ToolEntry<C>]) -> Self {
        Self {
            tools,
            #[cfg(feature = "std")]
            index: std::sync::OnceLock::new(),
            #[cfg(feature = "std")]
            derived: std::sync::Mutex::new((0, std::vec::Vec::new())),
        }
    }

    /// [`Registry::new`], returning the broken rule instead of failing.
    ///
    /// ```
    /// use cairnloop::{Registry, SpecError};
    ///
    /// let empty: Result<Registry<()>, SpecError> = Registry::try_new(&[]);
    /// assert!(empty.is_ok());
    /// ```
    pub const fn try_new(tools: &'static [ToolEntry<C>]) -> Result<Self, SpecError> {
        match check_registry(tools) {
            Ok(()) => Ok(Self::unchecked(tools)),
            Err(violation) => Err(violation.error),
        }
    }

    /// The tool a model named, by exact byte equality, or `None`.
    ///
    /// With `std` the first lookup builds a hash index, and every lookup after costs the
    /// same whatever the number of tools; without `std` it is a scan. An empty name or one
    /// longer than 64 bytes is refused before any work.
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert!(EMPTY.get("anything").is_none());
    /// ```
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&'static ToolEntry<C>> {
        // No registered name is empty or longer than 64 bytes: refuse those before any
        // hashing, so a megabyte of name costs nothing.
        if name.is_empty() || name.len() > text::MAX_NAME_LEN {
            return None;
        }
        let tools: &'static [ToolEntry<C>] = self.tools;
        // A few names are found faster by comparing them than by hashing one.
        if tools.len() <= LINEAR_SEARCH_MAX {
            return tools
                .iter()
                .find(|entry| entry.spec().name().as_bytes() == name.as_bytes());
        }
        #[cfg(feature = "std")]
        {
            let index = self.index.get_or_init(|| {
                tools
                    .iter()
                    .enumerate()
                    .map(|(position, entry)| (entry.spec().name(), position))
                    .collect()
            });
            index.get(name).map(|&position| &tools[position])
        }
        #[cfg(not(feature = "std"))]
        tools
            .iter()
            .find(|entry| entry.spec().name().as_bytes() == name.as_bytes())
    }

    /// Every tool, in registration order, whoever asks.
    ///
    /// ```
    /// # use cairnloop::Registry;
    /// static EMPTY: Registry<()> = Registry::new(&[]);
    /// assert_eq!(EMPTY.tools().len(), 0);
    /// ```
    #[must_use]
    pub const fn tools(&self) -> &'static [ToolEntry<C>] {
        self.tools
    }

    /// The value of type `T` derived from this registry, made by `make` on first use and
    /// shared after: a registry's tools never change, so neither does what is derived
    /// from them alone, until a declared tool's offer changes (a new schema, a
    /// withdrawal): then every value is made again. `make` runs under the cache's lock,
    /// so it must not ask for another derived value.
    #[cfg(feature = "std")]
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn derived<T: core::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce(&Self) -> T,
    ) -> std::sync::Arc<T> {
        use std::sync::Arc;
        let found = |kept: &[Arc<dyn core::any::Any + Send + Sync>]| {
            kept.iter()
                .find_map(|value| Arc::clone(value).downcast::<T>().ok())
        };
        // A poisoned lock only means another thread panicked while making a value: what
        // is kept is whole (values are pushed complete), so it is used as it is.
        let mut guard = self
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (made_at, kept) = &mut *guard;
        let now = crate::declare::offers_changed();
        if *made_at != now {
            *made_at = now;
            kept.clear();
        }
        if let Some(value) = found(kept) {
            return value;
        }
        let value = Arc::new(make(self));
        kept.push(Arc::clone(&value) as Arc<dyn core::any::Any + Send + Sync>);
        value
    }
}

impl<C: ?Sized + 'static> fmt::Debug for Registry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|entry| entry.spec().name()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declare::{InputErrors, Invocation, RiskTier, Scope, Tool, ToolSpec};

    /// A read-only tool named by `NAMES[N]`.
    struct Named<const N: usize>;

    /// Six short names, and one of the longest length a name may have.
    const NAMES: [&str; 7] = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "a_tool_name_of_exactly_sixty_four_characters_which_is_the_limit_",
    ];

    impl<const N: usize> Tool for Named<N> {
        const SPEC: ToolSpec =
            ToolSpec::new(NAMES[N], "Named", "A named tool.", RiskTier::ReadOnly);
        const SCOPES: &'static [Scope] = &[];
        type Input = ();
        type Output = ();
        type Error = ();
        type Context = ();
        fn validate(_: &()) -> Result<(), InputErrors> {
            Ok(())
        }
        async fn run(_: Invocation<'_, Self>) -> Result<(), ()> {
            Ok(())
        }
    }

    /// More tools than are searched name by name: with `std` a hash map, without it a
    /// scan, each reached only past that size.
    static SIX: Registry<()> = Registry::new(&[
        ToolEntry::of::<Named<0>>(),
        ToolEntry::of::<Named<1>>(),
        ToolEntry::of::<Named<2>>(),
        ToolEntry::of::<Named<3>>(),
        ToolEntry::of::<Named<4>>(),
        ToolEntry::of::<Named<5>>(),
    ]);

    #[test]
    fn a_registry_past_the_name_by_name_size_finds_each_name_and_no_other() {
        assert!(SIX.tools().len() > LINEAR_SEARCH_MAX);
        for name in &NAMES[..6] {
            assert_eq!(SIX.get(name).map(|entry| entry.spec().name()), Some(*name));
        }
        for stranger in ["golf", "alphA", "alph", "alpha ", "delta\0"] {
            assert!(SIX.get(stranger).is_none(), "{stranger}");
        }
    }

    #[test]
    fn a_name_of_the_longest_length_resolves() {
        static TWO: Registry<()> =
            Registry::new(&[ToolEntry::of::<Named<0>>(), ToolEntry::of::<Named<6>>()]);
        let longest = NAMES[6];
        assert_eq!(longest.len(), 64);
        assert_eq!(TWO.get(longest).map(|e| e.spec().name()), Some(longest));
        assert_eq!(TWO.get("alpha").map(|e| e.spec().name()), Some("alpha"));
        assert!(TWO.get(&std::format!("{longest}x")).is_none());
        assert!(TWO.get("").is_none());
    }

    #[test]
    fn heapsort_sorts_any_prefix() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for n in [0, 1, 2, 3, 7, 64, 1000, 4097] {
            let mut keys = [0u64; MAX_TOOLS];
            for key in keys.iter_mut().take(n) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *key = state % 50; // many equal keys
            }
            let mut expected = keys[..n].to_vec();
            expected.sort_unstable();
            heapsort(&mut keys, n);
            assert_eq!(&keys[..n], &expected[..], "n = {n}");
        }
    }

    #[test]
    fn heapsort_sorts_every_permutation_of_small_inputs() {
        fn permutations(items: &mut [u64], k: usize, out: &mut std::vec::Vec<std::vec::Vec<u64>>) {
            if k == items.len() {
                out.push(items.to_vec());
                return;
            }
            for i in k..items.len() {
                items.swap(k, i);
                permutations(items, k + 1, out);
                items.swap(k, i);
            }
        }
        for n in 2..=6 {
            let mut items: std::vec::Vec<u64> = (1..=n as u64).collect();
            let mut all = std::vec::Vec::new();
            permutations(&mut items, 0, &mut all);
            for permutation in all {
                let mut keys = [0u64; MAX_TOOLS];
                keys[..n].copy_from_slice(&permutation);
                heapsort(&mut keys, n);
                assert_eq!(&keys[..n], &items[..], "from {permutation:?}");
            }
        }
    }

    #[test]
    fn folded_hashes_ignore_ascii_case_only() {
        assert_eq!(folded_hash("Refund_Order"), folded_hash("refund_order"));
        assert_ne!(folded_hash("refund_order"), folded_hash("refund_orders"));
        assert_ne!(folded_hash("a"), folded_hash("b"));
    }

    #[test]
    fn folded_hashes_spread_similar_names() {
        let mut hashes: std::vec::Vec<u64> = (0..1000)
            .map(|i| folded_hash(&std::format!("tool_{i:04}")) >> 16)
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), 1000);
    }
}
