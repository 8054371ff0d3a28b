//! One pod request on its way to its leaf, shared by the node-api and kube-api listeners:
//! the leaf choice (the tenant's `pod_router`, else the pod index), upgrades forwarded and
//! spliced under the tenant's limits, plain requests relayed, logs streamed through the
//! tenant's `log_filter`, and the Kubernetes `Status` answers both fronts give.
//!
//! It does not parse either front's paths or queries: each listener turns its own request
//! into a leaf path (`/api/v1/namespaces/{ns}/pods/{name}/{subresource}?...`) first.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};

use super::service::Client;
use crate::config::{TenantConfig, Timeouts};
use crate::k8s::kubelet::PodTarget;
use crate::k8s::logs::{self, LogBatching};
use crate::k8s::{Held, Leaf};
use crate::limit;
use crate::metrics::LogCounts;
use crate::plugins::{LogContext, PodRoute, PodRouteRequest, Verb};
use crate::proxy::headers::{self, ClientSide};
use crate::proxy::upgrade::{self, SpliceJob, Target};
use crate::proxy::{Body, Exchange, full};
use crate::snapshot::{Snapshot, Tenant};

/// How long a hijacked exec, attach or port-forward stream may stay silent: the kubelet's
/// `--streaming-connection-idle-timeout` default. Interactive shells sit idle for long.
pub const STREAM_IDLE: Duration = Duration::from_secs(4 * 3600);

/// The leaf a pod request goes to, and the index's copy of the pod there if it has one.
pub struct Chosen {
    pub leaf: Arc<Leaf>,
    pub held: Option<Held>,
}

/// Asks the tenant's `pod_router`, or, when it has none or it says `default`, the pod
/// index: exactly one reachable leaf holding the pod wins.
pub async fn choose_leaf(
    snapshot: &Snapshot,
    config: &TenantConfig,
    tenant: &Tenant,
    target: &PodTarget,
    container: Option<&str>,
    verb: Verb,
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
        container: container.map(str::to_string),
        verb,
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
pub struct Call<'a> {
    pub client: &'a Arc<Client>,
    pub snapshot: &'a Snapshot,
    pub tenant: &'a Arc<Tenant>,
    pub leaf: &'a Arc<Leaf>,
    pub target: &'a PodTarget,
    /// The route label the call is counted and spliced under (`node-api`, `kube-api`).
    pub route: &'static str,
}

impl Call<'_> {
    pub fn exchange(&self) -> Exchange<'_> {
        Exchange {
            route: self.route,
            client: ClientSide {
                peer: &self.client.forwarded_peer,
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
    pub async fn stream(&self, mut req: Request<Incoming>, path: &str) -> Response<Body> {
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
            route: self.route.to_string(),
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
    pub async fn relay(&self, req: Request<Incoming>, path: &str) -> Response<Body> {
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
    pub async fn logs(
        &self,
        req: Request<Incoming>,
        path: &str,
        container: String,
    ) -> Response<Body> {
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
}

/// The leaf's answer, relayed: hop-by-hop headers out, `Via` in.
pub fn respond(res: Response<Incoming>) -> Response<Body> {
    let (mut parts, body) = res.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers, false);
    headers::add_via(&mut parts.headers, parts.version);
    Response::from_parts(
        parts,
        body.map_err(|e| Box::new(e) as crate::proxy::BoxError)
            .boxed_unsync(),
    )
}

/// The `reason` kube-apiserver gives a status code.
pub fn reason_of(code: StatusCode) -> &'static str {
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

pub fn json_response(code: StatusCode, body: &Value) -> Response<Body> {
    let mut res = Response::new(full(body.to_string()));
    *res.status_mut() = code;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

pub fn leaf_failed(reason: &str) -> Response<Body> {
    status(StatusCode::BAD_GATEWAY, "InternalError", reason)
}

pub fn bad_path(path: &str) -> Response<Body> {
    status(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!("{path:?} does not make a valid leaf request"),
    )
}
