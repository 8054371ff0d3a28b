//! One leadership term's writer: every tick it reads the current snapshot and reconciles
//! each virtual node (`own` nodes in `own.rs`; `patch` nodes here), retrying a failing one
//! with backoff so it never holds up the others.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::state::RootState;
use crate::config::{KubernetesConfig, VirtualNodeConfig, VirtualNodeKind};
use crate::control::Control;
use crate::k8s::vnode::{self, LeafFacts};
use crate::metrics::RootWriteLabels;
use crate::snapshot::Snapshot;

/// How often the writer reconciles every virtual node.
pub(super) const TICK: Duration = Duration::from_secs(1);
/// An `own` node's status is written when it changes and at least this often.
pub(super) const STATUS_RESYNC: Duration = Duration::from_secs(60);
/// One call to the root or a leaf may take this long before it counts as failed.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest wait between retries of a failing virtual node.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Where kubelets' heartbeat Leases live.
pub(super) const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// One leadership term's writer and what it remembers between ticks.
pub(super) struct Writer {
    pub(super) gateway: Arc<dyn Control>,
    pub(super) client: kube::Client,
    pub(super) config: KubernetesConfig,
    pub(super) state: Arc<RootState>,
    pub(super) nodes: HashMap<String, NodeMemory>,
}

/// Per virtual node (own) or per matched Node (patch).
#[derive(Default)]
pub(super) struct NodeMemory {
    /// The metadata and spec last written (own): rewritten when the config changes.
    pub(super) meta: Option<Value>,
    /// The status last written without timestamps, and when.
    pub(super) status: Option<(Value, Instant)>,
    /// When the Ready condition last changed, RFC 3339.
    pub(super) transition: Option<(bool, String)>,
    pub(super) lease_renewed: Option<Instant>,
    pub(super) facts: Option<LeafFacts>,
    pub(super) unsynced_since: Option<Instant>,
    /// The last time the leaf answered a call of ours (its nodes and version).
    pub(super) leaf_answered: Option<Instant>,
    /// The last time its nodes and version were asked for, answered or not.
    pub(super) leaf_tried: Option<Instant>,
    /// The last list the rewriter (or the rule) gave: kept when the plugin fails.
    pub(super) addresses: Option<Vec<Value>>,
    /// After a failure, nothing is tried before this.
    pub(super) retry_at: Option<Instant>,
    pub(super) backoff: Duration,
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
pub(super) enum WriteError {
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0}: no answer within {CALL_TIMEOUT:?}")]
    Timeout(String),
    #[error("{0}")]
    Other(String),
}

pub(super) async fn call<T>(
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

pub(super) fn not_found(e: &WriteError) -> bool {
    matches!(e, WriteError::Api { source: kube::Error::Api(s), .. } if s.code == 404)
}

pub(super) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

impl Writer {
    pub(super) async fn run(&mut self) {
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

    pub(super) fn port(&self) -> Result<u16, WriteError> {
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

    pub(super) fn write_metric(&self, kind: &'static str, ok: bool) {
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
    pub(super) async fn addresses(
        &self,
        vn: &VirtualNodeConfig,
        node: &str,
        current: &[Value],
        last: Option<&Vec<Value>>,
        snapshot: &Snapshot,
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
    /// Patch mode: every Node the selector matches gets leafgate's addresses and kubelet
    /// port back whenever they differ; nothing else of it is written.
    async fn patch_all(
        &mut self,
        vn: &VirtualNodeConfig,
        selector: &str,
        snapshot: &Snapshot,
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
