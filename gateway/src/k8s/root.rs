//! The root cluster: leafgate's client to it, the leader election, and, while this replica
//! leads, the writer that keeps every `[[virtual_node]]` published.
//!
//! The writer runs only inside a leadership term: it starts when the elector reports this
//! replica leads and is dropped, with any request in flight, the moment it does not. Each
//! term starts from fresh reads. Every tick it reads the current snapshot, so a reload
//! (a tenant's `address_rewriter` or its config, a virtual node added) is followed within
//! a tick; `[kubernetes]` itself is read once at start.
//!
//! Patch-mode nodes are re-read every tick rather than watched: the writer must notice an
//! owner overwriting the addresses within seconds, and a tick's list by label selector is
//! one small request that also covers a node appearing or leaving the selector.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::{KubernetesConfig, VirtualNodeConfig, VirtualNodeKind};
use crate::control::Control;
use crate::metrics::RootWriteLabels;

use super::election::{Elector, Leadership};
use super::vnode::{self, LeafFacts, Readiness};

/// How often the writer reconciles every virtual node.
const TICK: Duration = Duration::from_secs(1);
/// An `own` node's status is written when it changes and at least this often.
const STATUS_RESYNC: Duration = Duration::from_secs(60);
/// One call to the root or a leaf may take this long before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest wait between retries of a failing virtual node.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Where kubelets' heartbeat Leases live.
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("root cluster kubeconfig {path}: {reason}")]
    Kubeconfig { path: String, reason: String },
    #[error("root cluster client: {0}")]
    Client(String),
}

/// What `/status` shows about the root cluster: who leads and how each node fares.
pub struct RootState {
    identity: String,
    leadership: Mutex<Option<watch::Receiver<Leadership>>>,
    /// Who leads, for the other leader-only writers (Ingress status and Events): a copy
    /// of the elector's channel that exists from the start, before the client connects.
    published: watch::Sender<Leadership>,
    connect_error: Mutex<Option<String>>,
    nodes: Mutex<BTreeMap<String, NodeReport>>,
}

