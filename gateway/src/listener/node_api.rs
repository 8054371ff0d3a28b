//! The node-api listener: the kubelet API of virtual nodes, answered for the root cluster's
//! API server and forwarded to the leaf cluster that runs each pod.
//!
//! A request goes through, in order: the client certificate (`allowed_clients`), the
//! kubelet's routes and methods (404, 405), the tenant owning the pod's namespace (403), the
//! leaf chosen by the tenant's `pod_router` or the pod index (404, 409), the pod uid when
//! the path carries one (404), and the translation of the kubelet's query to the leaf API's
//! (400, 422). Streams (`exec`, `attach`, `portForward`) then go out through the same
//! hijack and splice core as routes, under the tenant's bandwidth limits; logs through the
//! tenant's `log_filter`. The leaf's own credentials replace the caller's.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};

use super::service::Client;
use crate::config::{TenantConfig, Timeouts};
use crate::kube::kubelet::{self, KubeletRoute, PodTarget, RouteError};
use crate::kube::logs::{self, LogBatching, LogCounts};
use crate::kube::{Held, Leaf};
use crate::limit;
use crate::metrics::NodeApiLabels;
use crate::plugins::{LogContext, PodRoute, PodRouteRequest, Verb};
use crate::proxy::headers::{self, ClientSide};
use crate::proxy::upgrade::{self, SpliceJob, Target};
use crate::proxy::{Body, Exchange, full};
use crate::snapshot::{Snapshot, Tenant};

/// How long a hijacked exec, attach or port-forward stream may stay silent: the kubelet's
/// `--streaming-connection-idle-timeout` default. Interactive shells sit idle for long.
pub const STREAM_IDLE: Duration = Duration::from_secs(4 * 3600);

/// The route label node-api requests are counted under.
pub const ROUTE: &str = "node-api";

/// Answers one node-api request.
pub async fn serve(
    req: Request<Incoming>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    allowed_clients: &[String],
) -> Response<Body> {
    if !allowed_clients.is_empty()
        && !client
            .identity
            .as_ref()
            .is_some_and(|id| id.is_any_of(allowed_clients))
    {
        let who = client
            .identity
            .as_ref()
            .and_then(|id| id.common_name.clone())
            .unwrap_or_default();
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &format!("client certificate {who:?} is not in this node API's allowed_clients"),
        );
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
    };
    let target = match &route {
        KubeletRoute::Healthz => return text(StatusCode::OK, "ok"),
        KubeletRoute::Pods => return pod_list(snapshot),
        other => other
            .target()
            .expect("every other route names a pod")
            .clone(),
    };
    let Some(tenant_config) = snapshot
        .config
        .tenants
        .iter()
        .find(|t| t.owns(&target.namespace))
    else {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &format!(
                "namespace {:?} belongs to no tenant of this gateway",
                target.namespace
            ),
        );
    };
    let Some(tenant) = snapshot.tenants.get(&tenant_config.name).cloned() else {
        return status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            &format!("tenant {:?} is not loaded", tenant_config.name),
        );
    };
    let chosen = match choose_leaf(snapshot, tenant_config, &tenant, &route, &target).await {
        Ok(chosen) => chosen,
        Err(res) => return res,
    };
    if let (Some(uid), Some(held)) = (&target.uid, &chosen.held) {
        if held.uid() != Some(uid.as_str()) {
            // The kubelet's answer for a pod whose uid changed (it was recreated).
            return text(StatusCode::NOT_FOUND, "pod not found");
        }
    }
    let call = Call {
        client,
        snapshot,
        tenant: &tenant,
        leaf: &chosen.leaf,
        target: &target,
    };
    let res = call.forward(req, &route).await;
    client
        .shared
        .metrics
        .node_api_requests
        .get_or_create(&NodeApiLabels {
            tenant: tenant.name.clone(),
            leaf: chosen.leaf.name().to_string(),
            verb: route.verb(),
            status: res.status().as_u16(),
        })
        .inc();
    res
}

/// The leaf a pod request goes to, and the index's copy of the pod there if it has one.
struct Chosen {
    leaf: Arc<Leaf>,
    held: Option<Held>,
}

