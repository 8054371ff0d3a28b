//! The leader's writers: while this replica leads, `status.loadBalancer` on served
//! Ingresses and Events on skipped ones, after every new model, every status-changing
//! event and every resync. A term's writer starts with the term and is dropped when it ends.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::reflector::Store;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::super::election::Leadership;
use super::state::{IngressProvider, lock};
use crate::control::Control;
use crate::k8s::ingress::events::{self, EventLog};
use crate::k8s::ingress::model::Model;
use crate::k8s::ingress::status::StatusWriter;

/// The leader re-checks every Ingress's status this often, besides after each change.
const STATUS_RESYNC: Duration = Duration::from_secs(30);
/// Status-only changes (the leader's own writes come back this way) are gathered this long
/// before the status is checked again.
const STATUS_SETTLE: Duration = Duration::from_millis(200);

/// Runs the status and Event writer for each term this replica leads.
#[allow(clippy::too_many_arguments)]
pub(super) async fn lead(
    client: kube::Client,
    gateway: Arc<dyn Control>,
    provider: Arc<IngressProvider>,
    ingresses: Store<Ingress>,
    mut models: watch::Receiver<Option<Arc<Model>>>,
    mut leadership: watch::Receiver<Leadership>,
    identity: String,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            r = leadership.wait_for(|l| l.leading) => if r.is_err() { return },
        }
        info!("ingress provider: leading; writing Ingress statuses and Events");
        let term = term(
            &client,
            &gateway,
            &provider,
            &ingresses,
            &mut models,
            &identity,
        );
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = leadership.wait_for(|l| !l.leading) => {}
            _ = term => {}
        }
        info!("ingress provider: no longer leading; stopped writing statuses and Events");
    }
}

/// One term: after every new model, every status-changing event and every resync, write
/// what is due. Never returns on its own.
async fn term(
    client: &kube::Client,
    gateway: &Arc<dyn Control>,
    provider: &IngressProvider,
    ingresses: &Store<Ingress>,
    models: &mut watch::Receiver<Option<Arc<Model>>>,
    identity: &str,
) {
    let mut log = EventLog::default();
    let mut writer: Option<StatusWriter> = None;
    let mut resync = tokio::time::interval(STATUS_RESYNC);
    loop {
        let model = models.borrow_and_update().clone();
        // The address is read each time: a reload may set or change it.
        let address = gateway
            .snapshot()
            .config
            .kubernetes
            .as_ref()
            .and_then(|k| k.ingress.as_ref())
            .and_then(|i| i.publish_address.clone());
        if let Some(model) = model {
            let result = events::emit(client, &mut log, &model, identity).await;
            lock(&provider.report).events_error = result.err();
            // A writer lives for the whole term once there was an address: when a reload
            // changes or removes it, the old one is still to be cleared.
            if writer.is_none() && address.is_some() {
                writer = Some(StatusWriter::new(client.clone()));
            }
            if let Some(w) = writer.as_mut() {
                w.publish(address);
                let outcome = w.sync(&ingresses.state(), &model).await;
                if outcome.written + outcome.cleared > 0 {
                    info!(
                        written = outcome.written,
                        cleared = outcome.cleared,
                        failed = outcome.failed,
                        "ingress statuses written"
                    );
                }
                lock(&provider.report).status_error = outcome.error;
            }
        }
        tokio::select! {
            r = models.changed() => if r.is_err() {
                // The builder has stopped: so is the gateway.
                std::future::pending::<()>().await;
            },
            _ = provider.statuses.notified() => {
                tokio::time::sleep(STATUS_SETTLE).await;
            }
            _ = resync.tick() => {}
        }
    }
}
