//! Who a kube-api request comes from: the tenant whose `client_names` hold the verified
//! client certificate's name, else the tenant whose `tokens_file` holds the bearer token,
//! and kube-apiserver's RBAC wording when that tenant may not do what it asks.

use std::sync::Arc;

use http::{Request, Response, header};

use crate::config::{TenantConfig, TokenDigest};
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::reply;
use crate::proxy::{Body, InBody};
use crate::snapshot::{Snapshot, Tenant};

/// Who a request authenticated as.
pub struct Caller<'a> {
    /// The user name kube-apiserver would print: the certificate's CN, or
    /// `tenant:<name>` for a bearer token.
    pub user: String,
    pub config: &'a TenantConfig,
    pub tenant: Arc<Tenant>,
}

/// Who is calling: the tenant whose `client_names` hold the verified client certificate's
/// name, else the tenant whose `tokens_file` holds the bearer token, else nobody (401).
/// Like kube-apiserver's union of authenticators, one that succeeds is enough.
pub fn authenticate<'a>(
    req: &Request<InBody>,
    client: &Client,
    snapshot: &'a Snapshot,
) -> Option<Caller<'a>> {
    let tenants = &snapshot.config.tenants;
    let by_cert = client.identity.as_ref().and_then(|id| {
        tenants
            .iter()
            .find(|t| !t.client_names.is_empty() && id.is_any_of(&t.client_names))
            .map(|t| (id.common_name.clone().unwrap_or_else(|| t.name.clone()), t))
    });
    let by_token = || {
        let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        // Digested once, then compared with every digest of each tenant in constant time:
        // the raw token is never looked up, so timing says nothing about its bytes.
        let digest = TokenDigest::of(token.trim());
        tenants
            .iter()
            .find(|t| t.tokens.holds(&digest))
            .map(|t| (format!("tenant:{}", t.name), t))
    };
    let (user, config) = by_cert.or_else(by_token)?;
    let tenant = snapshot.tenants.get(&config.name)?.clone();
    Some(Caller {
        user,
        config,
        tenant,
    })
}

impl Caller<'_> {
    /// The RBAC denial as kube-apiserver words it, for this caller.
    pub fn forbidden(
        &self,
        verb: &str,
        resource: &str,
        name: Option<&str>,
        namespace: Option<&str>,
    ) -> Response<Body> {
        self.forbidden_in("", verb, resource, name, namespace)
    }

    /// [`Caller::forbidden`] for a resource of API `group`.
    pub fn forbidden_in(
        &self,
        group: &'static str,
        verb: &str,
        resource: &str,
        name: Option<&str>,
        namespace: Option<&str>,
    ) -> Response<Body> {
        reply::status(&Status::forbidden_in(
            group, &self.user, verb, resource, name, namespace,
        ))
    }
}
