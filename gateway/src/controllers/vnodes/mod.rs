//! Virtual nodes: the leader election on the root cluster and, while this replica leads,
//! the writer that keeps every `[[virtual_node]]` published.
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
//!
//! - `state`: what `/status` shows (leadership, each node's last write);
//! - `writer`: one term's writer, its tick and the patch-mode nodes;
//! - `own`: an `own` node's steps: leaf facts, readiness, the Node, its status, its Lease.

mod own;
mod state;
mod writer;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::election::{Elector, Leadership};
use crate::config::KubernetesConfig;
use crate::control::Control;
use crate::k8s::root::connect;

pub use self::state::RootState;
use self::state::lock;
use self::writer::{MAX_BACKOFF, Writer};

/// Starts the election and the writer when the config has `[kubernetes]`; they run until
/// `stop`. The returned state feeds `/status`.
pub fn spawn(gateway: Arc<dyn Control>, stop: CancellationToken) -> Option<Arc<RootState>> {
    let config = gateway.snapshot().config.kubernetes.clone()?;
    let state = Arc::new(RootState::new(config.identity.clone()));
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
