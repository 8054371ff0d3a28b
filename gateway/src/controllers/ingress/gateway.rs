//! The Gateway API source's build: the translation of what the reflectors hold (a
//! [`Translator`] kept across builds translates again only the HTTPRoutes whose inputs
//! changed), what the proxy serves of it handed to the gateway (which binds the Gateways'
//! addresses and swaps the routes in), the addresses that could not be bound reported in
//! the listeners' status, the model kept for `/status` and metrics, and handed to the
//! leader's status writer.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;
use tracing::{info, warn};

use super::reflectors::Stores;
use super::settings::{own_addresses, tenant_bounds};
use super::state::{IngressProvider, lock};
use crate::config::Config;
use crate::control::Control;
use crate::k8s::gateway::incremental::Translator;
use crate::k8s::gateway::model::{Model, Objects, Settings};
use crate::k8s::gateway::serve;
use crate::k8s::gateway::status::refused;
use crate::k8s::ingress::model::BackendPolicy;
use crate::metrics::{GatewayRefusalLabels, GatewayRouteLabels, Metrics};

/// What the builds keep: each HTTPRoute's translation, and what the proxy was last handed
/// (an address whose entries did not change keeps its table).
#[derive(Default)]
pub(super) struct Kept {
    translator: Translator,
    served: Option<Arc<serve::Served>>,
}

/// The translation's settings from the snapshot's config; `None` without
/// `[kubernetes.gateway]`.
pub(super) fn settings(config: &Config) -> Option<Settings> {
    let gateway = config.kubernetes.as_ref()?.gateway.as_ref()?;
    Some(Settings {
        controller_name: gateway.controller_name.clone(),
        addresses: gateway.addresses.clone(),
        tenants: tenant_bounds(config),
        backends: BackendPolicy {
            deny: gateway.deny_backends.clone(),
            allow: gateway.allow_backends.clone(),
            own: own_addresses(config),
            allow_unmanaged: gateway.allow_unmanaged_endpointslices,
        },
    })
}

/// Translates and applies again when something it reads changed since the last time.
pub(super) async fn build(
    gateway: &Arc<dyn Control>,
    provider: &IngressProvider,
    stores: &Stores,
    models: &watch::Sender<Option<Arc<Model>>>,
    kept: &mut Kept,
) {
    let Some(gw) = &stores.gateway else {
        return;
    };
    let Some(changes) = provider.take_gateway_changes() else {
        return;
    };
    let Some(mut settings) = settings(&gateway.snapshot().config) else {
        return;
    };
    // The addresses as bound too: a listener or the admin API configured on port 0 has
    // its real port only now, and no route may send to it. Sorted, so the settings the
    // routes' digests read change only when the addresses do.
    let bound = gateway.listener_addrs().into_iter().map(|l| l.local);
    let own = &mut settings.backends.own;
    own.extend(bound.chain(gateway.admin_addr()));
    own.sort_unstable();
    own.dedup();
    let started = Instant::now();
    // The few objects of the kinds every route may read; the HTTPRoutes, Services and
    // EndpointSlices are read from the stores as the translation needs them.
    let (classes, gateways, grants, namespaces, secrets) = (
        gw.classes.state(),
        gw.gateways.state(),
        gw.grants.state(),
        gw.namespaces.state(),
        stores.secrets.state(),
    );
    let source = stores.clone();
    let mut taken = std::mem::take(&mut kept.translator);
    let previous = kept.served.clone();
    let built = tokio::task::spawn_blocking(move || {
        let objects = Objects {
            classes: &classes,
            gateways: &gateways,
            routes: &[],
            grants: &grants,
            namespaces: &namespaces,
            services: &[],
            slices: &[],
            secrets: &secrets,
        };
        let mut model = taken.apply(&objects, &source, &changes, &settings);
        let served = serve::served_after(&mut model, &gateways, previous.as_deref());
        (model, served, gateways, taken)
    })
    .await;
    let (mut model, served, gateways) = match built {
        Ok((model, served, gateways, translator)) => {
            kept.translator = translator;
            (model, served, gateways)
        }
        // The translator went with the thread: the next build translates every route.
        Err(e) => {
            provider.gateway_changed();
            warn!(error = %e, "gateway provider: the translation was interrupted");
            lock(&provider.report).gateway.apply_error = Some(e.to_string());
            return;
        }
    };
    let addrs: Vec<String> = served
        .listeners
        .iter()
        .map(|l| l.addr.to_string())
        .collect();
    let served = Arc::new(served);
    let applied = gateway.apply_gateway(served.clone()).await;
    let took = started.elapsed();
    let metrics = gateway.metrics();
    metrics.gateway.build_seconds.observe(took.as_secs_f64());
    metrics
        .gateway
        .translated
        .inc_by(kept.translator.translated as u64);
    let mut r = lock(&provider.report);
    r.gateway.last_build_ms = Some(took.as_secs_f64() * 1000.0);
    r.gateway.translated = kept.translator.translated;
    match applied {
        Ok(unbound) => {
            serve::unbound(&mut model, &gateways, &unbound);
            let model = Arc::new(model);
            record_metrics(metrics, &model);
            r.gateway.model = Some(model.clone());
            kept.served = Some(served);
            r.gateway.applied += 1;
            r.gateway.apply_error = None;
            r.gateway.listeners = addrs;
            r.gateway.unbound = unbound.iter().map(|(a, e)| format!("{a}: {e}")).collect();
            info!(
                gateways = model.gateways.len(),
                entries = model.routes.len(),
                translated = kept.translator.translated,
                ms = took.as_secs_f64() * 1000.0,
                "Gateway API routes applied"
            );
            models.send_replace(Some(model));
        }
        Err(e) => {
            provider.gateway_changed();
            warn!(error = %e, "Gateway API routes could not be applied");
            r.gateway.apply_error = Some(e.to_string());
        }
    }
}

/// The gauges of the model applied: HTTPRoutes accepted by a parent and not, and the
/// refusals by kind and reason (a reason no longer refused loses its series).
fn record_metrics(metrics: &Metrics, model: &Model) {
    let m = &metrics.gateway;
    let accepted = model.http_routes.iter().filter(|r| r.accepted()).count();
    m.routes
        .get_or_create(&GatewayRouteLabels { state: "accepted" })
        .set(accepted as i64);
    m.routes
        .get_or_create(&GatewayRouteLabels {
            state: "not_accepted",
        })
        .set((model.http_routes.len() - accepted) as i64);
    let mut counts: std::collections::BTreeMap<(&'static str, &'static str), i64> =
        std::collections::BTreeMap::new();
    for w in refused(model) {
        *counts.entry((w.kind, w.reason)).or_default() += 1;
    }
    m.refusals.clear();
    for ((kind, reason), n) in counts {
        m.refusals
            .get_or_create(&GatewayRefusalLabels { kind, reason })
            .set(n);
    }
}
