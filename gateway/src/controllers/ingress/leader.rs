//! The leader's writers: while this replica leads, `status.loadBalancer` on served
//! Ingresses and Events on skipped ones, and the Gateway API kinds' statuses with Warning
//! Events on refused HTTPRoutes, Gateways and listeners, after every
//! new model, every status-changing event and every resync. A term's writers start with
//! the term and are dropped when it ends.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::super::election::Leadership;
use super::reflectors::{GatewayStores, Stores};
use super::state::{IngressProvider, lock};
use crate::control::Control;
use crate::k8s::gateway::model::Model as GatewayModel;
use crate::k8s::gateway::status as gateway_status;
use crate::k8s::ingress::events::{self, EventLog, GATEWAY, HTTP_ROUTE, Notice};
use crate::k8s::ingress::model::Model;
use crate::k8s::ingress::status::StatusWriter;

/// The leader re-checks every Ingress's status this often, besides after each change.
const STATUS_RESYNC: Duration = Duration::from_secs(30);
/// Status-only changes (the leader's own writes come back this way) are gathered this long
/// before the status is checked again.
const STATUS_SETTLE: Duration = Duration::from_millis(200);

/// The models the builder hands the leader, one per source.
pub(super) struct Models {
    pub(super) ingress: watch::Receiver<Option<Arc<Model>>>,
    pub(super) gateway: watch::Receiver<Option<Arc<GatewayModel>>>,
}

/// Runs the status and Event writer for each term this replica leads.
#[allow(clippy::too_many_arguments)]
pub(super) async fn lead(
    client: kube::Client,
    gateway: Arc<dyn Control>,
    provider: Arc<IngressProvider>,
    stores: Stores,
    mut models: Models,
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
            &stores,
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
    stores: &Stores,
    models: &mut Models,
    identity: &str,
) {
    let mut log = EventLog::default();
    let mut writer: Option<StatusWriter> = None;
    let mut gateway_writer = gateway_status::StatusWriter::new(client.clone());
    let mut gateway_log = EventLog::default();
    // The HTTPRoutes found with their status, not compared again until they change.
    let mut checked = gateway_status::Checked::default();
    let mut resync = tokio::time::interval(STATUS_RESYNC);
    loop {
        let model = models.ingress.borrow_and_update().clone();
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
                let ingresses = stores.ingress.as_ref().map(|i| i.ingresses.state());
                let outcome = w.sync(&ingresses.unwrap_or_default(), &model).await;
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
        let gateway_model = models.gateway.borrow_and_update().clone();
        if let (Some(stores), Some(model)) = (&stores.gateway, gateway_model) {
            write_gateway_statuses(
                gateway,
                provider,
                stores,
                &model,
                &mut gateway_writer,
                &mut checked,
            )
            .await;
            let warnings =
                gateway_status::warnings(&stores.routes.state(), &stores.gateways.state(), &model);
            let notices = warnings
                .iter()
                .map(|w| Notice {
                    object: if w.kind == "Gateway" {
                        GATEWAY
                    } else {
                        HTTP_ROUTE
                    },
                    ingress: &w.object,
                    reason: w.reason,
                    message: w.message.clone(),
                    generation: Some(w.generation),
                })
                .collect();
            let due = gateway_log.due_of(notices);
            let result = events::emit_due(client, &mut gateway_log, due, identity).await;
            lock(&provider.report).gateway.events_error = result.err();
        }
        tokio::select! {
            r = models.ingress.changed() => if r.is_err() {
                // The builder has stopped: so is the gateway.
                std::future::pending::<()>().await;
            },
            r = models.gateway.changed() => if r.is_err() {
                std::future::pending::<()>().await;
            },
            _ = provider.statuses.notified() => {
                tokio::time::sleep(STATUS_SETTLE).await;
            }
            _ = resync.tick() => {}
        }
    }
}

/// The Gateway API statuses `model` asks for that the objects do not have yet.
async fn write_gateway_statuses(
    gateway: &Arc<dyn Control>,
    provider: &IngressProvider,
    stores: &GatewayStores,
    model: &GatewayModel,
    writer: &mut gateway_status::StatusWriter,
    checked: &mut gateway_status::Checked,
) {
    let config = gateway.snapshot().config.clone();
    let Some(settings) = config.kubernetes.as_ref().and_then(|k| k.gateway.as_ref()) else {
        return;
    };
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let writes = gateway_status::desired(
        &stores.classes.state(),
        &stores.gateways.state(),
        &stores.routes.state(),
        model,
        &settings.controller_name,
        &now,
        checked,
    );
    let outcome = writer.sync(writes).await;
    if outcome.written > 0 {
        info!(
            written = outcome.written,
            failed = outcome.failed,
            "Gateway API statuses written"
        );
    }
    lock(&provider.report).gateway.status_error = outcome.error;
}