/// Asks the tenant's `pod_router`, or, when it has none or it says `default`, the pod
/// index: exactly one reachable leaf holding the pod wins.
async fn choose_leaf(
    snapshot: &Snapshot,
    config: &TenantConfig,
    tenant: &Tenant,
    route: &KubeletRoute,
    target: &PodTarget,
) -> Result<Chosen, Response<Body>> {
    let mut reachable: Vec<String> = snapshot
        .leaves
        .keys()
        .filter(|name| config.may_reach(name))
        .cloned()
        .collect();
    reachable.sort();
    let holders: Vec<Held> = snapshot
        .pods
        .holders(&target.namespace, &target.pod)
        .into_iter()
        .filter(|h| config.may_reach(&h.leaf))
        .collect();
    let request = PodRouteRequest {
        namespace: target.namespace.clone(),
        pod: target.pod.clone(),
        container: container_of(route).map(str::to_string),
        verb: verb_of(route),
        labels: holders.first().map(|h| h.labels().clone()),
        leaves: reachable,
    };
    let picked = match tenant.plugins.route_pod(&request).await {
        Ok(PodRoute::Leaf(name)) => Some(name),
        Ok(PodRoute::Default) => None,
        Ok(PodRoute::Reject {
            status: code,
            message,
        }) => {
            return Err(status(code, reason_of(code), &message));
        }
        Err(e) => {
            return Err(status(
                e.status(),
                reason_of(e.status()),
                &format!("pod router of tenant {:?}: {e}", tenant.name),
            ));
        }
    };
    let name = match (picked, holders.as_slice()) {
        (Some(name), _) => name,
        (None, [one]) => one.leaf.to_string(),
        (None, []) => {
            return Err(status(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("pods {:?} not found", target.pod),
            ));
        }
        (None, several) => {
            let mut names: Vec<&str> = several.iter().map(|h| &*h.leaf).collect();
            names.sort_unstable();
            return Err(status(
                StatusCode::CONFLICT,
                "Conflict",
                &format!(
                    "pod {}/{} is in several leaves ({}); the tenant's pod_router must choose",
                    target.namespace,
                    target.pod,
                    names.join(", ")
                ),
            ));
        }
    };
    let leaf = snapshot.leaves.get(&name).cloned().ok_or_else(|| {
        status(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            &format!("leaf {name:?} is not connected"),
        )
    })?;
    let held = holders.into_iter().find(|h| *h.leaf == *name);
    Ok(Chosen { leaf, held })
}

/// One pod request on its way to its leaf.
struct Call<'a> {
    client: &'a Arc<Client>,
    snapshot: &'a Snapshot,
    tenant: &'a Arc<Tenant>,
    leaf: &'a Arc<Leaf>,
    target: &'a PodTarget,
}