#[derive(Debug, Clone, Default)]
struct NodeReport {
    last_written: Option<SystemTime>,
    ready: Option<bool>,
    warning: Option<String>,
    error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RootState {
    /// Who leads as this replica last saw it.
    pub fn leadership(&self) -> Leadership {
        lock(&self.leadership)
            .as_ref()
            .map(|rx| rx.borrow().clone())
            .unwrap_or_default()
    }

    /// Follows who leads: `leading` turns true when this replica's term starts and false
    /// the moment it ends (or before the election has started).
    pub fn subscribe(&self) -> watch::Receiver<Leadership> {
        self.published.subscribe()
    }

    /// The `kubernetes` section of `/status`.
    pub fn status(&self) -> Value {
        let l = self.leadership();
        let nodes: Vec<Value> = lock(&self.nodes)
            .iter()
            .map(|(name, r)| {
                json!({
                    "node": name,
                    "ready": r.ready,
                    "last_written": r.last_written.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
                    "warning": r.warning,
                    "error": r.error,
                })
            })
            .collect();
        json!({
            "identity": self.identity,
            "leading": l.leading,
            "leader": l.holder,
            "term": l.term,
            "election_error": l.error,
            "connect_error": *lock(&self.connect_error),
            "virtual_nodes": nodes,
        })
    }

    fn report(&self, node: &str, f: impl FnOnce(&mut NodeReport)) {
        f(lock(&self.nodes).entry(node.to_string()).or_default());
    }
}

/// Builds the root cluster's client: its kubeconfig, else the in-cluster service account.
pub async fn connect(config: &KubernetesConfig) -> Result<kube::Client, RootError> {
    let kube_config = match &config.kubeconfig {
        Some(path) => {
            let err = |reason: String| RootError::Kubeconfig {
                path: path.display().to_string(),
                reason,
            };
            let file = kube::config::Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
            let options = kube::config::KubeConfigOptions {
                context: config.context.clone(),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| err(e.to_string()))?
        }
        None => kube::Config::incluster().map_err(|e| RootError::Client(e.to_string()))?,
    };
    kube::Client::try_from(kube_config).map_err(|e| RootError::Client(e.to_string()))
}

/// Starts the election and the writer when the config has `[kubernetes]`; they run until
/// `stop`. The returned state feeds `/status`.
pub fn spawn(gateway: Arc<dyn Control>, stop: CancellationToken) -> Option<Arc<RootState>> {
    let config = gateway.snapshot().config.kubernetes.clone()?;
    let state = Arc::new(RootState {
        identity: config.identity.clone(),
        leadership: Mutex::new(None),
        published: watch::Sender::new(Leadership::default()),
        connect_error: Mutex::new(None),
        nodes: Mutex::new(BTreeMap::new()),
    });
    let running = state.clone();
    tokio::spawn(async move {
        let mut backoff = Duration::from_secs(1);
        let client = loop {
            match connect(&config).await {
                Ok(c) => break c,
                Err(e) => {
                    warn!(error = %e, "cannot build the root cluster's client; retrying");
                    *lock(&running.connect_error) = Some(e.to_string());
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        };
        *lock(&running.connect_error) = None;
        let (elector, rx) = Elector::new(
            client.clone(),
            &config.namespace,
            &config.identity,
            config.election,
        );
        *lock(&running.leadership) = Some(rx.clone());
        let election = tokio::spawn(elector.run(stop.clone()));
        tokio::spawn(publish(rx.clone(), running.clone()));
        lead(gateway, client, config, running, rx, stop).await;
        let _ = election.await;
    });
    Some(state)
}

/// Copies every change of leadership onto the state's own channel until the elector ends;
/// then this replica no longer leads.
async fn publish(mut rx: watch::Receiver<Leadership>, state: Arc<RootState>) {
    loop {
        state.published.send_replace(rx.borrow_and_update().clone());
        if rx.changed().await.is_err() {
            state.published.send_modify(|l| l.leading = false);
            return;
        }
    }
}

/// Runs a writer for each term this replica leads, dropping it the moment the term ends.
async fn lead(
    gateway: Arc<dyn Control>,
    client: kube::Client,
    config: KubernetesConfig,
    state: Arc<RootState>,
    mut rx: watch::Receiver<Leadership>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            r = rx.wait_for(|l| l.leading) => if r.is_err() { return },
        }
        gateway.metrics().leader.set(1);
        info!(identity = %config.identity, "writing virtual nodes");
        let mut writer = Writer {
            gateway: gateway.clone(),
            client: client.clone(),
            config: config.clone(),
            state: state.clone(),
            nodes: HashMap::new(),
        };
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = rx.wait_for(|l| !l.leading) => {}
            _ = writer.run() => {}
        }
        gateway.metrics().leader.set(0);
        if stop.is_cancelled() {
            return;
        }
        info!(identity = %config.identity, "no longer the leader: stopped writing");
    }
}

/// One leadership term's writer and what it remembers between ticks.
struct Writer {
    gateway: Arc<dyn Control>,
    client: kube::Client,
    config: KubernetesConfig,
    state: Arc<RootState>,
    nodes: HashMap<String, NodeMemory>,
}

/// Per virtual node (own) or per matched Node (patch).
#[derive(Default)]
struct NodeMemory {
    /// The metadata and spec last written (own): rewritten when the config changes.
    meta: Option<Value>,
    /// The status last written without timestamps, and when.
    status: Option<(Value, Instant)>,
    /// When the Ready condition last changed, RFC 3339.
    transition: Option<(bool, String)>,
    lease_renewed: Option<Instant>,
    facts: Option<LeafFacts>,
    unsynced_since: Option<Instant>,
    /// The last time the leaf answered a call of ours (its nodes and version).
    leaf_answered: Option<Instant>,
    /// The last time its nodes and version were asked for, answered or not.
    leaf_tried: Option<Instant>,
    /// The last list the rewriter (or the rule) gave: kept when the plugin fails.
    addresses: Option<Vec<Value>>,
    /// After a failure, nothing is tried before this.
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl NodeMemory {
    fn failed(&mut self) {
        self.backoff = (self.backoff * 2).clamp(TICK, MAX_BACKOFF);
        self.retry_at = Some(Instant::now() + self.backoff);
    }

    fn succeeded(&mut self) {
        self.backoff = Duration::ZERO;
        self.retry_at = None;
    }

    fn waiting(&self) -> bool {
        self.retry_at.is_some_and(|at| Instant::now() < at)
    }
}

/// A failed call to the root cluster or a leaf, for logs and `/status`.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0}: no answer within {CALL_TIMEOUT:?}")]
    Timeout(String),
    #[error("{0}")]
    Other(String),
}

