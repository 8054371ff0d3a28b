//! The running gateway: its listeners, the current snapshot, reload and shutdown.
//!
//! [`Gateway::start`] binds every listener (and the admin listener) and starts serving;
//! tests use it in-process on `127.0.0.1:0` and read the bound addresses back.
//! [`Gateway::reload`] builds the next snapshot off to the side (config parse and plugin
//! compilation on a blocking thread), and only when it is complete and valid reconciles
//! the listeners and swaps it in with one store. [`Gateway::shutdown`] stops accepting,
//! lets in-flight requests and hijacked connections finish within the grace period, then
//! closes what is left.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

use crate::access_log::Logs;
use crate::config::{Config, ParseCache};
use crate::control::{
    ApplyFuture, Control, GatewayApplyFuture, ListenerAddr, ReloadError, ReloadFuture, ReloadRecord,
};
use crate::metrics::Metrics;
use crate::runtime::Shared;
use crate::snapshot::Snapshot;
use crate::workers::{self, Workers};
use crate::{admin, listener, watch};

/// Why the gateway could not start: its config was refused as a reload's would be, or the
/// serving threads could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Load(#[from] ReloadError),
    #[error("cannot start the serving threads: {0}")]
    Workers(std::io::Error),
}

struct RunningListener {
    name: Arc<str>,
    /// The address as configured (port 0 stays 0), which decides whether a reload keeps it.
    bind: SocketAddr,
    local: SocketAddr,
    stop: CancellationToken,
}

pub struct Gateway {
    shared: Arc<Shared>,
    config_path: PathBuf,
    listeners: Mutex<Vec<RunningListener>>,
    admin: Option<SocketAddr>,
    /// Parent of every listener's stop token.
    stop: CancellationToken,
    /// Cancelled when shutdown begins: `/readyz` answers 503 from then on.
    draining: CancellationToken,
    /// Stops the admin listener, last of all, so `/readyz` reports draining to the end.
    admin_stop: CancellationToken,
    /// One reload at a time; the loser of a race waits and then reloads the newest file.
    reloading: tokio::sync::Mutex<()>,
    /// The raw `[[route]]` sections of the config last read, so a reload parses only the
    /// sections that changed. Used under `reloading`, on a blocking thread.
    parse_cache: Arc<Mutex<ParseCache>>,
    last_reload: Mutex<Option<ReloadRecord>>,
    /// The serving threads; dropping the gateway ends them.
    workers: Workers,
    /// The root cluster's election and virtual-node writer, with `[kubernetes]`.
    root: std::sync::OnceLock<Arc<crate::controllers::vnodes::RootState>>,
    /// The Ingress provider, with `[kubernetes.ingress]`.
    ingress: std::sync::OnceLock<Arc<crate::controllers::ingress::IngressProvider>>,
}

