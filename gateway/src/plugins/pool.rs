//! Pools of warm instances: one [`Pool`] per hook, lending out a [`Warm`] instance per
//! call (or making one within the hook's share of slots), taking it back when the call
//! went well and dropping it, with everything it holds, when it did not.
//!
//! Owns instance lifetime: start-up, checkout, reuse up to `max_calls`, retirement, the
//! wait for a slot. A new instance's start-up (instantiation: an interpreter's runtime
//! starting, say) runs under the hook's `startup` limit, never inside a call's deadline;
//! [`Pool::warm_up`] starts the first one when the hook is loaded, off the request path.
//! Does not make stores (`sandbox`) nor know what a call means (`tenant`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::bindings;
use super::engine::runtime;
use super::error::{Fault, FaultKind};
use super::hostlog::PluginLog;
use super::limits::Limits;
use super::sandbox::{self, Identity, State};
use crate::config::plugins::Isolation;

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

/// One instance, ready for calls.
pub(crate) struct Warm<B: Bindings> {
    pub store: Store<State>,
    pub bindings: B,
    /// The last request this instance was given, kept so the next one is written into
    /// the same strings: a warm call then allocates nothing on the host to build its
    /// request (see `convert::fill_route_request`).
    pub scratch: B::Scratch,
    /// Calls this instance has been checked out for, the current one included.
    pub calls: u64,
    /// This instance's slot in its hook's share; released when the instance is dropped.
    _slot: OwnedSemaphorePermit,
}

/// What starting an instance took, measured when the hook was loaded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started {
    /// The start-up's wall-clock time.
    pub time: Duration,
    /// The instance's linear memory once started, in bytes.
    pub memory: usize,
}

/// One loaded plugin of one tenant: its prepared component, limits and warm instances.
pub(crate) struct Pool<B: Bindings> {
    pre: B::Pre,
    limits: Limits,
    who: Identity,
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
        log: PluginLog,
    ) -> Result<Self, String> {
        Ok(Pool {
            pre: B::pre(pre).map_err(|e| format!("{e:#}"))?,
            limits,
            who: Identity {
                config_json: config_json.into(),
                log: Arc::new(log),
            },
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
            sandbox::arm(&mut warm.store, started);
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
        let mut warm = self.start(slot).await?;
        // The call's deadline counts from here: neither the wait for a slot nor the
        // instance's start-up is the call's time.
        sandbox::arm(&mut warm.store, Instant::now());
        Ok(warm)
    }

    /// Starts a new instance in `slot`: instantiation runs the component's start code
    /// under the `startup` limit (and its wall-clock cap).
    async fn start(&self, slot: OwnedSemaphorePermit) -> Result<Box<Warm<B>>, Fault> {
        let engine = &runtime()
            .expect("a pool exists only once the runtime does")
            .engine;
        let mut store = sandbox::new_store(engine, &self.limits, &self.who);
        sandbox::arm_startup(&mut store);
        match B::instantiate(&self.pre, &mut store).await {
            Ok(bindings) => Ok(Box::new(Warm {
                store,
                bindings,
                scratch: Default::default(),
                calls: 1,
                _slot: slot,
            })),
            Err(e) => Err(sandbox::classify(&store, e)),
        }
    }

    /// Starts the hook's first instance now (at load or reload, off the request path) and
    /// keeps it for the first call, so no call waits for a start-up; says what the
    /// start-up took. A start-up that fails, eats its memory cap or spins past its
    /// `startup` limit is an error that says so: the hook is not loaded.
    ///
    /// Blocks the calling thread for the start-up (on a thread of its own, with a runtime
    /// of its own, so it can be called from anywhere: a reload's blocking thread,
    /// `leafgate check`, a test's runtime).
    pub fn warm_up(&self) -> Result<Started, String> {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| "no instance slot free for its start-up".to_string())?;
        let began = Instant::now();
        let started = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let tokio = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| Fault {
                            kind: FaultKind::Trap,
                            message: format!("cannot run its start-up: {e}"),
                        })?;
                    tokio.block_on(self.start(slot))
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(Fault {
                        kind: FaultKind::Trap,
                        message: "its start-up panicked the host thread".into(),
                    })
                })
        });
        let warm = started.map_err(|fault| match fault.kind {
            FaultKind::Memory => format!(
                "its start-up needs more memory than its limit of {} bytes: {} (raise `memory`)",
                self.limits.memory, fault.message
            ),
            FaultKind::Timeout => fault.message,
            _ => format!("its start-up failed: {}", fault.message),
        })?;
        let measured = Started {
            time: began.elapsed(),
            memory: sandbox::held_memory(&warm.store),
        };
        if self.limits.isolation == Isolation::Pooled {
            let mut warm = warm;
            // Its first call counts from its checkout.
            warm.calls = 0;
            self.idle.lock().expect("pool poisoned").push(warm);
        }
        Ok(measured)
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
            Err(e) => return Err(sandbox::classify(&warm.store, e)),
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
}
