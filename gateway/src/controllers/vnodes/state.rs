//! What `/status` shows about the root cluster: who leads and how each virtual node fares.
//! The election and the writer fill it; nothing here talks to the root cluster.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::super::election::Leadership;

/// What `/status` shows about the root cluster: who leads and how each node fares.
pub struct RootState {
    pub(super) identity: String,
    pub(super) leadership: Mutex<Option<watch::Receiver<Leadership>>>,
    /// Who leads, for the other leader-only writers (Ingress status and Events): a copy
    /// of the elector's channel that exists from the start, before the client connects.
    pub(super) published: watch::Sender<Leadership>,
    pub(super) connect_error: Mutex<Option<String>>,
    pub(super) nodes: Mutex<BTreeMap<String, NodeReport>>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct NodeReport {
    pub(super) last_written: Option<SystemTime>,
    pub(super) ready: Option<bool>,
    pub(super) warning: Option<String>,
    pub(super) error: Option<String>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RootState {
    pub(super) fn new(identity: String) -> RootState {
        RootState {
            identity,
            leadership: Mutex::new(None),
            published: watch::Sender::new(Leadership::default()),
            connect_error: Mutex::new(None),
            nodes: Mutex::new(BTreeMap::new()),
        }
    }

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

    pub(super) fn report(&self, node: &str, f: impl FnOnce(&mut NodeReport)) {
        f(lock(&self.nodes).entry(node.to_string()).or_default());
    }
}
