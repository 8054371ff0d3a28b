//! One pod request on its way to its leaf, shared by the node-api and kube-api listeners:
//! the leaf choice (the tenant's `pod_router`, else the pod index), upgrades forwarded and
//! spliced under the tenant's limits, plain requests relayed, logs streamed through the
//! tenant's `log_filter` ([`Call::send`] picks which), and the per-tenant request metrics
//! both fronts count.
//!
//! It does not parse either front's paths or queries: each listener turns its own request
//! into a leaf path (`/api/v1/namespaces/{ns}/pods/{name}/{subresource}?...`) first.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};

use super::client::{Client, Front};
use super::reply::{self, Dialect};
use crate::config::{TenantConfig, Timeouts};
use crate::k8s::kubelet::{PodTarget, verb_name};
use crate::k8s::logs::{self, LogBatching};
use crate::k8s::status::Status;
use crate::k8s::{Held, Leaf};
use crate::limit;
use crate::metrics::{LogCounts, PodCallLabels};
use crate::plugins::{LogContext, PodRoute, PodRouteRequest, Verb};
use crate::proxy::headers::{self, ClientSide};
use crate::proxy::upgrade::{self, SpliceJob, Target};
use crate::proxy::{Body, Exchange, Hops, prepare, prepare_response};
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
            return Err(reply::error(Dialect::Status, code, &message));
        }
        Err(e) => {
            return Err(reply::error(
                Dialect::Status,
                e.status(),
                &format!("pod router of tenant {:?}: {e}", tenant.name),
            ));
        }
    };
    let name = match (picked, holders.as_slice()) {
        (Some(name), _) => name,
        (None, [one]) => one.leaf.to_string(),
        (None, []) => {
            return Err(reply::error(
                Dialect::Status,
                StatusCode::NOT_FOUND,
                &format!("pods {:?} not found", target.pod),
            ));
        }
        (None, several) => {
            let mut names: Vec<&str> = several.iter().map(|h| &*h.leaf).collect();
            names.sort_unstable();
            return Err(reply::error(
                Dialect::Status,
                StatusCode::CONFLICT,
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
        reply::error(
            Dialect::Status,
            StatusCode::SERVICE_UNAVAILABLE,
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
    pub leaf: Arc<Leaf>,
    /// The index's copy of the pod in that leaf, if it has one.
    pub held: Option<Held>,
    pub target: &'a PodTarget,
    /// The front the call came in on: its route label and request metrics.
    pub front: Front,
}

impl<'a> Call<'a> {
    /// The call for `target`, to the leaf [`choose_leaf`] picks; its `Status` answer when
    /// none can be.
    #[allow(clippy::too_many_arguments)]
    pub async fn to_leaf(
        client: &'a Arc<Client>,
        snapshot: &'a Snapshot,
        config: &TenantConfig,
        tenant: &'a Arc<Tenant>,
        target: &'a PodTarget,
        container: Option<&str>,
        verb: Verb,
        front: Front,
    ) -> Result<Call<'a>, Response<Body>> {
        let Chosen { leaf, held } =
            choose_leaf(snapshot, config, tenant, target, container, verb).await?;
        Ok(Call {
            client,
            snapshot,
            tenant,
            leaf,
            held,
            target,
            front,
        })
    }
}

impl Call<'_> {
    fn route(&self) -> &'static str {
        self.front.label()
    }

    pub fn exchange(&self) -> Exchange<'_> {
        Exchange {
            route: self.route(),
            client: ClientSide {
                peer: &self.client.forwarded_peer,
                tls: self.client.tls,
                host: None,
                trusted: false,
            },
            metrics: &self.client.shared.metrics,
        }
    }

    /// The tail both fronts end in: logs through the tenant's filter, an upgrade spliced,
    /// anything else relayed and answered by the leaf (its own `Upgrade request required`
    /// or 400). `container` is the one asked for; a log call without one names the pod's
    /// only container to the filter, as kubectl leaves it out for one-container pods.
    pub async fn send(
        &self,
        req: Request<Incoming>,
        path: &str,
        verb: Verb,
        container: Option<String>,
    ) -> Response<Body> {
        if verb == Verb::Logs {
            let container = container
                .or_else(|| self.only_container())
                .unwrap_or_default();
            return self.logs(req, path, container).await;
        }
        if headers::is_upgrade(req.headers()) {
            return self.stream(req, path).await;
        }
        self.relay(req, path).await
    }

    fn only_container(&self) -> Option<String> {
        let held = self.held.as_ref()?;
        let mut names = held.containers();
        let first = names.next()?;
        names.next().is_none().then(|| first.to_string())
    }

    /// Counts the answered call in the front's per-tenant request metrics.
    pub fn count(&self, verb: Verb, res: &Response<Body>) {
        let metrics = &self.client.shared.metrics;
        let family = match self.front {
            Front::KubeApi => &metrics.kube_api_requests,
            Front::NodeApi | Front::Routes => &metrics.node_api_requests,
        };
        family
            .get_or_create(&PodCallLabels {
                tenant: self.tenant.name.clone(),
                leaf: self.leaf.name().to_string(),
                verb: verb_name(verb),
                status: res.status().as_u16(),
            })
            .inc();
    }

    /// `exec`, `attach`, `portForward`: the upgrade goes to the leaf with its headers
    /// (`Upgrade`, every `X-Stream-Protocol-Version`, `Sec-WebSocket-*`) untouched, and on
    /// 101 both sides are spliced under the tenant's limits.
    pub async fn stream(&self, mut req: Request<Incoming>, path: &str) -> Response<Body> {
        let client_upgrade = hyper::upgrade::on(&mut req);
        let (mut parts, body) = req.into_parts();
        let exchange = self.exchange();
        prepare(&mut parts, Hops::KeepUpgrade, Some(&exchange.client));
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
        let shared = &self.client.shared;
        let job = SpliceJob::new(
            &shared.tasks,
            &shared.kill,
            &shared.metrics,
            self.route(),
            Some(&self.tenant.name),
            limit::connection_limiters(
                self.tenant.bandwidth.per_connection,
                &[&self.tenant.totals],
            ),
        );
        match upgrade::switch(client_upgrade, parts, body, target, &exchange, job).await {
            Ok(res) => res,
            Err(e) => reply::error(Dialect::Status, e.status(), &e.to_string()),
        }
    }

    /// A request that is not an upgrade, sent to the leaf as it came and answered with the
    /// leaf's answer.
    pub async fn relay(&self, req: Request<Incoming>, path: &str) -> Response<Body> {
        let (mut parts, body) = req.into_parts();
        prepare(&mut parts, Hops::DropAll, None);
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
        prepare(&mut parts, Hops::DropAll, None);
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
    prepare_response(&mut parts);
    Response::from_parts(
        parts,
        body.map_err(|e| Box::new(e) as crate::proxy::BoxError)
            .boxed_unsync(),
    )
}

pub fn leaf_failed(reason: &str) -> Response<Body> {
    reply::error(Dialect::Status, StatusCode::BAD_GATEWAY, reason)
}

pub fn bad_path(path: &str) -> Response<Body> {
    reply::status(&Status::new(
        400,
        format!("{path:?} does not make a valid leaf request"),
    ))
}