impl Gateway {
    /// Loads `config_path`, binds every listener and starts serving.
    pub async fn start(config_path: &Path) -> Result<Arc<Gateway>, GatewayError> {
        let path = config_path.to_path_buf();
        let parse_cache = Arc::new(Mutex::new(ParseCache::new()));
        let config = load_blocking(path.clone(), parse_cache.clone()).await?;
        let metrics = Arc::new(Metrics::new());
        let access_log_dropped = metrics.access_log_dropped.clone();
        let built = metrics.clone();
        let snapshot =
            tokio::task::spawn_blocking(move || Snapshot::build(Arc::new(config), 1, None, &built))
                .await
                .map_err(|e| ReloadError::Interrupted(e.to_string()))?
                .map_err(ReloadError::from)?;
        let admin_bind = snapshot.config.admin.as_ref().map(|a| a.bind);

        let shared = Arc::new(Shared {
            snapshot: ArcSwap::from_pointee(snapshot),
            metrics,
            tasks: TaskTracker::new(),
            kill: CancellationToken::new(),
            killed: Default::default(),
            sessions: Default::default(),
            access_log: Logs::new(access_log_dropped, workers::count()),
        });
        shared
            .access_log
            .configure(&shared.snapshot.load().config.access_log);
        let stop = CancellationToken::new();

        let admin = match admin_bind {
            Some(addr) => {
                let socket = TcpListener::bind(addr)
                    .await
                    .map_err(|source| ReloadError::Bind {
                        name: "admin".into(),
                        addr,
                        source: Arc::new(source),
                    })?;
                Some(socket)
            }
            None => None,
        };
        let admin_addr = admin.as_ref().and_then(|s| s.local_addr().ok());
        let workers = Workers::start(workers::count()).map_err(GatewayError::Workers)?;

        let gateway = Arc::new(Gateway {
            shared,
            config_path: path,
            listeners: Mutex::new(Vec::new()),
            admin: admin_addr,
            stop,
            draining: CancellationToken::new(),
            admin_stop: CancellationToken::new(),
            reloading: tokio::sync::Mutex::new(()),
            parse_cache,
            last_reload: Mutex::new(None),
            workers,
            root: std::sync::OnceLock::new(),
            ingress: std::sync::OnceLock::new(),
        });
        let snapshot = gateway.shared.snapshot.load_full();
        let mut started = Vec::new();
        for l in &snapshot.config.listeners {
            started.push(gateway.bind(&l.name, l.bind).await?);
        }
        for (running, socket) in started {
            gateway.spawn_listener(&running, socket);
            lock(&gateway.listeners).push(running);
        }
        if let Some(socket) = admin {
            tokio::spawn(admin::serve(
                socket,
                gateway.clone(),
                gateway.admin_stop.clone(),
            ));
        }
        if let Some(root) = crate::controllers::vnodes::spawn(gateway.clone(), gateway.stop.clone())
        {
            if let Some(provider) = crate::controllers::ingress::spawn(
                gateway.clone(),
                root.subscribe(),
                gateway.stop.clone(),
            ) {
                let _ = gateway.ingress.set(provider);
            }
            let _ = gateway.root.set(root);
        }
        if let Err(e) = watch::spawn(gateway.clone(), gateway.stop.clone()) {
            warn!(error = %e, "cannot watch the config files; reload with SIGHUP or POST /reload");
        }
        Ok(gateway)
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.snapshot.load_full()
    }

    /// Reopens the access log files (SIGUSR1, after logrotate moved them away).
    pub fn reopen_access_logs(&self) {
        self.shared.access_log.reopen();
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// The address a listener is bound to (with the real port when the config said 0).
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        let listeners = lock(&self.listeners);
        listeners.iter().find(|l| &*l.name == name).map(|l| l.local)
    }

