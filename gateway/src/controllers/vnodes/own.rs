//! An `own` virtual node's steps, one tick at a time: the leaf's capacity and version
//! (at the heartbeat's pace), readiness, the Node object (created, or its labels and taints
//! rewritten on change), its status (on change and at least every minute) and its
//! heartbeat Lease. The decisions are the pure functions at the end, unit-tested; the
//! writes go through `call` with a timeout.

use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::writer::{
    NODE_LEASE_NAMESPACE, NodeMemory, STATUS_RESYNC, WriteError, Writer, call, not_found,
    now_rfc3339,
};
use crate::config::{VirtualNodeConfig, VirtualNodeKind};
use crate::k8s::Leaf;
use crate::k8s::vnode::{self, LeafFacts, Readiness};
use crate::snapshot::Snapshot;

impl Writer {
    /// One tick of an `own` node: each step in turn; the first failing write ends the tick
    /// (the caller backs off).
    pub(super) async fn own(
        &self,
        vn: &VirtualNodeConfig,
        name: &str,
        memory: &mut NodeMemory,
        snapshot: &Snapshot,
    ) -> Result<(), WriteError> {
        let VirtualNodeKind::Own { labels, taints, .. } = &vn.mode else {
            return Ok(());
        };
        let port = self.port()?;
        let leaf = snapshot.leaves.get(&vn.leaf).map(|l| &**l);
        if let Some(leaf) = leaf.filter(|_| facts_due(memory.leaf_tried, self.config.heartbeat)) {
            self.refresh_facts(vn, name, leaf, memory).await;
        }
        let readiness = self.readiness(vn, leaf, memory);
        let facts = memory.facts.clone().unwrap_or_default();
        let addresses = self
            .addresses(vn, name, &[], memory.addresses.as_ref(), snapshot)
            .await;
        memory.addresses = Some(addresses.clone());

        let meta = vnode::own_node(name, labels, taints);
        if memory.meta.as_ref() != Some(&meta) {
            self.write_node(name, &meta).await?;
            memory.meta = Some(meta);
            memory.status = None;
        }
        let status = vnode::own_status(&facts, &readiness, &addresses, port);
        if status_due(memory.status.as_ref(), &status, STATUS_RESYNC) {
            self.write_status(name, status, readiness == Readiness::Ready, memory)
                .await?;
        }
        if memory
            .lease_renewed
            .is_none_or(|at| at.elapsed() >= self.config.heartbeat)
        {
            self.heartbeat(name).await?;
            memory.lease_renewed = Some(Instant::now());
        }
        Ok(())
    }

    /// Capacity and version, kept when the leaf fails. A failed try waits for the next
    /// heartbeat too: an unanswering leaf must not hold up every tick (and the other
    /// nodes) for its timeouts.
    async fn refresh_facts(
        &self,
        vn: &VirtualNodeConfig,
        name: &str,
        leaf: &Leaf,
        memory: &mut NodeMemory,
    ) {
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

    /// Ready: the leaf's pod index in sync or the leaf answering (a resumed watch with
    /// nothing to report stays unsynced), else unreachable for less than `not_ready_after`.
    fn readiness(
        &self,
        vn: &VirtualNodeConfig,
        leaf: Option<&Leaf>,
        memory: &mut NodeMemory,
    ) -> Readiness {
        let watch = leaf.map(|l| l.watch_state()).unwrap_or_default();
        let answered = memory
            .leaf_answered
            .is_some_and(|at| at.elapsed() < self.config.heartbeat * 2);
        memory.unsynced_since = unsynced_since(
            memory.unsynced_since,
            watch.synced || answered,
            Instant::now(),
        );
        vnode::readiness(
            memory.unsynced_since.map(|t| t.elapsed()),
            vn.not_ready_after,
            watch.last_error.as_ref().map(|(_, e)| e.as_str()),
        )
    }

    /// The Node itself: created when missing, its labels and taints patched when it exists.
    async fn write_node(&self, name: &str, meta: &Value) -> Result<(), WriteError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node =
            serde_json::from_value(meta.clone()).map_err(|e| WriteError::Other(e.to_string()))?;
        match call(
            "create the Node",
            nodes.create(&PostParams::default(), &node),
        )
        .await
        {
            Ok(_) => {
                info!(node = name, "created the virtual node");
                self.write_metric("node", true);
                Ok(())
            }
            Err(WriteError::Api {
                source: kube::Error::Api(s),
                ..
            }) if s.code == 409 => {
                let patch = node_update(meta);
                let r = call(
                    "patch the Node's labels and taints",
                    nodes.patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
                )
                .await;
                self.write_metric("node", r.is_ok());
                r.map(drop)
            }
            Err(e) => {
                self.write_metric("node", false);
                Err(e)
            }
        }
    }

    /// The Node's status with this write's heartbeat and the Ready condition's transition.
    async fn write_status(
        &self,
        name: &str,
        status: Value,
        ready: bool,
        memory: &mut NodeMemory,
    ) -> Result<(), WriteError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let now = now_rfc3339();
        let transition = transition_time(memory.transition.as_ref(), ready, &now);
        let body = stamped(&status, &now, &transition);
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
        Ok(())
    }

    /// The heartbeat Lease in `kube-node-lease`: renewed, or created when missing.
    async fn heartbeat(&self, name: &str) -> Result<(), WriteError> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NODE_LEASE_NAMESPACE);
        let renew = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        let spec = lease_spec(name, self.config.heartbeat, &renew);
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
}

