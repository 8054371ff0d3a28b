//! The node-api listener: the kubelet API of virtual nodes, answered for the root cluster's
//! API server and forwarded to the leaf cluster that runs each pod.
//!
//! A request goes through, in order: the caller's authorization (`authorize`), the
//! kubelet's routes and methods (404, 405), the names in the path (valid Kubernetes names,
//! else the kubelet's 404), the caller's `Impersonate-*` headers (kube-apiserver's 403),
//! the tenant owning the pod's namespace (403), the leaf chosen by the tenant's
//! `pod_router` or the pod index (404, 409, 502), the pod uid when the path carries one
//! (404), and the translation of the kubelet's query to the leaf API's
//! (400, 422). Streams (`exec`, `attach`, `portForward`) then go out through the same
//! hijack and splice core as routes, under the tenant's bandwidth limits; logs through the
//! tenant's `log_filter`. Only the headers the leaf needs go to it, and the leaf's own
//! credentials replace the caller's.

use std::sync::Arc;

use http::{HeaderValue, Request, Response, StatusCode, header};
use serde_json::{Value, json};

use super::access::ApiFacts;
use super::client::{Client, Front};
use super::pod_headers::{ids_to_leaf, impersonation};
use super::podcall::{Call, leaf_failed};
use super::reply::{self, Dialect};
use crate::config::{AllowedClient, VirtualNodeKind};
use crate::k8s::access::Attributes;
use crate::k8s::kubelet::{self, KubeletRoute, RouteError, verb_name};
use crate::k8s::status::Status;
use crate::proxy::{Body, Inbound};
use crate::snapshot::Snapshot;

/// The route label node-api requests are counted under.
pub const ROUTE: &str = Front::NodeApi.label();

/// Answers one node-api request, with what its access log line says of it on the answer
/// (`access::ApiFacts`).
pub async fn serve<B: Inbound>(
    req: Request<B>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    allowed_clients: &[AllowedClient],
) -> Response<Body> {
    let mut facts = ApiFacts::new(client);
    let mut res = answer(req, client, snapshot, allowed_clients, &mut facts).await;
    facts.attach(&mut res);
    res
}

/// The answer to one node-api request; `facts` learns the call's verb, pod, tenant and
/// leaf as they are known.
async fn answer<B: Inbound>(
    req: Request<B>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    allowed_clients: &[AllowedClient],
    facts: &mut ApiFacts,
) -> Response<Body> {
    if let Err(refused) = authorize(&req, client, snapshot, allowed_clients).await {
        return refused;
    }
    let route = match KubeletRoute::parse(req.method(), req.uri().path()) {
        Ok(route) => route,
        Err(RouteError::NotFound) => return text(StatusCode::NOT_FOUND, "404 page not found\n"),
        Err(e @ RouteError::MethodNotAllowed { allowed, .. }) => {
            let mut res = text(StatusCode::METHOD_NOT_ALLOWED, &format!("{e}\n"));
            res.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allowed));
            return res;
        }
        // A namespace, pod or container name no object can have: refused before the
        // namespace globs, the pod router or a leaf see it.
        Err(e @ (RouteError::NoSuchPod { .. } | RouteError::NoSuchContainer { .. })) => {
            return text(StatusCode::NOT_FOUND, &e.to_string());
        }
    };
    facts.verb(match &route {
        KubeletRoute::Pods => "list",
        KubeletRoute::Healthz => "get",
        other => verb_name(other.verb()),
    });
    let caller = client
        .identity
        .as_ref()
        .and_then(|id| id.common_name.as_deref())
        .unwrap_or_default();
    if let Some(refusal) = impersonation(req.headers(), caller) {
        return reply::status(&refusal);
    }
    let target = match &route {
        KubeletRoute::Healthz => return text(StatusCode::OK, "ok"),
        KubeletRoute::Pods => return pod_list(snapshot),
        other => other
            .target()
            .expect("every other route names a pod")
            .clone(),
    };
    facts.namespace(&target.namespace);
    facts.pod(&target.pod);
    let Some(tenant_config) = snapshot
        .config
        .tenants
        .iter()
        .find(|t| t.owns(&target.namespace))
    else {
        return reply::status(&Status::new(
            403,
            format!(
                "namespace {:?} belongs to no tenant of this gateway",
                target.namespace
            ),
        ));
    };
    facts.tenant(&tenant_config.name);
    let Some(tenant) = snapshot.tenants.get(&tenant_config.name).cloned() else {
        return reply::status(&Status::new(
            500,
            format!("tenant {:?} is not loaded", tenant_config.name),
        ));
    };
    let verb = route.verb();
    let call = match Call::to_leaf(
        client,
        snapshot,
        tenant_config,
        &tenant,
        &target,
        route.container(),
        verb,
        Front::NodeApi,
    )
    .await
    {
        Ok(call) => call,
        Err(res) => return res,
    };
    facts.leaf(call.leaf.name());
    if let (Some(uid), Some(held)) = (&target.uid, &call.held) {
        if held.uid() != Some(uid.as_str()) {
            // The kubelet's answer for a pod whose uid changed (it was recreated).
            return text(StatusCode::NOT_FOUND, "pod not found");
        }
    }
    let res = call.forward(req, &route).await;
    call.count(verb, &res);
    res
}

