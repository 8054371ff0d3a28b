//! The Kubernetes fronts' side of the sessions registry (`runtime::sessions`): how a
//! watch, stream or log follow opens its session (who the caller is, as a reload will
//! re-check it; its tenant's caps, answered past them with kube-apiserver's 429 and
//! `Retry-After`), and the `Status` a watch ends with when a reload revokes it.
//!
//! It decides nothing about who may call (the fronts authenticate and authorize first)
//! and keeps no token: a bearer token becomes its digest here.

use http::{HeaderMap, Response, header};

use super::client::{Client, Front};
use super::reply;
use crate::config::{AllowedClient, Config};
use crate::config::{TenantConfig, token_digest};
use crate::k8s::status::Status;
use crate::proxy::Body;
use crate::runtime::sessions::{
    Capped, Credential, Kind, NodeCaller, Opening, Revoked, Scope, Session,
};

/// How long a client refused at a cap is told to wait, as kube-apiserver's max-in-flight
/// filter tells it.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// What a long-lived call reaches, for its session.
pub struct Reach<'a> {
    pub scope: Scope,
    /// The leaf it goes to; `None` for a watch (every leaf the tenant may reach).
    pub leaf: Option<&'a str>,
}

/// Opens `kind`'s session for a call of `config`'s tenant (of the gateway's `loaded`
/// config) on `client`'s connection: the session, or the 429 its tenant's cap answers.
#[allow(
    clippy::result_large_err,
    reason = "the refusal is the answer itself, built on the rare path"
)]
pub fn open(
    client: &Client,
    headers: &HeaderMap,
    loaded: &Config,
    config: &TenantConfig,
    reach: Reach<'_>,
    kind: Kind,
) -> Result<Session, Response<Body>> {
    let shared = &client.shared;
    let allowed_clients = loaded
        .listeners
        .iter()
        .find(|l| *l.name == *client.listener)
        .map_or(&[][..], |l| &l.allowed_clients[..]);
    let opening = Opening {
        tenant: config.name.clone(),
        credential: credential(client, headers, config, allowed_clients),
        scope: reach.scope,
        leaf: reach.leaf.map(str::to_string),
        leaves: config.leaves.clone(),
        connection: (client.listener.clone(), client.peer),
        kind,
    };
    shared
        .sessions
        .open(opening, &config.concurrent, &shared.kill, &shared.metrics)
        .map_err(|capped| too_many(&config.name, capped))
}

/// How the caller got in, as `kube_api::caller::authenticate` let it: a certificate named
/// in the tenant's `client_names` first, else the bearer token. On the node API the root
/// cluster calls, for whichever tenant owns the namespace: its certificate's subject, let
/// in by the listener's `allowed_clients` or (none naming it) by a SubjectAccessReview.
fn credential(
    client: &Client,
    headers: &HeaderMap,
    config: &TenantConfig,
    allowed_clients: &[AllowedClient],
) -> Credential {
    if client.front == Front::NodeApi {
        let identity = client.identity.as_deref();
        return Credential::NodeApi(NodeCaller {
            common_name: identity.and_then(|id| id.common_name.clone()),
            organizations: identity
                .map(|id| id.organizations.clone())
                .unwrap_or_default(),
            by_name: identity.is_some_and(|id| id.is_allowed_client(allowed_clients)),
        });
    }
    let by_cert = client.identity.as_ref().and_then(|id| {
        config
            .client_names
            .iter()
            .find(|n| id.is_any_of(std::slice::from_ref(*n)))
    });
    if let Some(name) = by_cert {
        return Credential::ClientName(name.clone());
    }
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token.trim());
    // No token (it cannot happen past authentication) is the empty one's digest, which no
    // tenant holds: the next reload ends the session rather than keep it unchecked.
    Credential::Token(token_digest(token))
}

/// kube-apiserver's 429, worded for the cap that was reached.
fn too_many(tenant: &str, capped: Capped) -> Response<Body> {
    let scope = if capped.per_connection {
        "on this connection"
    } else {
        "across its connections"
    };
    reply::status(&Status::too_many_requests(
        format!(
            "Too many requests, please try again later: tenant {tenant:?} already has {} open {} {scope}",
            capped.limit,
            capped.kind.plural(),
        ),
        RETRY_AFTER_SECONDS,
    ))
}

/// The `Status` of the `ERROR` event a revoked watch of `resource` (in API `group`) ends
/// with: 401 when `user` no longer authenticates as its tenant, kube-apiserver's RBAC
/// denial when the tenant no longer owns what the watch reads.
pub fn revoked_watch(
    why: &Revoked,
    user: &str,
    (group, resource): (&'static str, &str),
    namespace: Option<&str>,
) -> Status {
    match why {
        Revoked::Unauthenticated => Status::unauthorized(),
        Revoked::Forbidden {
            namespace: lost, ..
        } => Status::forbidden_in(
            group,
            user,
            "watch",
            resource,
            None,
            lost.as_deref().or(namespace),
        ),
    }
}
