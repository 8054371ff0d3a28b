//! The process-wide plugin runtime: one wasmtime `Engine` (component model, pooling
//! allocator sized for every plugin slot, epoch interruption) with its epoch ticker, the
//! linker every component is instantiated through, and fitting a compiled component to
//! a world ([`Runtime::prepare`]).
//!
//! Calls are async wasmtime calls (`call_async`), not sync calls on `spawn_blocking`: a
//! warm call then costs a fiber switch (well under a microsecond) instead of a hop to the
//! blocking pool and back (several microseconds, and a thread per stuck plugin), and the
//! epoch callback yields to the tokio reactor at every tick, so even a plugin that spins
//! holds a worker thread for at most two ticks at a time until its deadline traps it.
//!
//! Does not know what a decision means (`api`, `convert`, `tenant`) nor hold instances
//! (`pool`); compiling is `compile`'s, the store an instance runs in `sandbox`'s.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings::{self, host};
use super::compile::{CompileCache, Compiled};
use super::epoch;
use super::sandbox::State;
use super::world::World;
use crate::config::plugins::{MAX_MEMORY, PLUGIN_SLOTS};

/// The process-wide plugin runtime.
pub(crate) struct Runtime {
    pub engine: Engine,
    linker: Linker<State>,
    cache: CompileCache,
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The runtime, created on first use with its epoch ticker.
pub(crate) fn runtime() -> Result<&'static Runtime, String> {
    RUNTIME
        .get_or_init(|| {
            Runtime::new().map_err(|e| format!("cannot start the plugin runtime: {e:#}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The pooling allocator's sizing: room for every instance the configs may keep alive.
fn pooling() -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    // Slots for every instance alive at once across all tenants (warm pools included):
    // a config may claim PLUGIN_SLOTS (checked at load time, and each hook's pool holds
    // no more than its share), twice that so the generation being replaced and the
    // new one fit side by side during a reload. A Rust component is one memory, a few
    // core instances and tables.
    let slots = 2 * PLUGIN_SLOTS as u32;
    pool.total_component_instances(slots)
        .total_core_instances(8 * slots)
        .total_memories(slots)
        .total_tables(4 * slots)
        .total_stacks(slots)
        .max_memory_size(MAX_MEMORY as usize)
        // Every async call runs on a fiber stack from the pool. Returning one normally
        // decommits it (a syscall, then page faults on the next call); keeping the top
        // of it resident takes microseconds off every warm call. Wasm code cannot read
        // its native stack, so nothing leaks between tenants through it.
        .async_stack_keep_resident(128 << 10);
    pool
}

impl Runtime {
    fn new() -> wasmtime::Result<Runtime> {
        let mut config = wasmtime::Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling()));
        // `LEAFGATE_PLUGIN_PROFILE=perfmap`: compiled plugin code is listed in
        // `/tmp/perf-<pid>.map`, so `perf` names the plugin's functions, not bare addresses.
        if std::env::var_os("LEAFGATE_PLUGIN_PROFILE").is_some_and(|v| v == "perfmap") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;

        let mut linker = Linker::new(&engine);
        // All of WASI p2 is linked so components built for wasm32-wasip2 instantiate (a std
        // build imports wasi:sockets when it uses std::net), but the context denies socket
        // creation and name lookups (see `sandbox`), so a socket call is an error the guest
        // sees, never a host descriptor, and never a missing import. The context grants
        // nothing else either: no preopened dirs, env, args or stdin.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        // wasi:http the same way (componentize-js builds import it by default): linked, and
        // every outgoing request refused (see `nohttp`).
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        host::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)?;
        bindings::types::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)?;

        epoch::spawn_ticker(&engine)?;
        Ok(Runtime {
            engine,
            linker,
            cache: CompileCache::default(),
        })
    }

    /// Compiles `bytes` once per content (see [`CompileCache::compile`]).
    pub fn compile(&self, bytes: &[u8]) -> Result<Arc<Compiled>, String> {
        self.cache.compile(&self.engine, bytes)
    }

    pub fn compile_file(&self, path: &Path) -> Result<Arc<Compiled>, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        self.compile(&bytes)
    }

    /// True if a component compiled from `bytes` is still alive (see
    /// [`CompileCache::is_cached`]).
    pub fn is_cached(&self, bytes: &[u8]) -> bool {
        self.cache.is_cached(bytes)
    }

    /// How many times a component was built from `bytes` in this process.
    pub fn builds_of(&self, bytes: &[u8]) -> u64 {
        self.cache.builds_of(bytes)
    }

    /// Checks that `component` fits `world` and prepares it for fast instantiation.
    pub fn prepare(
        &self,
        component: &Component,
        world: World,
    ) -> Result<InstancePre<State>, String> {
        if let Some(m) = self.missing_export(component, world) {
            return Err(m);
        }
        let pre = self.linker.instantiate_pre(component).map_err(|e| {
            format!("imports something leafgate does not provide (plugins get WASI p2 and wasi:http with no access granted, and leafgate:plugin/host): {e:#}")
        })?;
        // The typed check: the export exists, now does its signature match?
        check_exports(world, &pre).map_err(|e| {
            format!(
                "export `{}` does not match the {world} world's `{}`: {e:#} (rebuild against this gateway's wit/)",
                world.export(),
                world.signature()
            )
        })?;
        Ok(pre)
    }

    /// Why `component` lacks `world`'s export, naming what it exports instead (and the
    /// world it looks built for); `None` when the export is there.
    fn missing_export(&self, component: &Component, world: World) -> Option<String> {
        let ty = component.component_type();
        let name = world.export();
        if ty.get_export(&self.engine, name).is_some() {
            return None;
        }
        let exports: Vec<&str> = ty.exports(&self.engine).map(|(n, _)| n).collect();
        let guess = World::ALL
            .iter()
            .find(|w| exports.contains(&w.export()))
            .map(|w| format!("; it looks built for the {w} world"))
            .unwrap_or_default();
        Some(format!(
            "missing export `{name}`: the {world} world exports `{}`, and this component exports {}{guess}",
            world.signature(),
            if exports.is_empty() {
                "nothing".to_string()
            } else {
                exports
                    .iter()
                    .map(|e| format!("`{e}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    }
}

/// Type-checks the world's exports against a prepared component: what the world's
/// generated `*Pre` does when it is made.
fn check_exports(world: World, pre: &InstancePre<State>) -> wasmtime::Result<()> {
    let pre = pre.clone();
    match world {
        World::PodRouter => bindings::pod_router::PodRouterPre::new(pre).map(drop),
        World::AddressRewriter => {
            bindings::address_rewriter::AddressRewriterPre::new(pre).map(drop)
        }
        World::LogFilter => bindings::log_filter::LogFilterPre::new(pre).map(drop),
        World::TableFormatter => bindings::table_formatter::TableFormatterPre::new(pre).map(drop),
    }
}