/// Who may call, before anything else is read (every path, `/healthz` and `/pods`
/// included, as the kubelet filters every request). With `allowed_clients`: a certificate
/// whose subject one of them names (CN, and O when given; never a SAN), else a 403 Status.
/// Without: the root cluster decides, by a SubjectAccessReview on `nodes/proxy` for the
/// certificate's CN and O (cached in `k8s::access`), answered in the kubelet's words: 401
/// `Unauthorized` for a certificate with no CN, 403 `Forbidden (user=..., verb=...,
/// resource=nodes, subresource=proxy)`, 500 `Authorization error (...)` when the review
/// could not be asked. A denied caller sees nothing, `/pods` included.
async fn authorize<B>(
    req: &Request<B>,
    client: &Client,
    snapshot: &Snapshot,
    allowed_clients: &[AllowedClient],
) -> Result<(), Response<Body>> {
    let identity = client.identity.as_deref();
    if !allowed_clients.is_empty() {
        if identity.is_some_and(|id| id.is_allowed_client(allowed_clients)) {
            return Ok(());
        }
        let who = identity
            .and_then(|id| id.common_name.clone())
            .unwrap_or_default();
        return Err(reply::status(&Status::new(
            403,
            format!("client certificate {who:?} is not in this node API's allowed_clients"),
        )));
    }
    let Some((id, user)) = identity.and_then(|id| {
        id.common_name
            .as_deref()
            .filter(|cn| !cn.is_empty())
            .map(|cn| (id, cn))
    }) else {
        return Err(text(StatusCode::UNAUTHORIZED, "Unauthorized"));
    };
    let attrs = Attributes::node_proxy(
        user,
        &id.organizations,
        req.method(),
        served_node(snapshot, &client.listener).unwrap_or(""),
    );
    let words = format!(
        "(user={}, verb={}, resource={}, subresource={})",
        attrs.user, attrs.verb, attrs.resource, attrs.subresource
    );
    // Validation requires a root cluster here; a snapshot without one refuses, never lets in.
    let decided = match &snapshot.access {
        Some(access) => access.allowed(&attrs).await.map_err(|e| e.to_string()),
        None => Err("no root cluster to ask".to_string()),
    };
    match decided {
        Ok(true) => Ok(()),
        Ok(false) => {
            tracing::debug!(%user, verb = attrs.verb, "node-api: forbidden by the root cluster");
            Err(text(StatusCode::FORBIDDEN, &format!("Forbidden {words}")))
        }
        Err(why) => {
            tracing::warn!(
                listener = %client.listener,
                peer = %client.peer,
                %user,
                error = %why,
                "node-api: authorization error"
            );
            Err(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("Authorization error {words}"),
            ))
        }
    }
}