    /// Every running listener: name, configured bind, bound address.
    pub fn listener_addrs(&self) -> Vec<ListenerAddr> {
        let listeners = lock(&self.listeners);
        listeners
            .iter()
            .map(|l| ListenerAddr {
                name: l.name.to_string(),
                bind: l.bind,
                local: l.local,
            })
            .collect()
    }

    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin
    }

    pub fn last_reload(&self) -> Option<ReloadRecord> {
        lock(&self.last_reload).clone()
    }

    async fn bind(
        &self,
        name: &str,
        bind: SocketAddr,
    ) -> Result<(RunningListener, Vec<std::net::TcpListener>), ReloadError> {
        let err = |source| ReloadError::Bind {
            name: name.to_string(),
            addr: bind,
            source: Arc::new(source),
        };
        let sockets = workers::bind_reuseport(bind, self.workers.len()).map_err(err)?;
        let local = sockets[0].local_addr().map_err(err)?;
        let running = RunningListener {
            name: name.into(),
            bind,
            local,
            stop: self.stop.child_token(),
        };
        Ok((running, sockets))
    }

    /// Serves `sockets`, one on each serving thread.
    fn spawn_listener(&self, running: &RunningListener, sockets: Vec<std::net::TcpListener>) {
        let snapshot = self.shared.snapshot.load();
        let configured = snapshot
            .listeners
            .get(&*running.name)
            .and_then(|l| l.config.max_connections);
        let limit = configured
            .unwrap_or_else(|| listener::default_max_connections(snapshot.listeners.len()));
        info!(listener = %running.name, max_connections = limit, "connection limit");
        // One budget per listener, shared by its sockets on every serving thread.
        let slots = Arc::new(tokio::sync::Semaphore::new(limit));
        for (socket, handle) in sockets.into_iter().zip(self.workers.handles()) {
            let (name, shared, stop, slots) = (
                running.name.clone(),
                self.shared.clone(),
                running.stop.clone(),
                slots.clone(),
            );
            // Tracked, so shutdown returns only once every socket is closed.
            let tasks = self.shared.tasks.clone();
            handle.spawn(tasks.track_future(async move {
                // Registers the socket with this thread's reactor.
                match TcpListener::from_std(socket) {
                    Ok(socket) => listener::serve(name, socket, shared, slots, stop).await,
                    Err(e) => {
                        warn!(listener = %name, error = %e, "cannot serve a listening socket")
                    }
                }
            }));
        }
    }

    /// Re-reads the config file and, if it is valid, serves from it. On any error the
    /// running snapshot stays and the error is returned, logged and recorded for `/status`.
    pub async fn reload(&self) -> Result<u64, ReloadError> {
        let _one_at_a_time = self.reloading.lock().await;
        let result = self.reload_locked().await;
        let metrics = &self.shared.metrics;
        let record = match &result {
            Ok(generation) => {
                metrics.reloads.inc();
                // Tenants or `[kubernetes.ingress]` may have changed what the model says.
                if let Some(provider) = self.ingress.get() {
                    provider.kick();
                }
                info!(generation, "config reloaded");
                Ok(*generation)
            }
            Err(e) => {
                metrics.reload_failures.inc();
                error!(error = %e, "reload rejected; still serving the previous config");
                Err(e.clone())
            }
        };
        *lock(&self.last_reload) = Some(ReloadRecord {
            at: SystemTime::now(),
            result: record,
        });
        result
    }

    async fn reload_locked(&self) -> Result<u64, ReloadError> {
        let config = load_blocking(self.config_path.clone(), self.parse_cache.clone()).await?;
        let previous = self.shared.snapshot.load_full();
        let generation = previous.generation + 1;
        let metrics = self.shared.metrics.clone();
        let snapshot = tokio::task::spawn_blocking(move || {
            Snapshot::build(Arc::new(config), generation, Some(&previous), &metrics)
        })
        .await
        .map_err(|e| ReloadError::Interrupted(e.to_string()))??;

        // Listeners: keep those whose (name, bind) is unchanged, so their sockets never
        // close; bind the new ones before anything is stopped, so a failed bind leaves the
        // running set as it was.
        let wanted: Vec<(String, SocketAddr)> = snapshot
            .config
            .listeners
            .iter()
            .map(|l| (l.name.clone(), l.bind))
            .collect();
        let (to_stop, to_start): (Vec<usize>, Vec<(String, SocketAddr)>) = {
            let running = lock(&self.listeners);
            // Gateway listeners come and go with the Gateways, not the config.
            let to_stop = running
                .iter()
                .enumerate()
                .filter(|(_, r)| !r.name.starts_with(crate::config::GATEWAY_LISTENERS))
                .filter(|(_, r)| !wanted.iter().any(|(n, b)| **n == *r.name && *b == r.bind))
                .map(|(i, _)| i)
                .collect();
            let to_start = wanted
                .iter()
                .filter(|(n, b)| !running.iter().any(|r| *r.name == **n && r.bind == *b))
                .cloned()
                .collect();
            (to_stop, to_start)
        };
        let freed: Vec<SocketAddr> = {
            let running = lock(&self.listeners);
            to_stop.iter().map(|&i| running[i].bind).collect()
        };
        let mut started = Vec::new();
        let mut deferred = Vec::new();
        for (name, bind) in to_start {
            // An address a removed listener holds (a rename) is bound after it stops.
            if bind.port() != 0 && freed.contains(&bind) {
                deferred.push((name, bind));
                continue;
            }
            started.push(self.bind(&name, bind).await?);
        }

        let snapshot = Arc::new(snapshot);
        self.shared.snapshot.store(snapshot.clone());
        self.shared
            .access_log
            .configure(&snapshot.config.access_log);
        // Revocation reaches open connections: what the new tenants no longer allow ends
        // now, not when the client hangs up.
        self.shared
            .sessions
            .revoke(&snapshot.config, &self.shared.metrics);

        {
            let mut running = lock(&self.listeners);
            for &i in to_stop.iter().rev() {
                let gone = running.remove(i);
                info!(listener = %gone.name, addr = %gone.local, "listener removed; draining its connections");
                gone.stop.cancel();
            }
        }
        for (name, bind) in deferred {
            match self.bind(&name, bind).await {
                Ok(pair) => started.push(pair),
                Err(e) => warn!(error = %e, "a renamed listener could not take over its address"),
            }
        }
        let mut running = lock(&self.listeners);
        for (r, socket) in started {
            self.spawn_listener(&r, socket);
            running.push(r);
        }
        Ok(generation)
    }

    /// Swaps in `model`'s Ingress routes, holding the reload lock: a reload waiting
    /// behind it starts from the snapshot with these routes, and this one starts from the
    /// snapshot a finished reload stored.
    pub async fn apply_ingress(
        &self,
        model: Arc<crate::k8s::ingress::model::Model>,
    ) -> Result<(), ReloadError> {
        let _one_at_a_time = self.reloading.lock().await;
        let current = self.shared.snapshot.load_full();
        let next = tokio::task::spawn_blocking(move || current.with_ingress(model))
            .await
            .map_err(|e| ReloadError::Interrupted(e.to_string()))??;
        self.shared.snapshot.store(Arc::new(next));
        Ok(())
    }

    /// Serves `served`'s Gateway routes from now on, holding the reload lock as
    /// [`Gateway::apply_ingress`] does: the addresses it names are bound (before the swap,
    /// so a request to one finds its router), those it no longer names are stopped after
    /// it. An address that cannot be bound fails alone: it is returned, with why.
    pub async fn apply_gateway(
        &self,
        served: Arc<crate::k8s::gateway::serve::Served>,
    ) -> Result<Vec<(SocketAddr, String)>, ReloadError> {
        use crate::snapshot::GatewayRoutes;
        let _one_at_a_time = self.reloading.lock().await;
        let current = self.shared.snapshot.load_full();
        let next = tokio::task::spawn_blocking(move || current.with_gateway(served))
            .await
            .map_err(|e| ReloadError::Interrupted(e.to_string()))?;
        let wanted: Vec<SocketAddr> = next.gateway.addrs().collect();
        let (to_stop, to_start): (Vec<Arc<str>>, Vec<SocketAddr>) = {
            let running = lock(&self.listeners);
            let ours = |r: &&RunningListener| r.name.starts_with(GatewayRoutes::PREFIX);
            (
                running
                    .iter()
                    .filter(ours)
                    .filter(|r| !wanted.contains(&r.bind))
                    .map(|r| r.name.clone())
                    .collect(),
                wanted
                    .iter()
                    .filter(|a| !running.iter().filter(ours).any(|r| r.bind == **a))
                    .copied()
                    .collect(),
            )
        };
        let mut started = Vec::new();
        let mut failed = Vec::new();
        for addr in to_start {
            match self.bind(&GatewayRoutes::listener_name(addr), addr).await {
                Ok(pair) => started.push(pair),
                Err(e) => {
                    warn!(error = %e, "a Gateway listener could not be bound");
                    failed.push((addr, e.to_string()));
                }
            }
        }
        self.shared.snapshot.store(Arc::new(next));
        let mut running = lock(&self.listeners);
        running.retain(|r| {
            let stop = to_stop.contains(&r.name);
            if stop {
                info!(listener = %r.name, "Gateway listener removed; draining its connections");
                r.stop.cancel();
            }
            !stop
        });
        for (r, socket) in started {
            info!(listener = %r.name, addr = %r.local, "Gateway listener bound");
            self.spawn_listener(&r, socket);
            running.push(r);
        }
        Ok(failed)
    }

    /// Drains and stops. `/readyz` turns 503 at once; the listeners keep serving for
    /// `shutdown_delay` so load balancers notice and stop sending; then they stop accepting
    /// and in-flight requests and hijacked connections get up to `shutdown_grace` before
    /// whatever is left is closed. The admin listener stops last.
    pub async fn shutdown(&self) {
        let timeouts = self.shared.snapshot.load().config.timeouts;
        self.draining.cancel();
        info!(
            delay = ?timeouts.shutdown_delay,
            "draining: /readyz answers 503, still serving until the delay is over"
        );
        tokio::time::sleep(timeouts.shutdown_delay).await;
        let grace = timeouts.shutdown_grace;
        info!(
            ?grace,
            "shutting down: no new connections, finishing in-flight work"
        );
        self.stop.cancel();
        self.shared.tasks.close();
        if tokio::time::timeout(grace, self.shared.tasks.wait())
            .await
            .is_err()
        {
            warn!("grace period over; closing the connections still open");
            self.shared.kill_all();
            let _ =
                tokio::time::timeout(std::time::Duration::from_secs(1), self.shared.tasks.wait())
                    .await;
        }
        self.admin_stop.cancel();
        info!("shut down");
    }
}

