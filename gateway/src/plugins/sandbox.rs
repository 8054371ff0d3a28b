//! The sandbox one plugin instance runs in: its store's [`State`] (a WASI p2 context that
//! grants nothing, the `host` interface, its limits and clock), how a store is made and
//! armed for a call, and [`classify`], which says why a call failed from what the store
//! saw.
//!
//! Owns what a plugin can reach and how its failure is read. Does not own instances or
//! pools (`pool`) nor the engine (`engine`): a store is made on an engine it is given.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Engine, Store};
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::{self, host};
use super::epoch::{CallClock, Phase};
use super::error::{Fault, FaultKind};
use super::hostlog::PluginLog;
use super::limits::{Limits, MAX_RESOURCES, MemoryCap};
use super::nohttp::RefuseOutgoing;
use super::stderr::StderrTail;

/// Per-store data: the WASI context (granting nothing), `wasi:http` (refusing every
/// request), the limits and the state of the call in progress.
pub(crate) struct State {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    refuse_outgoing: RefuseOutgoing,
    table: ResourceTable,
    stderr: StderrTail,
    config_json: Arc<str>,
    log: Arc<PluginLog>,
    memory: MemoryCap,
    clock: CallClock,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.refuse_outgoing,
        }
    }
}

impl host::Host for State {
    fn log(&mut self, level: host::Level, message: String) {
        // Escaped, bounded and rate-limited there: the plugin is untrusted.
        self.log.write(level, &message);
    }

    fn config(&mut self) -> String {
        self.config_json.to_string()
    }
}

impl bindings::types::Host for State {}

/// Who a store runs for and with what: the plugin's config and its log (its names, and
/// the budget of lines all its instances share).
pub(crate) struct Identity {
    pub config_json: Arc<str>,
    pub log: Arc<PluginLog>,
}

/// A fresh store on `engine` for one instance: closed WASI, capped resources and memory,
/// and the epoch callback that enforces the deadline.
pub(crate) fn new_store(engine: &Engine, limits: &Limits, who: &Identity) -> Store<State> {
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
        engine,
        State {
            wasi,
            http: WasiHttpCtx::new(),
            refuse_outgoing: RefuseOutgoing,
            table,
            stderr,
            config_json: who.config_json.clone(),
            log: who.log.clone(),
            memory: MemoryCap::new(limits.memory),
            clock: CallClock::new(limits.deadline, limits.startup),
        },
    );
    store.limiter(|s| &mut s.memory as &mut dyn wasmtime::ResourceLimiter);
    store.epoch_deadline_callback(|mut cx| Ok(cx.data_mut().clock.tick()));
    store
}

/// Arms `store` for a call that started at `started`: its clock counts from there, and
/// the first epoch tick runs the callback.
pub(crate) fn arm(store: &mut Store<State>, started: Instant) {
    store.data_mut().clock.arm(started);
    store.set_epoch_deadline(1);
}

/// Arms `store` for its instance's start-up, from now, under the `startup` limit.
pub(crate) fn arm_startup(store: &mut Store<State>) {
    store
        .data_mut()
        .clock
        .arm_for(Phase::Startup, Instant::now());
    store.set_epoch_deadline(1);
}

/// The linear memory the store's instance holds, in bytes.
pub(crate) fn held_memory(store: &Store<State>) -> usize {
    store.data().memory.held()
}

/// Says why a call failed, from what the store saw (the epoch callback and the limiter
/// leave marks) and the error itself.
pub(crate) fn classify(store: &Store<State>, error: wasmtime::Error) -> Fault {
    let state = store.data();
    if state.clock.timed_out {
        return Fault {
            kind: FaultKind::Timeout,
            message: state.clock.timeout_message(),
        };
    }
    if state.memory.hit() {
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
