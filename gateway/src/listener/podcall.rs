//! One pod request on its way to its leaf, shared by the node-api and kube-api listeners:
//! the leaf choice (the tenant's `pod_router`, else the pod index), upgrades forwarded and
//! spliced under the tenant's limits, plain requests relayed, logs streamed through the
//! tenant's `log_filter` ([`Call::send`] picks which), and the per-tenant request metrics
//! both fronts count.
//!
//! It does not parse either front's paths or queries: each listener validates the names
//! and turns its own request into a leaf path (`/api/v1/namespaces/{ns}/pods/{name}/
//! {subresource}?...`) first. What goes to the leaf is only what the leaf needs
//! (`pod_headers::leaf_headers`, with the request's ID and trace); a caller asking to
//! impersonate is refused by both fronts with kube-apiserver's 403
//! (`pod_headers::impersonation`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};

use super::access::{ApiFacts, Deferred};
use super::api_lines::{self, FollowLine, StreamLine};
use super::client::{Client, Front};
use super::pod_headers::{ids_to_leaf, leaf_headers};
use super::reply::{self, Dialect};
use super::sessions::{self, Reach};
use crate::config::{TenantConfig, Timeouts};
use crate::k8s::kubelet::{PodTarget, verb_name};
use crate::k8s::logs::{self, LogBatching};
use crate::k8s::names;
use crate::k8s::status::Status;
use crate::k8s::{Held, Leaf};
use crate::limit;
use crate::metrics::{LogCounts, PodCallLabels};
use crate::plugins::{LogContext, PodRoute, PodRouteRequest, Verb};
use crate::proxy::headers::{self, ClientSide};
use crate::proxy::upgrade::{self, ClientUpgrade, SpliceJob, Target};
use crate::proxy::{Body, Exchange, Hops, Inbound, prepare, prepare_response};
use crate::runtime::sessions::{Kind, Scope, Session};
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
///
/// The router's answer is checked before it is followed: a leaf the tenant may reach (the
/// plugin runtime checks that) and, when some leaf's index holds the pod, one of those (a
/// router cannot send a call for a known pod to a leaf where that name may be someone
/// else's). The names were validated
/// by the front; they are checked again here, as nothing below may see another.
pub async fn choose_leaf(
    snapshot: &Snapshot,
    config: &TenantConfig,
    tenant: &Tenant,
    target: &PodTarget,
    container: Option<&str>,
    verb: Verb,
) -> Result<Chosen, Response<Body>> {
    if let Err(e) = names::check_pod_call(&target.namespace, &target.pod, container) {
        return Err(reply::status(&Status::new(400, e.to_string())));
    }
    let everywhere = snapshot.pods.holders(&target.namespace, &target.pod);
    let held_anywhere = !everywhere.is_empty();
    let holders: Vec<Held> = everywhere
        .into_iter()
        .filter(|h| config.may_reach(&h.leaf))
        .collect();
    // The router's request (its copies of the names, the labels, the reachable leaves
    // sorted) is built only for a tenant that has one: this is on every stream's path.
    let routed = if tenant.plugins.has_pod_router() {
        let mut reachable: Vec<String> = snapshot
            .leaves
            .keys()
            .filter(|name| config.may_reach(name))
            .cloned()
            .collect();
        reachable.sort();
        let request = PodRouteRequest {
            namespace: target.namespace.clone(),
            pod: target.pod.clone(),
            container: container.map(str::to_string),
            verb,
            labels: holders.first().map(|h| h.labels().clone()),
            leaves: reachable,
        };
        tenant.plugins.route_pod(&request).await
    } else {
        Ok(PodRoute::Default)
    };
    let picked = match routed {
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
    // The plugin runtime already refused a leaf outside `request.leaves`.
    if let Some(name) = &picked {
        if held_anywhere && !holders.iter().any(|h| *h.leaf == **name) {
            return Err(reply::error(
                Dialect::Status,
                StatusCode::BAD_GATEWAY,
                &format!(
                    "pod router of tenant {:?} chose leaf {name:?} for pod {}/{}, which does not hold it",
                    tenant.name, target.namespace, target.pod
                ),
            ));
        }
    }
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
            conn: self.client.conn(),
            metrics: &self.client.shared.metrics,
        }
    }

    /// The tail both fronts end in: logs through the tenant's filter, an upgrade spliced,
    /// anything else relayed and answered by the leaf (its own `Upgrade request required`
    /// or 400). `container` is the one asked for; a log call without one names the pod's
    /// only container to the filter, as kubectl leaves it out for one-container pods.
    pub async fn send<B: Inbound>(
        &self,
        req: Request<B>,
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
            return self.stream(req, path, verb).await;
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

    /// `exec`, `attach`, `portForward`: the upgrade goes to the leaf with its negotiation
    /// headers (`Upgrade`, every `X-Stream-Protocol-Version`, `Sec-WebSocket-*`) untouched
    /// and nothing else of the caller's ([`leaf_headers`]), and on 101 both sides are
    /// spliced under the tenant's limits.
    pub async fn stream<B: Inbound>(
        &self,
        mut req: Request<B>,
        path: &str,
        verb: Verb,
    ) -> Response<Body> {
        let session = match self.open_session(req.headers(), Kind::Stream) {
            Ok(s) => s,
            Err(res) => return res,
        };
        // The call's line, written when its splice ends.
        let line = api_lines::line_of(&req)
            .map(|line| StreamLine::new(line, self.client.clone(), self.facts(verb)));
        let logged = line.is_some();
        let client_upgrade = ClientUpgrade::take(&mut req);
        let (mut parts, body) = req.into_parts();
        parts.headers = self.leaf_request_headers(&parts.headers, true);
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
            spares: Some(self.leaf.spares()),
            label: format!("leaf {}", self.leaf.name()),
            timeouts,
        };
        let shared = &self.client.shared;
        // The splice ends on the session's own token (a child of the gateway's kill),
        // and holds the session, counted against the tenant's cap, until it ends.
        let job = SpliceJob::new(
            &shared.tasks,
            &session.token().clone(),
            &shared.metrics,
            self.route(),
            Some(&self.tenant.name),
            limit::connection_limiters(
                self.tenant.bandwidth.per_connection,
                &[&self.tenant.totals],
            ),
        )
        .holding(session)
        .logging(line);
        match upgrade::switch(client_upgrade, parts, body, target, &exchange, job).await {
            Ok(mut res) => {
                if logged && res.status() == StatusCode::SWITCHING_PROTOCOLS {
                    res.extensions_mut().insert(Deferred);
                }
                res
            }
            Err(e) => reply::error(Dialect::Status, e.status(), &e.to_string()),
        }
    }

    /// What this call's access log line says of it, its verb `verb`.
    fn facts(&self, verb: Verb) -> ApiFacts {
        ApiFacts::call(
            &self.tenant.name,
            verb_name(verb),
            &self.target.namespace,
            &self.target.pod,
            self.leaf.name(),
        )
    }

    /// [`leaf_headers`], and the request's ID (`[request_id]`, as `listener::ids` chose
    /// it) with, under `[tracing] propagate`, its trace context: the leaf sees the ID and
    /// trace the access log line writes.
    fn leaf_request_headers(&self, from: &HeaderMap, upgrade: bool) -> HeaderMap {
        let mut out = leaf_headers(from, upgrade);
        ids_to_leaf(from, &mut out, &self.snapshot.config);
        out
    }

    /// A request that is not an upgrade, sent to the leaf with its body and the headers
    /// [`leaf_headers`] lets through, and answered with the leaf's answer.
    pub async fn relay<B: Inbound>(&self, req: Request<B>, path: &str) -> Response<Body> {
        let (mut parts, body) = req.into_parts();
        parts.headers = self.leaf_request_headers(&parts.headers, false);
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
    pub async fn logs<B>(&self, req: Request<B>, path: &str, container: String) -> Response<Body> {
        let session = if follows(path) {
            match self.open_session(req.headers(), Kind::LogFollow) {
                Ok(s) => Some(s),
                Err(res) => return res,
            }
        } else {
            None
        };
        // A followed log's line, written when its body ends (once the leaf said 200).
        let line = session.as_ref().and_then(|_| api_lines::line_of(&req));
        let (mut parts, _) = req.into_parts();
        // Never `Accept-Encoding` among them: a gzip body would pass the filter unread.
        parts.headers = self.leaf_request_headers(&parts.headers, false);
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
        let line = line.map(|line| {
            parts.extensions.insert(Deferred);
            FollowLine::new(line, self.client.clone(), self.facts(Verb::Logs))
        });
        match session {
            Some(session) => Response::from_parts(
                parts,
                StreamBody::new(until_revoked(frames, session, line)).boxed_unsync(),
            ),
            None => Response::from_parts(parts, StreamBody::new(frames).boxed_unsync()),
        }
    }

    /// The session of this call's stream or log follow, in its pod's namespace and leaf
    /// (the 429 past the tenant's cap).
    #[allow(
        clippy::result_large_err,
        reason = "the refusal is the answer itself, built on the rare path"
    )]
    fn open_session(
        &self,
        headers: &http::HeaderMap,
        kind: Kind,
    ) -> Result<Session, Response<Body>> {
        let Some(config) = self
            .snapshot
            .config
            .tenants
            .iter()
            .find(|t| t.name == self.tenant.name)
        else {
            return Err(reply::error(
                Dialect::Status,
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("tenant {:?} is not loaded", self.tenant.name),
            ));
        };
        let reach = Reach {
            scope: Scope::Namespace(self.target.namespace.clone()),
            leaf: Some(self.leaf.name()),
        };
        sessions::open(
            self.client,
            headers,
            &self.snapshot.config,
            config,
            reach,
            kind,
        )
    }
}

