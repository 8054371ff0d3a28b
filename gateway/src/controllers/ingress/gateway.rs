//! The Gateway API source's build: the translation of everything the reflectors hold (it
//! is whole: Gateways, routes and grants decide each other's statuses), what the proxy
//! serves of it handed to the gateway (which binds the Gateways' addresses and swaps the
//! routes in), the addresses that could not be bound reported in the listeners' status,
//! and the model handed to the leader's status writer.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;
use tracing::{info, warn};

use super::reflectors::Stores;
use super::settings::{own_addresses, tenant_bounds};
use super::state::{IngressProvider, lock};
use crate::config::Config;
use crate::control::Control;
use crate::k8s::gateway::model::{Model, Objects, Settings};
use crate::k8s::gateway::{serve, translate};
use crate::k8s::ingress::model::BackendPolicy;

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
) {
    let Some(gw) = &stores.gateway else {
        return;
    };
    if !provider.take_gateway_changed() {
        return;
    }
    let Some(settings) = settings(&gateway.snapshot().config) else {
        return;
    };
    let started = Instant::now();
    let (classes, gateways, routes, grants, namespaces) = (
        gw.classes.state(),
        gw.gateways.state(),
        gw.routes.state(),
        gw.grants.state(),
        gw.namespaces.state(),
    );
    let (services, slices, secrets) = (
        stores.services.state(),
        stores.slices.state(),
        stores.secrets.state(),
    );
    let built = tokio::task::spawn_blocking(move || {
        let objects = Objects {
            classes: &classes,
            gateways: &gateways,
            routes: &routes,
            grants: &grants,
            namespaces: &namespaces,
            services: &services,
            slices: &slices,
            secrets: &secrets,
        };
        let mut model = translate::translate(&objects, &settings);
        let served = serve::served(&mut model, &gateways);
        (model, served, gateways)
    })
    .await;
    let (mut model, served, gateways) = match built {
        Ok(b) => b,
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
    let applied = gateway.apply_gateway(Arc::new(served)).await;
    let took = started.elapsed();
    let mut r = lock(&provider.report);
    r.gateway.last_build_ms = Some(took.as_secs_f64() * 1000.0);
    match applied {
        Ok(unbound) => {
            serve::unbound(&mut model, &gateways, &unbound);
            r.gateway.applied += 1;
            r.gateway.apply_error = None;
            r.gateway.listeners = addrs;
            r.gateway.unbound = unbound.iter().map(|(a, e)| format!("{a}: {e}")).collect();
            info!(
                gateways = model.gateways.len(),
                entries = model.routes.len(),
                ms = took.as_secs_f64() * 1000.0,
                "Gateway API routes applied"
            );
            models.send_replace(Some(Arc::new(model)));
        }
        Err(e) => {
            provider.gateway_changed();
            warn!(error = %e, "Gateway API routes could not be applied");
            r.gateway.apply_error = Some(e.to_string());
        }
    }
}
