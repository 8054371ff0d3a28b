//! The route provider of both Kubernetes sources at runtime, Ingress
//! (`[kubernetes.ingress]`) and the Gateway API (`[kubernetes.gateway]`): reflectors on the
//! root cluster, the debounced rebuild that swaps their routes into the snapshot, and the
//! leader's status and Event writers.
//!
//! Reflectors (`watcher(..).default_backoff().reflect(writer)`, each restarted with
//! backoff by kube-runtime) keep Services, EndpointSlices and `kubernetes.io/tls` Secrets
//! in memory for both sources, Ingresses and IngressClasses for the first, GatewayClasses,
//! Gateways, HTTPRoutes, ReferenceGrants and Namespaces for the second. Any change that can
//! alter routes is noted (which objects) and wakes the builder; once every reflector has
//! listed, it waits for a short quiet spell ([`rebuild::DEBOUNCE`], at most
//! [`rebuild::MAX_WAIT`] after the first change), updates the Ingress model on a blocking
//! thread (a [`crate::k8s::ingress::Builder`] kept across builds, which translates and
//! merges again only what the noted objects concern), translates the Gateway API objects
//! when one of theirs changed, and hands both to the gateway, which swaps them in with the
//! same lock and store as a config reload (and binds the Gateways' addresses). A change to
//! a status alone (the leader's own writes among them) does not rebuild.
//!
//! While this replica leads, the writers put `status.loadBalancer` on served Ingresses,
//! Events on skipped ones, and the Gateway API statuses; they start with each term and
//! are dropped when the term ends. Nothing here serves a request or changes a route by hand.
//!
//! - `state`: the provider's report and wake-ups (what `/status` shows);
//! - `reflectors`: the watches and what wakes the builder;
//! - `settings`: what both sources read of the config alike;
//! - `rebuild`: debounce, the Ingress build, apply; `gateway`: the Gateway API build;
//! - `leader`: statuses and Events, one term at a time.

mod gateway;
mod leader;
mod rebuild;
mod reflectors;
mod settings;
mod state;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::election::Leadership;
use crate::config::KubernetesConfig;
use crate::control::Control;
use crate::k8s::gateway::model::Model as GatewayModel;
use crate::k8s::ingress::model::Model;
use crate::k8s::root;

pub use self::state::IngressProvider;
use self::state::lock;

const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Starts the provider when the config has `[kubernetes.ingress]` or
/// `[kubernetes.gateway]` (the sources it serves are those it started with): it connects, watches
/// and rebuilds until `stop`; `leadership` says when this replica may write statuses and
/// Events. `[kubernetes]` is read once, here; the ingress settings are read from the
/// snapshot at every build.
pub fn spawn(
    gateway: Arc<dyn Control>,
    leadership: watch::Receiver<Leadership>,
    stop: CancellationToken,
) -> Option<Arc<IngressProvider>> {
    let kubernetes = gateway.snapshot().config.kubernetes.clone()?;
    let (ingress, gateway_api) = (kubernetes.ingress.is_some(), kubernetes.gateway.is_some());
    if !ingress && !gateway_api {
        return None;
    }
    let provider = Arc::new(IngressProvider::new(gateway_api));
    let running = provider.clone();
    tokio::spawn(async move {
        let Some(client) = connect(&kubernetes, &running, &stop).await else {
            return;
        };
        let stores = reflectors::start_reflectors(&client, &running, ingress, gateway_api, &stop);
        let (models_tx, models_rx) = watch::channel::<Option<Arc<Model>>>(None);
        let (gateway_tx, gateway_rx) = watch::channel::<Option<Arc<GatewayModel>>>(None);
        tokio::spawn(leader::lead(
            client,
            gateway.clone(),
            running.clone(),
            stores.clone(),
            leader::Models {
                ingress: models_rx,
                gateway: gateway_rx,
            },
            leadership,
            kubernetes.identity.clone(),
            stop.clone(),
        ));
        rebuild::rebuild_loop(gateway, running, stores, models_tx, gateway_tx, stop).await;
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