/// Whether a leaf log path asks to follow (`follow` as Go's `strconv.ParseBool` reads
/// true, as the leaf's API server does).
fn follows(path: &str) -> bool {
    let query = path.split_once('?').map_or("", |(_, q)| q);
    form_urlencoded::parse(query.as_bytes())
        .any(|(k, v)| k == "follow" && matches!(&*v, "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

/// A followed log's frames until its session is revoked (or shutdown's kill fires): then
/// the body ends in an error, so the client sees the stream cut (a reset, or a chunked
/// body without its last chunk) rather than a log that ended. The session is held until
/// the body ends or is dropped; so is `line`, told what was sent and how it ended.
fn until_revoked<S>(
    frames: S,
    session: Session,
    line: Option<FollowLine>,
) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, crate::proxy::BoxError>> + Send
where
    S: futures_util::Stream<Item = Result<Frame<Bytes>, crate::proxy::BoxError>> + Send + 'static,
{
    let frames = Box::pin(frames);
    futures_util::stream::unfold(Some((frames, session, line)), |state| async move {
        let (mut frames, session, mut line) = state?;
        let ended = |line: &mut Option<FollowLine>, reason| {
            if let Some(line) = line {
                line.ended(reason);
            }
        };
        tokio::select! {
            biased;
            _ = session.token().cancelled() => {
                let why = if session.revoked().is_some() {
                    ended(&mut line, "revoked");
                    "the tenant's access was revoked by a config reload"
                } else {
                    ended(&mut line, "drain");
                    "the gateway is shutting down"
                };
                Some((Err(why.into()), None))
            }
            next = futures_util::StreamExt::next(&mut frames) => match next {
                Some(Ok(frame)) => {
                    if let (Some(line), Some(data)) = (&mut line, frame.data_ref()) {
                        line.sent(data.len());
                    }
                    Some((Ok(frame), Some((frames, session, line))))
                }
                Some(Err(e)) => {
                    ended(&mut line, "upstream error");
                    Some((Err(e), None))
                }
                None => {
                    ended(&mut line, "closed");
                    None
                }
            }
        }
    })
}

/// The leaf's answer, relayed as a backend's is (`proxy::prepare_response`).
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
