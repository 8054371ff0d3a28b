//! The wasmtime side of plugins: one `Engine` for the process, compiled components cached
//! by content hash, the sandbox every instance runs in, and pools of warm instances.
//!
//! Owns: engine config (component model, pooling allocator, epoch interruption), the epoch
//! ticker thread, the linker (WASI p2 with nothing granted + the `host` interface), store
//! limits and deadlines, and the classification of a failed call (trap, timeout, memory).
//! Does not know what a decision means: that is `api` and the `TenantPlugins` methods.
//!
//! Calls are async wasmtime calls (`call_async`), not sync calls on `spawn_blocking`: a
//! warm call then costs a fiber switch (well under a microsecond) instead of a hop to the
//! blocking pool and back (several microseconds, and a thread per stuck plugin), and the
//! epoch callback yields to the tokio reactor at every tick, so even a plugin that spins
//! holds a worker thread for at most two ticks at a time until its deadline traps it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::{
    Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, UpdateDeadline,
};
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::{self, host};
use super::{FaultKind, World};
use crate::config::plugins::{Isolation, MAX_MEMORY, PLUGIN_SLOTS};

/// How often the epoch advances. Deadlines are checked, and spinning plugins yield, at
/// this granularity.
pub const TICK: Duration = Duration::from_millis(1);
/// How much of a plugin's stderr is kept: the tail goes into trap messages (a Rust
/// plugin's panic message lands there).
const STDERR_TAIL: usize = 4096;

/// The most WASI resources (streams, pollables, errors, descriptors) one instance may hold
/// at once. The reference plugins hold a handful; a plugin that leaks handles across calls
/// reaches this and its calls fail, which retires the instance.
pub const MAX_RESOURCES: usize = 1024;

/// Names a directory for compiled plugin artifacts, reused across processes.
pub const CACHE_ENV: &str = "LEAFGATE_PLUGIN_CACHE";

/// Writes a compiled artifact atomically (temp file + rename); a cache that cannot be
/// written is only slower, so failures are logged, not returned.
fn store_artifact(path: &Path, component: &Component) {
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let bytes = component.serialize()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    })();
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the plugin cache");
    }
}

/// The process-wide plugin runtime.
pub(crate) struct Runtime {
    pub engine: Engine,
    linker: Linker<State>,
    /// Compiled components by sha256 of their bytes: a reload that names the same files
    /// compiles nothing. Held weakly: the hooks of the snapshots alive own them, and an
    /// entry no snapshot references any more is gone (its code freed) and pruned.
    compiled: Mutex<HashMap<[u8; 32], Weak<Compiled>>>,
    /// How many times each content was built (compiled or read from the disk cache)
    /// rather than found alive: what a reload costs, for tests and diagnostics.
    builds: Mutex<HashMap<[u8; 32], u64>>,
    /// One lock per content being built, so loads racing on the same new bytes (a reload
    /// and `leafgate check`, tenants sharing a plugin) compile it once, not once each.
    building: Mutex<HashMap<[u8; 32], Arc<Mutex<()>>>>,
}

/// A compiled component, shared by every hook that loads the same bytes. Keep it alive as
/// long as anything instantiates from it: the compile cache only points at it.
pub(crate) struct Compiled(Component);