/// Whether the leaf's capacity and version are due again: never tried, or last tried a
/// heartbeat ago.
fn facts_due(last_tried: Option<Instant>, heartbeat: Duration) -> bool {
    last_tried.is_none_or(|at| at.elapsed() >= heartbeat)
}

/// Since when the leaf has been out of reach: cleared while it is reachable, started at
/// `now` when it first is not, kept while it stays so.
fn unsynced_since(since: Option<Instant>, reachable: bool, now: Instant) -> Option<Instant> {
    match (reachable, since) {
        (true, _) => None,
        (false, None) => Some(now),
        (false, kept) => kept,
    }
}

/// A status is written when it differs from the last one written or that one is older
/// than `resync`.
fn status_due(last: Option<&(Value, Instant)>, status: &Value, resync: Duration) -> bool {
    last.is_none_or(|(written, at)| written != status || at.elapsed() >= resync)
}

/// The Ready condition's `lastTransitionTime`: kept while readiness stays, `now` when it
/// turns.
fn transition_time(last: Option<&(bool, String)>, ready: bool, now: &str) -> String {
    match last {
        Some((was, at)) if *was == ready => at.clone(),
        _ => now.to_string(),
    }
}

/// The status as written: the Ready condition stamped with this heartbeat.
fn stamped(status: &Value, now: &str, transition: &str) -> Value {
    let mut body = status.clone();
    body["conditions"][0]["lastHeartbeatTime"] = json!(now);
    body["conditions"][0]["lastTransitionTime"] = json!(transition);
    body
}

/// What is rewritten of a Node that already exists: its labels and taints, nothing else.
fn node_update(meta: &Value) -> Value {
    json!({"metadata": {"labels": meta["metadata"]["labels"]}, "spec": {"taints": meta["spec"]["taints"]}})
}

/// The heartbeat Lease's spec: held by the node, lasting four heartbeats (at least 1 s).
fn lease_spec(name: &str, heartbeat: Duration, renew: &str) -> Value {
    let duration = heartbeat.as_secs().saturating_mul(4).max(1);
    json!({"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": renew})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_asked_for_once_a_heartbeat() {
        assert!(facts_due(None, Duration::from_secs(10)));
        assert!(!facts_due(Some(Instant::now()), Duration::from_secs(10)));
        assert!(facts_due(Some(Instant::now()), Duration::ZERO));
    }

    #[test]
    fn unreachable_since_starts_once_and_clears_on_reach() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(5);
        assert_eq!(unsynced_since(None, false, t0), Some(t0));
        assert_eq!(unsynced_since(Some(t0), false, later), Some(t0));
        assert_eq!(unsynced_since(Some(t0), true, later), None);
        assert_eq!(unsynced_since(None, true, later), None);
    }

    #[test]
    fn status_is_written_on_change_and_on_resync() {
        let status = json!({"phase": "Running"});
        let minute = Duration::from_secs(60);
        assert!(status_due(None, &status, minute));
        let fresh = (status.clone(), Instant::now());
        assert!(!status_due(Some(&fresh), &status, minute));
        assert!(status_due(Some(&fresh), &json!({"phase": "x"}), minute));
        assert!(status_due(Some(&fresh), &status, Duration::ZERO));
    }

    #[test]
    fn transition_time_moves_only_when_readiness_turns() {
        let at = (true, "2026-01-01T00:00:00Z".to_string());
        let now = "2026-01-02T00:00:00Z";
        assert_eq!(transition_time(Some(&at), true, now), at.1);
        assert_eq!(transition_time(Some(&at), false, now), now);
        assert_eq!(transition_time(None, true, now), now);
    }

    #[test]
    fn the_ready_condition_is_stamped_and_the_rest_kept() {
        let status = json!({"conditions": [{"type": "Ready", "status": "True"}], "capacity": {"pods": "110"}});
        let body = stamped(&status, "now", "then");
        assert_eq!(body["conditions"][0]["lastHeartbeatTime"], "now");
        assert_eq!(body["conditions"][0]["lastTransitionTime"], "then");
        assert_eq!(body["conditions"][0]["status"], "True");
        assert_eq!(body["capacity"], status["capacity"]);
    }

    #[test]
    fn an_existing_node_gets_only_its_labels_and_taints_rewritten() {
        let meta = json!({"metadata": {"name": "vn", "labels": {"a": "b"}}, "spec": {"taints": [{"key": "k"}], "podCIDR": "x"}});
        assert_eq!(
            node_update(&meta),
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"taints": [{"key": "k"}]}})
        );
    }

    #[test]
    fn the_lease_lasts_four_heartbeats() {
        let spec = lease_spec("vn", Duration::from_secs(10), "t");
        assert_eq!(spec["leaseDurationSeconds"], 40);
        assert_eq!(spec["holderIdentity"], "vn");
        assert_eq!(
            lease_spec("vn", Duration::from_millis(100), "t")["leaseDurationSeconds"],
            1
        );
    }
}
