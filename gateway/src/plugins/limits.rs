//! What bounds one plugin instance besides time: the hook's [`Limits`] from its config,
//! the memory cap a store's limiter enforces ([`MemoryCap`]), and the cap on the WASI
//! resources an instance may hold.
//!
//! Deadlines are `epoch`'s; the engine-wide caps (slots, largest memory) are `engine`'s.

use std::time::Duration;

use crate::config::plugins::Isolation;

/// The most WASI resources (streams, pollables, errors, descriptors) one instance may hold
/// at once. The reference plugins hold a handful; a plugin that leaks handles across calls
/// reaches this and its calls fail, which retires the instance.
pub const MAX_RESOURCES: usize = 1024;

/// The most elements a plugin's tables may grow to.
const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Limits one plugin instance runs under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub memory: usize,
    pub deadline: Duration,
    /// How long a new instance's start-up may run (outside any call's deadline).
    pub startup: Duration,
    pub isolation: Isolation,
    /// Calls a pooled instance serves before it is retired.
    pub max_calls: u64,
    /// Instances alive at once, idle and busy: this hook's share of the pool's slots.
    pub instances: u64,
}

/// A store's limiter: refuses to grow a memory past the plugin's cap, and remembers that
/// it did, so the failed call is classified as the memory cap's. It also counts the
/// linear memory the instance holds (what `leafgate check` reports per warm instance).
#[derive(Debug)]
pub(crate) struct MemoryCap {
    limit: usize,
    /// Set when the limiter refused to grow memory: the failure is the memory cap's.
    hit: bool,
    /// Bytes of linear memory, all the instance's memories together.
    held: usize,
}

impl MemoryCap {
    pub fn new(limit: usize) -> Self {
        MemoryCap {
            limit,
            hit: false,
            held: 0,
        }
    }

    /// True once a grow was refused in this store.
    pub fn hit(&self) -> bool {
        self.hit
    }

    /// The linear memory the store's instance holds, in bytes.
    pub fn held(&self) -> usize {
        self.held
    }
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            // An error, not `Ok(false)`: a refused grow makes Rust guests abort with a
            // generic trap; this names the cause.
            wasmtime::bail!(
                "memory limit reached: the plugin asked to grow its memory from {current} to {desired} bytes, over its limit of {} bytes",
                self.limit
            );
        }
        // A memory is created with its initial size (`current` 0), then grown.
        self.held += desired.saturating_sub(current);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::ResourceLimiter;

    #[test]
    fn a_grow_past_the_cap_is_an_error_that_names_it_and_is_remembered() {
        let mut cap = MemoryCap::new(1 << 20);
        assert!(cap.memory_growing(0, 1 << 20, None).unwrap());
        assert!(!cap.hit());
        let e = cap.memory_growing(1 << 20, 2 << 20, None).unwrap_err();
        assert!(e.to_string().starts_with("memory limit reached"), "{e}");
        assert!(cap.hit());
        assert_eq!(cap.held(), 1 << 20, "the refused grow is not held");
    }
}