impl std::ops::Deref for Compiled {
    type Target = Component;
    fn deref(&self) -> &Component {
        &self.0
    }
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

impl Runtime {
    fn new() -> wasmtime::Result<Runtime> {
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
        let mut config = wasmtime::Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        // `LEAFGATE_PLUGIN_PROFILE=perfmap`: compiled plugin code is listed in
        // `/tmp/perf-<pid>.map`, so `perf` names the plugin's functions, not bare addresses.
        if std::env::var_os("LEAFGATE_PLUGIN_PROFILE").is_some_and(|v| v == "perfmap") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;

        let mut linker = Linker::new(&engine);
        // All of WASI p2 is linked so components built for wasm32-wasip2 instantiate (a std
        // build imports wasi:sockets when it uses std::net), but the context denies socket
        // creation and name lookups (see `store`), so a socket call is an error the guest
        // sees, never a host descriptor, and never a missing import. The context grants
        // nothing else either: no preopened dirs, env, args or stdin.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        host::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)?;
        bindings::types::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)?;

        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("leafgate-plugin-epoch".into())
            .spawn(move || {
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(TICK);
                }
            })?;
        Ok(Runtime {
            engine,
            linker,
            compiled: Mutex::new(HashMap::new()),
            builds: Mutex::new(HashMap::new()),
            building: Mutex::new(HashMap::new()),
        })
    }

    /// Compiles `bytes` once per content; later calls with the same bytes share the result.
    /// With `LEAFGATE_PLUGIN_CACHE` set to a directory, compiled artifacts are also kept
    /// there across processes (restarts, `leafgate plugin run`, test runs).
    pub fn compile(&self, bytes: &[u8]) -> Result<Arc<Compiled>, String> {
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        let alive = || {
            self.compiled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&hash)
                .and_then(Weak::upgrade)
        };
        if let Some(c) = alive() {
            return Ok(c);
        }
        // Compiling takes long (milliseconds to seconds): done outside the cache's lock,
        // under this content's own, so a racing load waits and then finds the result.
        let slot = self
            .building
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(hash)
            .or_default()
            .clone();
        let result = {
            let _building = slot.lock().unwrap_or_else(PoisonError::into_inner);
            self.build(hash, bytes, alive)
        };
        drop(slot);
        // Locks nobody holds or waits on any more go.
        self.building
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, s| Arc::strong_count(s) > 1);
        result
    }

    /// Builds (or finds, if a racing load just built it) the component of `bytes`.
    fn build(
        &self,
        hash: [u8; 32],
        bytes: &[u8],
        alive: impl Fn() -> Option<Arc<Compiled>>,
    ) -> Result<Arc<Compiled>, String> {
        if let Some(c) = alive() {
            return Ok(c);
        }
        let disk = std::env::var_os(CACHE_ENV).map(|dir| {
            let mut h = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(&self.engine.precompile_compatibility_hash(), &mut h);
            let name: String = hash.iter().map(|b| format!("{b:02x}")).collect();
            Path::new(&dir).join(format!(
                "{name}-{:016x}.cwasm",
                std::hash::Hasher::finish(&h)
            ))
        });
        let cached = disk.as_deref().filter(|p| p.is_file()).and_then(|p| {
            // SAFETY: deserializing runs native code from the file. The cache directory
            // holds only what this function wrote (`serialize` of a component compiled by
            // this same engine configuration, keyed by its hash); whoever sets
            // LEAFGATE_PLUGIN_CACHE vouches for that directory like for the binary itself.
            // A stale or foreign file fails wasmtime's header checks and is recompiled.
            unsafe { Component::deserialize_file(&self.engine, p) }.ok()
        });
        let component = match cached {
            Some(c) => c,
            None => {
                let c = Component::from_binary(&self.engine, bytes).map_err(|e| {
                    format!("not a WebAssembly component leafgate can compile: {e:#} (build it with `cargo build --target wasm32-wasip2`)")
                })?;
                if let Some(path) = &disk {
                    store_artifact(path, &c);
                }
                c
            }
        };
        *self
            .builds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(hash)
            .or_default() += 1;
        let compiled = Arc::new(Compiled(component));
        let mut cache = self.compiled.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|_, c| c.strong_count() > 0);
        cache.insert(hash, Arc::downgrade(&compiled));
        Ok(compiled)
    }

    /// True if a component compiled from `bytes` is still alive (referenced by a hook of
    /// a live snapshot), so loading the same bytes again compiles nothing.
    pub fn is_cached(&self, bytes: &[u8]) -> bool {
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        self.compiled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&hash)
            .is_some_and(|c| c.strong_count() > 0)
    }

    /// How many times a component was built from `bytes` in this process.
    pub fn builds_of(&self, bytes: &[u8]) -> u64 {
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        self.builds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&hash)
            .copied()
            .unwrap_or(0)
    }

    pub fn compile_file(&self, path: &Path) -> Result<Arc<Compiled>, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        self.compile(&bytes)
    }

    /// Checks that `component` fits `world` and prepares it for fast instantiation.
    pub fn prepare(
        &self,
        component: &Component,
        world: World,
    ) -> Result<InstancePre<State>, String> {
        let missing_export = {
            let ty = component.component_type();
            let name = world.export();
            if ty.get_export(&self.engine, name).is_none() {
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
            } else {
                None
            }
        };
        if let Some(m) = missing_export {
            return Err(m);
        }
        let pre = self.linker.instantiate_pre(component).map_err(|e| {
            format!("imports something leafgate does not provide (plugins get WASI p2 with no access granted and leafgate:plugin/host): {e:#}")
        })?;
        // The typed check: the export exists, now does its signature match?
        world.check_exports(&pre).map_err(|e| {
            format!(
                "export `{}` does not match the {world} world's `{}`: {e:#} (rebuild against this gateway's wit/)",
                world.export(),
                world.signature()
            )
        })?;
        Ok(pre)
    }
}