async fn call<T>(
    what: impl Into<String>,
    f: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, WriteError> {
    let what = what.into();
    match tokio::time::timeout(CALL_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(source)) => Err(WriteError::Api { what, source }),
        Err(_) => Err(WriteError::Timeout(what)),
    }
}

fn not_found(e: &WriteError) -> bool {
    matches!(e, WriteError::Api { source: kube::Error::Api(s), .. } if s.code == 404)
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

impl Writer {
    async fn run(&mut self) {
        loop {
            let snapshot = self.gateway.snapshot();
            for vn in &snapshot.config.virtual_nodes {
                match &vn.mode {
                    VirtualNodeKind::Own { name, .. } => {
                        let name = name.clone();
                        let mut memory = self.nodes.remove(&name).unwrap_or_default();
                        if !memory.waiting() {
                            match self.own(vn, &name, &mut memory, &snapshot).await {
                                Ok(()) => {
                                    memory.succeeded();
                                    self.state.report(&name, |r| r.error = None);
                                }
                                Err(e) => {
                                    warn!(node = %name, error = %e, "cannot publish the virtual node; retrying with backoff");
                                    memory.failed();
                                    self.state.report(&name, |r| r.error = Some(e.to_string()));
                                }
                            }
                        }
                        self.nodes.insert(name, memory);
                    }
                    VirtualNodeKind::Patch { selector } => {
                        if let Err(e) = self.patch_all(vn, selector, &snapshot).await {
                            warn!(selector = %selector, error = %e, "cannot patch the virtual nodes");
                            self.state
                                .report(&vn.describe(), |r| r.error = Some(e.to_string()));
                        } else {
                            self.state.report(&vn.describe(), |r| r.error = None);
                        }
                    }
                }
            }
            tokio::time::sleep(TICK).await;
        }
    }

    fn port(&self) -> Result<u16, WriteError> {
        // Validation requires it whenever there are virtual nodes to write.
        let Some(listener) = &self.config.node_api_listener else {
            return Err(WriteError::Other(
                "[kubernetes] has no `node_api_listener`".into(),
            ));
        };
        self.gateway
            .listener_addrs()
            .into_iter()
            .find(|a| *a.name == **listener)
            .map(|a| a.local.port())
            .ok_or_else(|| WriteError::Other(format!("listener `{listener}` is not running")))
    }

    /// What virtual nodes publish as the gateway's address; validation requires it
    /// whenever there are virtual nodes.
    fn gateway_address(&self) -> &str {
        self.config.gateway_address.as_deref().unwrap_or_default()
    }

    fn write_metric(&self, kind: &'static str, ok: bool) {
        self.gateway
            .metrics()
            .root_writes
            .get_or_create(&RootWriteLabels {
                kind,
                outcome: if ok { "ok" } else { "error" },
            })
            .inc();
    }

    /// The addresses for `node`; a plugin failure keeps the last good list.
    async fn addresses(
        &self,
        vn: &VirtualNodeConfig,
        node: &str,
        current: &[Value],
        last: Option<&Vec<Value>>,
        snapshot: &crate::snapshot::Snapshot,
    ) -> Vec<Value> {
        let plugins = vn
            .tenant
            .as_ref()
            .and_then(|t| snapshot.tenants.get(t))
            .map(|t| t.plugins.clone());
        match vnode::addresses(
            plugins.as_deref(),
            node,
            &vn.leaf,
            self.gateway_address(),
            &self.config.preferred_address_types,
            current,
        )
        .await
        {
            Ok(a) => {
                self.state.report(node, |r| r.warning = a.warning.clone());
                a.list
            }
            Err(e) => {
                warn!(node, error = %e, "keeping the last good address list");
                self.state.report(node, |r| r.warning = Some(e.clone()));
                last.cloned().unwrap_or_else(|| {
                    vnode::default_addresses(
                        self.gateway_address(),
                        &self.config.preferred_address_types,
                        current,
                    )
                })
            }
        }
    }

    async fn own(
        &self,
        vn: &VirtualNodeConfig,
        name: &str,
        memory: &mut NodeMemory,
        snapshot: &crate::snapshot::Snapshot,
    ) -> Result<(), WriteError> {
        let VirtualNodeKind::Own { labels, taints, .. } = &vn.mode else {
            return Ok(());
        };
        let nodes: Api<Node> = Api::all(self.client.clone());
        let port = self.port()?;

        let leaf = snapshot.leaves.get(&vn.leaf);
        // Capacity and version: refreshed at the heartbeat's pace, kept when the leaf fails.
        // A failed try waits for the next heartbeat too: an unanswering leaf must not hold
        // up every tick (and the other nodes) for its timeouts.
        let stale = memory
            .leaf_tried
            .is_none_or(|at| at.elapsed() >= self.config.heartbeat);
        if let (true, Some(leaf)) = (stale, leaf) {
            memory.leaf_tried = Some(Instant::now());
            let leaf_nodes: Api<Node> = Api::all(leaf.client());
            let listed = call(
                "list the leaf's nodes",
                leaf_nodes.list(&ListParams::default()),
            )
            .await;
            let version = call("read the leaf's version", leaf.client().apiserver_version()).await;
            match (listed, version) {
                (Ok(list), Ok(v)) => {
                    memory.leaf_answered = Some(Instant::now());
                    memory.facts = Some(LeafFacts::from_nodes(&list.items, v.git_version));
                }
                (Err(e), _) | (_, Err(e)) => {
                    warn!(node = name, leaf = %vn.leaf, error = %e, "cannot read the leaf's capacity; keeping the last");
                }
            }
        }
        // Ready: the leaf's pod index in sync or the leaf answering (a resumed watch
        // with nothing to report stays unsynced), else unreachable for less than
        // not_ready_after.
        let watch = leaf.map(|l| l.watch_state()).unwrap_or_default();
        let answered = memory
            .leaf_answered
            .is_some_and(|at| at.elapsed() < self.config.heartbeat * 2);
        if watch.synced || answered {
            memory.unsynced_since = None;
        } else if memory.unsynced_since.is_none() {
            memory.unsynced_since = Some(Instant::now());
        }
        let readiness = vnode::readiness(
            memory.unsynced_since.map(|t| t.elapsed()),
            vn.not_ready_after,
            watch.last_error.as_ref().map(|(_, e)| e.as_str()),
        );

        let facts = memory.facts.clone().unwrap_or_default();

        let addresses = self
            .addresses(vn, name, &[], memory.addresses.as_ref(), snapshot)
            .await;
        memory.addresses = Some(addresses.clone());

        // The Node itself: created when missing, labels and taints rewritten on change.
        let meta = vnode::own_node(name, labels, taints);
        if memory.meta.as_ref() != Some(&meta) {
            match call(
                "create the Node",
                nodes.create(
                    &PostParams::default(),
                    &serde_json::from_value(meta.clone())
                        .map_err(|e| WriteError::Other(e.to_string()))?,
                ),
            )
            .await
            {
                Ok(_) => {
                    info!(node = name, "created the virtual node");
                    self.write_metric("node", true);
                }
                Err(WriteError::Api {
                    source: kube::Error::Api(s),
                    ..
                }) if s.code == 409 => {
                    let patch = json!({"metadata": {"labels": meta["metadata"]["labels"]}, "spec": {"taints": meta["spec"]["taints"]}});
                    let r = call(
                        "patch the Node's labels and taints",
                        nodes.patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
                    )
                    .await;
                    self.write_metric("node", r.is_ok());
                    r?;
                }
                Err(e) => {
                    self.write_metric("node", false);
                    return Err(e);
                }
            }
            memory.meta = Some(meta);
            memory.status = None;
        }

        // Status: when it changes, and at least every minute.
        let status = vnode::own_status(&facts, &readiness, &addresses, port);
        let due = memory
            .status
            .as_ref()
            .is_none_or(|(last, at)| *last != status || at.elapsed() >= STATUS_RESYNC);
        if due {
            let ready = readiness == Readiness::Ready;
            let now = now_rfc3339();
            let transition = match &memory.transition {
                Some((was, at)) if *was == ready => at.clone(),
                _ => now.clone(),
            };
            let mut body = status.clone();
            body["conditions"][0]["lastHeartbeatTime"] = json!(now);
            body["conditions"][0]["lastTransitionTime"] = json!(transition);
            let r = call(
                "write the Node's status",
                nodes.patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": body})),
                ),
            )
            .await;
            self.write_metric("node_status", r.is_ok());
            if let Err(e) = r {
                if not_found(&e) {
                    // Deleted under us: create it again next tick.
                    memory.meta = None;
                }
                return Err(e);
            }
            if memory.transition.as_ref().map(|(r, _)| *r) != Some(ready) {
                info!(node = name, ready, "virtual node readiness changed");
            }
            memory.transition = Some((ready, transition));
            memory.status = Some((status, Instant::now()));
            self.state.report(name, |r| {
                r.last_written = Some(SystemTime::now());
                r.ready = Some(ready);
            });
        }

        // The heartbeat Lease in kube-node-lease.
        if memory
            .lease_renewed
            .is_none_or(|at| at.elapsed() >= self.config.heartbeat)
        {
            self.heartbeat(name).await?;
            memory.lease_renewed = Some(Instant::now());
        }
        Ok(())
    }

    async fn heartbeat(&self, name: &str) -> Result<(), WriteError> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NODE_LEASE_NAMESPACE);
        let renew = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        let duration = self.config.heartbeat.as_secs().saturating_mul(4).max(1);
        let spec =
            json!({"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": renew});
        let r = call(
            "renew the node's Lease",
            leases.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec})),
            ),
        )
        .await;
        let r = match r {
            Err(e) if not_found(&e) => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": NODE_LEASE_NAMESPACE},
                    "spec": spec,
                });
                let lease: Lease =
                    serde_json::from_value(lease).map_err(|e| WriteError::Other(e.to_string()))?;
                call(
                    "create the node's Lease",
                    leases.create(&PostParams::default(), &lease),
                )
                .await
                .map(drop)
            }
            other => other.map(drop),
        };
        self.write_metric("node_lease", r.is_ok());
        r
    }

    /// Patch mode: every Node the selector matches gets leafgate's addresses and kubelet
    /// port back whenever they differ; nothing else of it is written.
    async fn patch_all(
        &mut self,
        vn: &VirtualNodeConfig,
        selector: &str,
        snapshot: &crate::snapshot::Snapshot,
    ) -> Result<(), WriteError> {
        let port = self.port()?;
        let nodes: Api<Node> = Api::all(self.client.clone());
        let list = call(
            format!("list the Nodes matching `{selector}`"),
            nodes.list(&ListParams::default().labels(selector)),
        )
        .await?;
        for node in list.items {
            let Some(name) = node.metadata.name.clone() else {
                continue;
            };
            let status = serde_json::to_value(&node.status).unwrap_or(Value::Null);
            let current: Vec<Value> = status["addresses"].as_array().cloned().unwrap_or_default();
            let current_port = status["daemonEndpoints"]["kubeletEndpoint"]["Port"].as_u64();
            let key = format!("patch/{name}");
            let mut memory = self.nodes.remove(&key).unwrap_or_default();
            let desired = self
                .addresses(vn, &name, &current, memory.addresses.as_ref(), snapshot)
                .await;
            memory.addresses = Some(desired.clone());
            if desired != current || current_port != Some(u64::from(port)) {
                let patch = json!({"status": {
                    "addresses": desired,
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                }});
                let r = call(
                    format!("patch Node `{name}`'s addresses"),
                    nodes.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)),
                )
                .await;
                self.write_metric("node_status", r.is_ok());
                match r {
                    Ok(_) => {
                        info!(node = %name, "restored leafgate's addresses and kubelet port");
                        self.state.report(&name, |r| {
                            r.last_written = Some(SystemTime::now());
                            r.error = None;
                        });
                    }
                    Err(e) => {
                        warn!(node = %name, error = %e, "cannot patch the node's addresses");
                        self.state.report(&name, |r| r.error = Some(e.to_string()));
                    }
                }
            }
            self.nodes.insert(key, memory);
        }
        Ok(())
    }
}
