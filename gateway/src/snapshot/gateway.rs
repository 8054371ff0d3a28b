//! Gateway API routes inside a snapshot: what the Gateway provider serves
//! ([`Served`]: routes of the one route model, by bound address and port), each address's
//! routes compiled as Ingress routes are ([`IngressRoutes::compile`], reusing the previous
//! compilation's upstreams and routes), and one listener per address, named
//! `gateway/<addr>`, which the snapshot serves beside the TOML ones.
//!
//! The gateway binds and stops those listeners' sockets as [`GatewayRoutes::addrs`]
//! changes; the listener, proxy and fast-path code serve them as any other listener.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use http::StatusCode;

use crate::config::{Config, HostPattern, ListenerConfig, ListenerKind, PathMatch};
use crate::k8s::gateway::serve::{Invalid, Served};
use crate::k8s::ingress::model::Model;
use crate::limit::SharedLimits;
use crate::routing::Router;

use super::ingress::{IngressRoutes, direct};
use super::route::{Fast, Route, Tenant};

/// The Gateway listeners a snapshot serves.
#[derive(Default)]
pub struct GatewayRoutes {
    /// What they were compiled from; `None` before the provider's first build.
    pub served: Option<Arc<Served>>,
    /// Each bound address's routes, in address order.
    pub listeners: Vec<GatewayListener>,
}

/// One bound address's routes.
pub struct GatewayListener {
    pub addr: SocketAddr,
    pub routes: IngressRoutes,
    /// The entries answered with a 500, by host and path.
    pub invalid: Vec<(HostPattern, PathMatch, Arc<Route>)>,
}

impl GatewayRoutes {
    /// What the names of Gateway listeners start with; no `[[listener]]` name may.
    pub const PREFIX: &str = crate::config::GATEWAY_LISTENERS;

    /// The listener name of a Gateway address: `gateway/10.0.0.10:80`.
    pub fn listener_name(addr: SocketAddr) -> String {
        format!("{}{addr}", Self::PREFIX)
    }

    /// Compiles `served` for `config`, reusing what `previous` built for each address.
    pub fn compile(
        served: Arc<Served>,
        config: &Config,
        tenants: &HashMap<String, Arc<Tenant>>,
        previous: Option<&GatewayRoutes>,
    ) -> GatewayRoutes {
        let listeners = served
            .listeners
            .iter()
            .map(|l| {
                let before = previous
                    .and_then(|p| p.listeners.iter().find(|g| g.addr == l.addr))
                    .map(|g| &g.routes);
                let model = Arc::new(Model {
                    routes: l.routes.clone(),
                    ..Model::default()
                });
                GatewayListener {
                    addr: l.addr,
                    routes: IngressRoutes::compile(model, config, tenants, before),
                    invalid: l
                        .invalid
                        .iter()
                        .map(|i| (i.host.clone(), i.path.clone(), invalid(i, config, tenants)))
                        .collect(),
                }
            })
            .collect();
        GatewayRoutes {
            served: Some(served),
            listeners,
        }
    }

    /// The addresses to listen on.
    pub fn addrs(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.listeners.iter().map(|g| g.addr)
    }

    /// A plain HTTP listener per address: its config and its router, built from that
    /// address's routes (the first of one host and path wins, as the model ordered them).
    pub fn listeners(&self) -> impl Iterator<Item = (ListenerConfig, Router<Arc<Route>>)> + '_ {
        self.listeners.iter().map(|g| {
            let router = Router::new(
                g.routes
                    .entries()
                    .chain(g.invalid.iter().map(|(h, p, r)| (h, p, r)))
                    .map(|(h, p, r)| (h.clone(), p.clone(), r.clone())),
            );
            let config = ListenerConfig {
                name: Self::listener_name(g.addr),
                bind: g.addr,
                kind: ListenerKind::Http,
                tls: None,
                max_connections: None,
                trusted_proxies: Vec::new(),
                http1_fast_path: true,
                allowed_clients: Vec::new(),
                kubernetes_version: None,
            };
            (config, router)
        })
    }
}

/// The route of an entry answered with a 500 and its reason.
fn invalid(i: &Invalid, config: &Config, tenants: &HashMap<String, Arc<Tenant>>) -> Arc<Route> {
    let action = direct(StatusCode::INTERNAL_SERVER_ERROR, &i.reason);
    Arc::new(Route {
        name: i.name.clone(),
        source: None,
        fast: Fast::of(&action),
        action,
        tenant: i.tenant.as_ref().and_then(|t| tenants.get(t).cloned()),
        bandwidth: Default::default(),
        totals: SharedLimits::new(None),
        timeouts: config.timeouts,
    })
}