/// Limits one plugin instance runs under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub memory: usize,
    pub deadline: Duration,
    pub isolation: Isolation,
    /// Calls a pooled instance serves before it is retired.
    pub max_calls: u64,
    /// Instances alive at once, idle and busy: this hook's share of the pool's slots.
    pub instances: u64,
}

/// Per-store data: the WASI context (granting nothing), the limits and the state of the
/// call in progress.
pub(crate) struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    stderr: StderrTail,
    config_json: Arc<str>,
    tenant: Arc<str>,
    plugin: Arc<str>,
    memory_limit: usize,
    /// Set when the limiter refused to grow memory: the failure is the memory cap's.
    memory_hit: bool,
    /// The call's deadline: how long the plugin may run.
    deadline: Duration,
    /// When the call in progress started.
    started: Instant,
    /// Epoch ticks seen while the call ran: its running time, in ticks.
    ticks: u64,
    /// Set when the epoch callback interrupted the call.
    timed_out: bool,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl host::Host for State {
    fn log(&mut self, level: host::Level, message: String) {
        let (tenant, plugin) = (&*self.tenant, &*self.plugin);
        match level {
            host::Level::Trace => tracing::trace!(tenant, plugin, "{message}"),
            host::Level::Debug => tracing::debug!(tenant, plugin, "{message}"),
            host::Level::Info => tracing::info!(tenant, plugin, "{message}"),
            host::Level::Warn => tracing::warn!(tenant, plugin, "{message}"),
            host::Level::Error => tracing::error!(tenant, plugin, "{message}"),
        }
    }

    fn config(&mut self) -> String {
        self.config_json.to_string()
    }
}

impl bindings::types::Host for State {}

impl wasmtime::ResourceLimiter for State {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.memory_hit = true;
            // An error, not `Ok(false)`: a refused grow makes Rust guests abort with a
            // generic trap; this names the cause.
            wasmtime::bail!(
                "memory limit reached: the plugin asked to grow its memory from {current} to {desired} bytes, over its limit of {} bytes",
                self.memory_limit
            );
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// A plugin's failed call, classified.
#[derive(Debug)]
pub(crate) struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

/// One instance, ready for calls.
pub(crate) struct Warm<B: Bindings> {
    pub store: Store<State>,
    pub bindings: B,
    /// The last request this instance was given, kept so the next one is written into
    /// the same strings: a warm call then allocates nothing on the host to build its
    /// request (see `api::fill_route_request`).
    pub scratch: B::Scratch,
    /// Calls this instance has been checked out for, the current one included.
    pub calls: u64,
    /// This instance's slot in its hook's share; released when the instance is dropped.
    _slot: OwnedSemaphorePermit,
}

/// The generated bindings of one world, instantiable from a checked `InstancePre`.
pub(crate) trait Bindings: Sized + Send + 'static {
    type Pre: Clone + Send + Sync + 'static;
    /// What a warm instance keeps between calls to build the next request in place.
    type Scratch: Default + Send + 'static;
    fn pre(pre: InstancePre<State>) -> wasmtime::Result<Self::Pre>;
    fn instantiate(
        pre: &Self::Pre,
        store: &mut Store<State>,
    ) -> impl Future<Output = wasmtime::Result<Self>> + Send;
}

macro_rules! bindings {
    ($($world:ident :: $ty:ident, $pre:ident, $scratch:ty;)*) => {$(
        impl Bindings for bindings::$world::$ty {
            type Pre = bindings::$world::$pre<State>;
            type Scratch = $scratch;
            fn pre(pre: InstancePre<State>) -> wasmtime::Result<Self::Pre> {
                bindings::$world::$pre::new(pre)
            }
            fn instantiate(
                pre: &Self::Pre,
                store: &mut Store<State>,
            ) -> impl Future<Output = wasmtime::Result<Self>> + Send {
                pre.instantiate_async(store)
            }
        }
    )*};
}

bindings! {
    pod_router::PodRouter, PodRouterPre, Option<bindings::types::RouteRequest>;
    // The other worlds are called per node status, per log batch or per table: their
    // requests are built fresh.
    address_rewriter::AddressRewriter, AddressRewriterPre, ();
    log_filter::LogFilter, LogFilterPre, ();
    table_formatter::TableFormatter, TableFormatterPre, ();
}