impl Call<'_> {
    async fn forward(&self, req: Request<Incoming>, route: &KubeletRoute) -> Response<Body> {
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
                return self.run(kubelet::run_command(query), container).await;
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
        if subresource == "log" {
            let container = leaf_query.get("container").unwrap_or_default().to_string();
            return self.logs(req, &path, container).await;
        }
        if headers::is_upgrade(req.headers()) {
            return self.stream(req, &path).await;
        }
        // Not an upgrade: the leaf answers it (with its own 400) and we relay that.
        self.relay(req, &path).await
    }

    fn exchange(&self) -> Exchange<'_> {
        Exchange {
            route: ROUTE,
            client: ClientSide {
                peer: self.client.peer.ip(),
                tls: self.client.tls,
                host: None,
                trusted: false,
            },
            metrics: &self.client.shared.metrics,
        }
    }

    /// `exec`, `attach`, `portForward`: the upgrade goes to the leaf with its headers
    /// (`Upgrade`, every `X-Stream-Protocol-Version`, `Sec-WebSocket-*`) untouched, and on
    /// 101 both sides are spliced under the tenant's limits.
    async fn stream(&self, mut req: Request<Incoming>, path: &str) -> Response<Body> {
        let client_upgrade = hyper::upgrade::on(&mut req);
        let (mut parts, body) = req.into_parts();
        headers::strip_hop_by_hop(&mut parts.headers, true);
        let exchange = self.exchange();
        headers::add_forwarded(&mut parts.headers, &exchange.client, parts.version);
        parts.uri = match path.parse() {
            Ok(uri) => uri,
            Err(_) => return bad_path(path),
        };
        if let Err(e) = self.leaf.prepare(&mut parts) {
            return leaf_failed(&e.to_string());
        }
        let timeouts = Timeouts {
            upgraded_idle: STREAM_IDLE,
            ..self.snapshot.config.timeouts
        };
        let target = Target {
            connector: self.leaf.connector(),
            label: format!("leaf {}", self.leaf.name()),
            timeouts,
        };
        let (up, down) = limit::connection_limiters(
            self.tenant.bandwidth.per_connection,
            &[&self.tenant.totals],
        );
        let shared = &self.client.shared;
        let job = SpliceJob {
            tasks: shared.tasks.clone(),
            kill: shared.kill.clone(),
            metrics: shared.metrics.clone(),
            route: ROUTE.to_string(),
            tenant: self.tenant.name.clone(),
            up,
            down,
        };
        match upgrade::switch(client_upgrade, parts, body, target, &exchange, job).await {
            Ok(res) => res,
            Err(e) => status(e.status(), reason_of(e.status()), &e.to_string()),
        }
    }

    /// A request that is not an upgrade, sent to the leaf as it came and answered with the
    /// leaf's answer.
    async fn relay(&self, req: Request<Incoming>, path: &str) -> Response<Body> {
        let (mut parts, body) = req.into_parts();
        headers::strip_hop_by_hop(&mut parts.headers, false);
        parts.uri = match path.parse() {
            Ok(uri) => uri,
            Err(_) => return bad_path(path),
        };
        match self.leaf.send(Request::from_parts(parts, body)).await {
            Ok(res) => respond(res),
            Err(e) => leaf_failed(&e.to_string()),
        }
    }

    /// `containerLogs`: the leaf's log body, cut into lines, through the tenant's
    /// `log_filter`, streamed as it comes (a `follow` stays open as long as the leaf's).
    async fn logs(&self, req: Request<Incoming>, path: &str, container: String) -> Response<Body> {
        let (mut parts, _) = req.into_parts();
        headers::strip_hop_by_hop(&mut parts.headers, false);
        parts.uri = match path.parse() {
            Ok(uri) => uri,
            Err(_) => return bad_path(path),
        };
        let res = match self
            .leaf
            .send(Request::from_parts(parts, Empty::<Bytes>::new()))
            .await
        {
            Ok(res) => res,
            Err(e) => return leaf_failed(&e.to_string()),
        };
        if res.status() != StatusCode::OK {
            return respond(res);
        }
        let (mut parts, body) = res.into_parts();
        headers::strip_hop_by_hop(&mut parts.headers, false);
        parts.headers.remove(header::CONTENT_LENGTH);
        let ctx = LogContext {
            namespace: self.target.namespace.clone(),
            pod: self.target.pod.clone(),
            container,
            leaf: self.leaf.name().to_string(),
        };
        let metrics = self.client.shared.metrics.clone();
        let tenant = self.tenant.name.clone();
        let on_counts = Arc::new(move |counts: LogCounts| metrics.count_log_lines(&tenant, counts));
        let lines = logs::filter(
            body.into_data_stream(),
            self.tenant.plugins.clone(),
            ctx,
            LogBatching::default(),
            on_counts,
        );
        let frames = futures_util::StreamExt::map(lines, |chunk| {
            chunk
                .map(Frame::data)
                .map_err(|e| Box::new(e) as crate::proxy::BoxError)
        });
        Response::from_parts(parts, StreamBody::new(frames).boxed_unsync())
    }

    /// `/run`: runs `command` in the leaf (exec over WebSocket v5) and answers its output.
    async fn run(&self, command: Vec<String>, container: &str) -> Response<Body> {
        if command.is_empty() {
            return text(StatusCode::BAD_REQUEST, "missing cmd");
        }
        match crate::kube::run::exec_output(self.leaf, self.target, container, &command).await {
            Ok(out) if out.exit_code == 0 => {
                let mut res = Response::new(full(out.output));
                res.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                res
            }
            Ok(out) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!(
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

/// The leaf's answer, relayed: hop-by-hop headers out, `Via` in.
fn respond(res: Response<Incoming>) -> Response<Body> {
    let (mut parts, body) = res.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers, false);
    headers::add_via(&mut parts.headers, parts.version);
    Response::from_parts(
        parts,
        body.map_err(|e| Box::new(e) as crate::proxy::BoxError)
            .boxed_unsync(),
    )
}

/// `GET /pods`: the pods of every leaf in namespaces a tenant owns, as a v1 `PodList`.
fn pod_list(snapshot: &Snapshot) -> Response<Body> {
    let tenants = &snapshot.config.tenants;
    let mut items: Vec<Value> = snapshot
        .leaves
        .values()
        .flat_map(|leaf| leaf.pods())
        .filter(|pod| {
            let ns = pod.metadata.namespace.as_deref().unwrap_or("");
            tenants.iter().any(|t| t.owns(ns))
        })
        .filter_map(|pod| serde_json::to_value(&*pod).ok())
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
    json_response(StatusCode::OK, &list)
}

fn container_of(route: &KubeletRoute) -> Option<&str> {
    match route {
        KubeletRoute::Exec { container, .. }
        | KubeletRoute::Attach { container, .. }
        | KubeletRoute::ContainerLogs { container, .. }
        | KubeletRoute::Run { container, .. } => Some(container),
        _ => None,
    }
}

fn verb_of(route: &KubeletRoute) -> Verb {
    match route {
        KubeletRoute::Exec { .. } | KubeletRoute::Run { .. } => Verb::Exec,
        KubeletRoute::Attach { .. } => Verb::Attach,
        KubeletRoute::PortForward { .. } => Verb::PortForward,
        KubeletRoute::ContainerLogs { .. } => Verb::Logs,
        KubeletRoute::Pods | KubeletRoute::Healthz => Verb::Get,
    }
}

/// The `reason` kube-apiserver gives a status code.
fn reason_of(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// A Kubernetes `Status` answer, as the root API server relays it to `kubectl`.
pub fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    json_response(code, &body)
}

fn json_response(code: StatusCode, body: &Value) -> Response<Body> {
    let mut res = Response::new(full(body.to_string()));
    *res.status_mut() = code;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// A plain-text answer, as the kubelet writes its own errors.
fn text(code: StatusCode, body: &str) -> Response<Body> {
    let mut res = Response::new(full(body.to_string()));
    *res.status_mut() = code;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

fn leaf_failed(reason: &str) -> Response<Body> {
    status(StatusCode::BAD_GATEWAY, "InternalError", reason)
}

fn bad_path(path: &str) -> Response<Body> {
    status(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!("{path:?} does not make a valid leaf request"),
    )
}