impl Control for Gateway {
    fn snapshot(&self) -> Arc<Snapshot> {
        Gateway::snapshot(self)
    }

    fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    fn config_path(&self) -> &Path {
        &self.config_path
    }

    fn listener_addrs(&self) -> Vec<ListenerAddr> {
        Gateway::listener_addrs(self)
    }

    fn admin_addr(&self) -> Option<SocketAddr> {
        Gateway::admin_addr(self)
    }

    fn last_reload(&self) -> Option<ReloadRecord> {
        Gateway::last_reload(self)
    }

    fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    fn reload(&self) -> ReloadFuture<'_> {
        Box::pin(Gateway::reload(self))
    }

    fn apply_ingress(&self, model: Arc<crate::k8s::ingress::model::Model>) -> ApplyFuture<'_> {
        Box::pin(Gateway::apply_ingress(self, model))
    }

    fn apply_gateway(
        &self,
        served: Arc<crate::k8s::gateway::serve::Served>,
    ) -> GatewayApplyFuture<'_> {
        Box::pin(Gateway::apply_gateway(self, served))
    }

    fn ingress_status(&self) -> Option<serde_json::Value> {
        self.ingress.get().map(|p| p.status(&self.snapshot()))
    }

    fn gateway_status(&self) -> Option<serde_json::Value> {
        self.ingress.get().and_then(|p| p.gateway_status())
    }

    fn root_status(&self) -> Option<serde_json::Value> {
        self.root.get().map(|r| r.status())
    }

    fn runtime_status(&self) -> Option<serde_json::Value> {
        // The control runtime (admin, reloads, watches of leaves) and every serving thread's.
        let alive = |h: &tokio::runtime::Handle| h.metrics().num_alive_tasks();
        let control = tokio::runtime::Handle::try_current().map_or(0, |h| alive(&h));
        let serving: Vec<usize> = self.workers.handles().iter().map(alive).collect();
        Some(serde_json::json!({
            "tokio_tasks": control + serving.iter().sum::<usize>(),
            "tokio_tasks_control": control,
            "tokio_tasks_serving": serving,
            "serving_threads": self.workers.len(),
            "open_sessions": self.shared.sessions.len(),
        }))
    }
}

/// Locks `mutex`, recovering the data if a thread panicked while holding it: the lists
/// guarded here stay consistent at every await-free step, so a panic elsewhere must not
/// take listener bookkeeping down with it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads and validates the config on a blocking thread: it reads files and may be large.
/// `cache` keeps the parsed route sections for the next reload.
async fn load_blocking(
    path: PathBuf,
    cache: Arc<Mutex<ParseCache>>,
) -> Result<Config, ReloadError> {
    tokio::task::spawn_blocking(move || Config::load_cached(&path, &mut lock(&cache)))
        .await
        .map_err(|e| ReloadError::Interrupted(e.to_string()))?
        .map_err(ReloadError::Config)
}