/// One loaded plugin of one tenant: its prepared component, limits and warm instances.
pub(crate) struct Pool<B: Bindings> {
    pre: B::Pre,
    limits: Limits,
    config_json: Arc<str>,
    tenant: Arc<str>,
    plugin: Arc<str>,
    /// Boxed: a warm instance (its store handle, bindings and the request it keeps) then
    /// moves as one pointer through checkout, the call and back, not as a few hundred
    /// bytes copied at every step.
    idle: Mutex<Vec<Box<Warm<B>>>>,
    /// `limits.instances` permits: one per instance alive, so the hook never takes more
    /// of the runtime's slots than its config claimed.
    slots: Arc<Semaphore>,
}

impl<B: Bindings> Pool<B> {
    pub fn new(
        pre: InstancePre<State>,
        limits: Limits,
        config_json: &str,
        tenant: &str,
        plugin: &str,
    ) -> Result<Self, String> {
        Ok(Pool {
            pre: B::pre(pre).map_err(|e| format!("{e:#}"))?,
            limits,
            config_json: config_json.into(),
            tenant: tenant.into(),
            plugin: plugin.into(),
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(limits.instances as usize)),
        })
    }

    /// Takes a warm instance, or makes one, armed with the deadline of a call that
    /// started at `started` (the caller's clock reading, reused: one fewer per call).
    pub async fn checkout(&self, started: Instant) -> Result<Box<Warm<B>>, Fault> {
        if self.limits.isolation == Isolation::Pooled
            && let Some(mut warm) = self.idle.lock().expect("pool poisoned").pop()
        {
            arm(&mut warm.store, started);
            warm.calls += 1;
            return Ok(warm);
        }
        // Every instance busy: wait for one to come back, within this call's deadline.
        let slot = match tokio::time::timeout(
            self.limits.deadline,
            self.slots.clone().acquire_owned(),
        )
        .await
        {
            Ok(Ok(slot)) => slot,
            _ => {
                return Err(Fault {
                    kind: FaultKind::Timeout,
                    message: format!(
                        "all {} instances of this plugin were busy for the whole deadline ({:?}); raise `instances`",
                        self.limits.instances, self.limits.deadline
                    ),
                });
            }
        };
        let mut store = self.store();
        // The wall-clock cap counts from here: waiting for a slot is not the plugin's time.
        arm(&mut store, Instant::now());
        // Instantiation runs the component's start code: under the same deadline and cap.
        match B::instantiate(&self.pre, &mut store).await {
            Ok(bindings) => Ok(Box::new(Warm {
                store,
                bindings,
                scratch: Default::default(),
                calls: 1,
                _slot: slot,
            })),
            Err(e) => Err(classify(&store, e)),
        }
    }

    /// Ends a call: a healthy instance goes back to the pool; one that failed, or whose
    /// answer was out of contract, is dropped with everything it holds.
    pub fn finish<R, T>(
        &self,
        warm: Box<Warm<B>>,
        result: wasmtime::Result<R>,
        check: impl FnOnce(R) -> Result<T, String>,
    ) -> Result<T, Fault> {
        let answer = match result {
            Ok(answer) => answer,
            Err(e) => return Err(classify(&warm.store, e)),
        };
        let checked = check(answer).map_err(|message| Fault {
            kind: FaultKind::InvalidAnswer,
            message,
        })?;
        if self.limits.isolation == Isolation::Pooled {
            let mut idle = self.idle.lock().expect("pool poisoned");
            // An instance that served its `max_calls` is retired: whatever it leaked goes
            // with it, and the next call gets a fresh one.
            if warm.calls < self.limits.max_calls {
                idle.push(warm);
            }
        }
        Ok(checked)
    }

    fn store(&self) -> Store<State> {
        let stderr = StderrTail::default();
        // Nothing inherited, nothing preopened: the builder's defaults are closed stdin,
        // discarded stdout, no env, no args. The builder allows TCP and UDP socket creation
        // by default (only addresses are denied), and each created socket is a host file
        // descriptor a pooled instance keeps: creation itself is denied, so a guest's
        // `TcpStream::connect` or `UdpSocket::bind` gets "access denied" before any
        // descriptor exists, and name lookups fail the same way.
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let mut table = ResourceTable::new();
        // Every stream, pollable and error a guest holds is an entry; a leaking plugin
        // hits this cap (its call fails) instead of growing the host's memory.
        table.set_max_capacity(MAX_RESOURCES);
        let mut store = Store::new(
            &runtime()
                .expect("a pool exists only once the runtime does")
                .engine,
            State {
                wasi,
                table,
                stderr,
                config_json: self.config_json.clone(),
                tenant: self.tenant.clone(),
                plugin: self.plugin.clone(),
                memory_limit: self.limits.memory,
                memory_hit: false,
                deadline: self.limits.deadline,
                started: Instant::now(),
                ticks: 0,
                timed_out: false,
            },
        );
        store.limiter(|s| s as &mut dyn wasmtime::ResourceLimiter);
        store.epoch_deadline_callback(|mut cx| {
            let state = cx.data_mut();
            state.ticks += 1;
            // The deadline counts the ticks the plugin ran, not time spent waiting for a
            // worker: a tenant's calls must not time out because another tenant's plugins
            // are spinning. The wall-clock cap still bounds a call on a starved runtime.
            let budget = state.deadline.as_micros().div_ceil(TICK.as_micros()) as u64;
            if state.ticks > budget || state.started.elapsed() > wall_cap(state.deadline) {
                state.timed_out = true;
                return Ok(UpdateDeadline::Interrupt);
            }
            // A short call crosses at most one tick boundary: let it finish. A long one
            // yields to the reactor at every tick so other tasks keep running.
            Ok(if state.ticks == 1 {
                UpdateDeadline::Continue(1)
            } else {
                UpdateDeadline::Yield(1)
            })
        });
        store
    }
}

