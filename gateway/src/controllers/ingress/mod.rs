//! The Ingress provider at runtime: reflectors on the root cluster, the debounced rebuild
//! that swaps Ingress routes into the snapshot, and the leader's status and Event writers.
//!
//! Five reflectors (`watcher(..).default_backoff().reflect(writer)`, each restarted with
//! backoff by kube-runtime) keep Ingresses, IngressClasses, Services, EndpointSlices and
//! `kubernetes.io/tls` Secrets in memory. Any change that can alter routes is noted (which
//! objects) and wakes the builder; once every reflector has listed, it waits for a short
//! quiet spell ([`rebuild::DEBOUNCE`], at most [`rebuild::MAX_WAIT`] after the first change), updates the
//! model on a blocking thread (a [`crate::k8s::ingress::Builder`] kept across builds,
//! which translates and merges again only what the noted objects concern) and hands it to
//! the gateway, which swaps it in with the same lock and store as a config reload. A
//! change to an Ingress's status alone (the leader's own writes among them) does not
//! rebuild.
//!
//! While this replica leads, the writer puts `status.loadBalancer` on served Ingresses and
//! Events on skipped ones; it starts with each term and is dropped when the term ends.
//! Nothing here serves a request or changes a route by hand.
//!
//! - `state`: the provider's report and wake-ups (what `/status` shows);
//! - `reflectors`: the five watches and what wakes the builder;
//! - `rebuild`: debounce, build, apply;
//! - `leader`: Ingress statuses and Events, one term at a time.

mod leader;
mod rebuild;
mod reflectors;
mod state;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::election::Leadership;
use crate::config::KubernetesConfig;
use crate::control::Control;
use crate::k8s::ingress::model::Model;
use crate::k8s::root;

pub use self::state::IngressProvider;
use self::state::lock;

const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Starts the provider when the config has `[kubernetes.ingress]`: it connects, watches
/// and rebuilds until `stop`; `leadership` says when this replica may write statuses and
/// Events. `[kubernetes]` is read once, here; the ingress settings are read from the
/// snapshot at every build.
pub fn spawn(
    gateway: Arc<dyn Control>,
    leadership: watch::Receiver<Leadership>,
    stop: CancellationToken,
) -> Option<Arc<IngressProvider>> {
    let kubernetes = gateway.snapshot().config.kubernetes.clone()?;
    kubernetes.ingress.as_ref()?;
    let provider = Arc::new(IngressProvider::new());
    let running = provider.clone();
    tokio::spawn(async move {
        let Some(client) = connect(&kubernetes, &running, &stop).await else {
            return;
        };
        let stores = reflectors::start_reflectors(&client, &running, &stop);
        let (models_tx, models_rx) = watch::channel::<Option<Arc<Model>>>(None);
        tokio::spawn(leader::lead(
            client,
            gateway.clone(),
            running.clone(),
            stores.ingresses.clone(),
            models_rx,
            leadership,
            kubernetes.identity.clone(),
            stop.clone(),
        ));
        rebuild::rebuild_loop(gateway, running, stores, models_tx, stop).await;
    });
    Some(provider)
}

async fn connect(
    config: &KubernetesConfig,
    provider: &IngressProvider,
    stop: &CancellationToken,
) -> Option<kube::Client> {
    let mut backoff = Duration::from_secs(1);
    loop {
        match root::connect(config).await {
            Ok(c) => {
                lock(&provider.report).connect_error = None;
                return Some(c);
            }
            Err(e) => {
                warn!(error = %e, "ingress: cannot build the root cluster's client; retrying");
                lock(&provider.report).connect_error = Some(e.to_string());
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