/// The virtual node `listener` answers for, when one is known: the listener is
/// `[kubernetes] node_api_listener` and the config owns exactly one Node (a patched Node is
/// known only by selector, and with several the request does not say which was dialled).
fn served_node<'a>(snapshot: &'a Snapshot, listener: &str) -> Option<&'a str> {
    let config = &snapshot.config;
    let kubernetes = config.kubernetes.as_ref()?;
    if kubernetes.node_api_listener.as_deref() != Some(listener) {
        return None;
    }
    match config.virtual_nodes.as_slice() {
        [only] => match &only.mode {
            VirtualNodeKind::Own { name, .. } => Some(name),
            VirtualNodeKind::Patch { .. } => None,
        },
        _ => None,
    }
}

/// The kubelet's request turned into the leaf API's, then sent the way its kind asks.
impl Call<'_> {
    async fn forward<B: Inbound>(&self, req: Request<B>, route: &KubeletRoute) -> Response<Body> {
        let query = req.uri().query();
        let translated = match route {
            KubeletRoute::Exec { container, .. } => {
                kubelet::stream_query(query, container, true).map(|q| ("exec", q))
            }
            KubeletRoute::Attach { container, .. } => {
                kubelet::stream_query(query, container, false).map(|q| ("attach", q))
            }
            KubeletRoute::PortForward { .. } => {
                kubelet::port_forward_query(query).map(|q| ("portforward", q))
            }
            KubeletRoute::ContainerLogs { container, .. } => {
                kubelet::logs_query(query, container).map(|q| ("log", q))
            }
            KubeletRoute::Run { container, .. } => {
                return self
                    .run(kubelet::run_command(query), container, req.headers())
                    .await;
            }
            KubeletRoute::Pods | KubeletRoute::Healthz => unreachable!("answered before"),
        };
        let (subresource, leaf_query) = match translated {
            Ok(t) => t,
            Err(e) => return text(e.status(), &e.to_string()),
        };
        let path = format!(
            "{}?{leaf_query}",
            kubelet::leaf_path(self.target, subresource)
        );
        let container = leaf_query.get("container").map(str::to_string);
        self.send(req, &path, route.verb(), container).await
    }

    /// `/run`: runs `command` in the leaf (exec over WebSocket v5) and answers its output.
    /// The exec carries the request's ID and trace context (`pod_headers::ids_to_leaf`).
    async fn run(
        &self,
        command: Vec<String>,
        container: &str,
        headers: &http::HeaderMap,
    ) -> Response<Body> {
        if command.is_empty() {
            return text(StatusCode::BAD_REQUEST, "missing cmd");
        }
        let mut ids = http::HeaderMap::new();
        ids_to_leaf(headers, &mut ids, &self.snapshot.config);
        match crate::k8s::run::exec_output(&self.leaf, self.target, container, &command, &ids).await
        {
            Ok(out) if out.exit_code == 0 => reply::kubelet(StatusCode::OK, out.output),
            // The command's own answer, not a refusal: its output stays out of the log.
            Ok(out) => reply::kubelet(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "command '{}' exited with {}: {}",
                    command.join(" "),
                    out.exit_code,
                    String::from_utf8_lossy(&out.output)
                ),
            ),
            Err(e) => leaf_failed(&e.to_string()),
        }
    }
}

/// `GET /pods`: the pods of every leaf in namespaces a tenant owns, as a v1 `PodList`.
fn pod_list(snapshot: &Snapshot) -> Response<Body> {
    let tenants = &snapshot.config.tenants;
    let mut items: Vec<Value> = snapshot
        .leaves
        .values()
        .flat_map(|leaf| leaf.pods())
        .filter(|pod| tenants.iter().any(|t| t.owns(pod.namespace())))
        .map(|pod| {
            // As the leaf sent it: the kubelet's list names no leaf.
            let mut v = pod.json().clone();
            if let Some(meta) = v["metadata"].as_object_mut()
                && let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut)
            {
                a.remove(crate::k8s::raw_pod::LEAF_ANNOTATION);
                if a.is_empty() {
                    meta.remove("annotations");
                }
            }
            v
        })
        .collect();
    items.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                v["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                v["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    let list = json!({ "kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items });
    reply::json(StatusCode::OK, &list)
}

/// A plain-text answer, as the kubelet writes its own errors.
fn text(code: StatusCode, body: &str) -> Response<Body> {
    reply::error(Dialect::Kubelet, code, body)
}