fn arm(store: &mut Store<State>, started: Instant) {
    let state = store.data_mut();
    state.started = started;
    state.ticks = 0;
    store.set_epoch_deadline(1);
}

/// The longest a call may take in wall-clock time, however little of it the plugin ran.
fn wall_cap(deadline: Duration) -> Duration {
    deadline * 4 + Duration::from_millis(50)
}

/// Says why a call failed, from what the store saw (the epoch callback and the limiter
/// leave marks) and the error itself.
fn classify(store: &Store<State>, error: wasmtime::Error) -> Fault {
    let state = store.data();
    if state.timed_out {
        let ran = Duration::from_micros(state.ticks.saturating_sub(1) * TICK.as_micros() as u64);
        return Fault {
            kind: FaultKind::Timeout,
            message: format!(
                "deadline exceeded: interrupted after running ~{ran:?} ({:?} wall-clock) of its {:?} deadline",
                state.started.elapsed(),
                state.deadline
            ),
        };
    }
    if state.memory_hit {
        let message = error
            .chain()
            .find_map(|e| {
                let text = e.to_string();
                text.starts_with("memory limit").then_some(text)
            })
            .unwrap_or_else(|| format!("memory limit reached: {error:#}"));
        return Fault {
            kind: FaultKind::Memory,
            message,
        };
    }
    let stderr = state.stderr.text();
    let trap = error
        .downcast_ref::<wasmtime::Trap>()
        .map_or_else(|| format!("{error:#}"), |t| format!("wasm trap: {t}"));
    let message = if stderr.is_empty() {
        trap
    } else {
        format!("{trap}; the plugin wrote: {stderr}")
    };
    Fault {
        kind: FaultKind::Trap,
        message,
    }
}

/// A plugin's stderr: the last `STDERR_TAIL` bytes written, with older bytes dropped.
///
/// Not wasmtime-wasi's `MemoryOutputPipe`: that one fails writes once full, and Rust's
/// `eprintln!` panics on a failed write, so a warm instance that logs to stderr would
/// start trapping after a few kilobytes.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<std::collections::VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut buf = self.0.lock().expect("stderr poisoned");
        buf.extend(bytes);
        let excess = buf.len().saturating_sub(STDERR_TAIL);
        buf.drain(..excess);
    }

    fn text(&self) -> String {
        let buf = self.0.lock().expect("stderr poisoned");
        let (a, b) = buf.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).trim().to_string()
    }
}

impl wasmtime_wasi::cli::IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for StderrTail {
    fn p2_stream(&self) -> Box<dyn wasmtime_wasi::p2::OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi::p2::Pollable for StderrTail {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi::p2::OutputStream for StderrTail {
    fn write(&mut self, bytes: bytes::Bytes) -> wasmtime_wasi::p2::StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> wasmtime_wasi::p2::StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> wasmtime_wasi::p2::StreamResult<usize> {
        // Always room: old bytes make way.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for StderrTail {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}
