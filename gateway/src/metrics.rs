//! The gateway's Prometheus metrics: one registry, created at start and kept across reloads.
//!
//! Metric handles are cheap clones of shared atomics, so the request path records into them
//! without locks. This module owns names, help texts and label sets; `admin` only encodes.
//! It must not hold per-snapshot state: a reload must not reset a counter.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::plugins::PluginMetrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub listener: String,
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabels {
    pub listener: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamErrorLabels {
    pub route: String,
    pub backend: String,
    /// `connect`, `timeout`, `reset`, `protocol`.
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SpliceLabels {
    pub route: String,
    pub tenant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SpliceByteLabels {
    pub route: String,
    pub tenant: String,
    /// `client_to_upstream` or `upstream_to_client`.
    pub direction: &'static str,
}

/// A served certificate: the listener and the host patterns it is chosen for (`*` for the
/// listener's default), comma-separated.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CertificateLabels {
    pub listener: String,
    pub hosts: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeafLabels {
    pub leaf: String,
}

/// A read-only kind a leaf keeps for the kube-api front: the leaf, and the kind as a
/// tenant's `resources` names it (`deployments.apps`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeafKindLabels {
    pub leaf: String,
    pub resource: String,
}

/// Per leaf cluster: its pod watch's health and size. Kept by the leaf's reflector task;
/// a leaf's series go when the leaf leaves the config.
/// A pod call (node-api or kube-api): which tenant's pod, in which leaf, what it did, how
/// it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodCallLabels {
    pub tenant: String,
    pub leaf: String,
    pub verb: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LogLineLabels {
    pub tenant: String,
    /// `kept`, `dropped` or `rewritten` by the tenant's log filter.
    pub verdict: &'static str,
}

/// A tenant's long-lived call of one kind (`watch`, `stream`, `log_follow`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SessionLabels {
    pub tenant: String,
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SessionCapLabels {
    pub tenant: String,
    pub kind: &'static str,
    /// `tenant` or `connection`: which cap refused it.
    pub cap: &'static str,
}

/// Open watches, streams and log follows: those a reload revoked, those a cap refused.
#[derive(Clone, Debug, Default)]
pub struct SessionMetrics {
    pub revoked: Family<SessionLabels, Counter>,
    pub capped: Family<SessionCapLabels, Counter>,
}

impl SessionMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "revoked",
            "Open watches, streams and log follows a reload ended because the tenant's config no longer allowed them, by tenant and kind",
            self.revoked.clone(),
        );
        registry.register(
            "sessions_capped",
            "Watches, streams and log follows refused with 429 at a [tenant.concurrent] cap, by tenant, kind and cap (tenant or connection)",
            self.capped.clone(),
        );
    }
}

#[derive(Clone, Debug, Default)]
pub struct LeafMetrics {
    /// 1 while the leaf's pod watch is synced, 0 while it fails.
    pub up: Family<LeafLabels, Gauge>,
    /// Pods the leaf's reflector holds.
    pub pods: Family<LeafLabels, Gauge>,
    /// Times the leaf's pod watch failed and started again.
    pub watch_restarts: Family<LeafLabels, Counter>,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every metric the gateway records.
pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub request_duration: HistogramFamily<RouteLabels>,
    pub active_connections: Family<ListenerLabels, Gauge>,
    pub connections: Family<ListenerLabels, Counter>,
    /// Times a listener reached `max_connections` and stopped accepting until one closed.
    pub listener_saturated: Family<ListenerLabels, Counter>,
    /// Requests the HTTP/1.1 fast path served (`listener::fast`), and node-API upgrades
    /// read in place (`listener::upgrades`); the rest went to hyper.
    pub fast_path_requests: Family<ListenerLabels, Counter>,
    /// Connections the fast path handed to hyper at a request it does not take.
    pub fast_path_handoffs: Family<ListenerLabels, Counter>,
    pub upstream_errors: Family<UpstreamErrorLabels, Counter>,
    pub upgraded_active: Family<SpliceLabels, Gauge>,
    pub upgraded_total: Family<SpliceLabels, Counter>,
    pub spliced_bytes: Family<SpliceByteLabels, Counter>,
    /// Seconds a direction of a spliced connection waited for its bandwidth limit.
    pub throttled_seconds: Family<SpliceByteLabels, Counter<f64>>,
    pub reloads: Counter,
    /// Plugin calls and their failures, by tenant, plugin, hook and kind.
    pub plugins: PluginMetrics,
    pub reload_failures: Counter,
    /// File events the watcher saw whose files hashed the same as the serving config's:
    /// no reload was started.
    pub reloads_skipped_unchanged: Counter,
    pub leaves: LeafMetrics,
    pub node_api_requests: Family<PodCallLabels, Counter>,
    pub kube_api_requests: Family<PodCallLabels, Counter>,
    pub log_lines: Family<LogLineLabels, Counter>,
    /// 1 while this replica holds the leader Lease and writes virtual nodes.
    pub leader: Gauge,
    /// Writes to the root cluster for virtual nodes, by kind and outcome.
    pub root_writes: Family<RootWriteLabels, Counter>,
    /// `[kubernetes.ingress]`: Ingresses served and skipped, build time, endpoints.
    pub ingress: IngressMetrics,
    /// `[kubernetes.gateway]`: HTTPRoutes accepted and not, refusals by reason, build time.
    pub gateway: GatewayMetrics,
    /// Revoked and capped long-lived calls.
    pub sessions: SessionMetrics,
    /// Access log lines dropped because a serving thread's buffer was full (the writer
    /// could not keep up) or the file could not be written.
    pub access_log_dropped: Counter,
    /// Seconds until each served certificate's `notAfter`: refreshed from the snapshot at
    /// each scrape ([`Metrics::encode_scrape`]), since it counts down between
    /// reloads and a reload or Secret change adds and removes certificates.
    certificate_expiry: Family<CertificateLabels, Gauge>,
    /// Objects each leaf keeps of each read-only kind, and their size as JSON text:
    /// refreshed from the snapshot at each scrape, as a reload starts and stops kinds.
    leaf_objects: Family<LeafKindLabels, Gauge>,
    leaf_object_bytes: Family<LeafKindLabels, Gauge>,
    /// Serialises a scrape's refresh of the families above with its encoding, so two
    /// scrapes at once never see each other's half-cleared family.
    scrape: std::sync::Mutex<()>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RootWriteLabels {
    /// `node`, `node_status`, `node_lease`.
    pub kind: &'static str,
    /// `ok`, `conflict`, `error`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IngressStateLabels {
    /// `served` or `skipped`.
    pub state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IngressRefusedLabels {
    /// `rules` or `certificate`.
    pub what: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IngressBackendLabels {
    /// `namespace/service:port`, the port as the Ingress names it.
    pub backend: String,
}

/// The Ingress provider's: how many Ingresses it serves, how long a rebuild takes, how
/// many ready endpoints each backend has.
#[derive(Clone, Debug)]
pub struct IngressMetrics {
    pub ingresses: Family<IngressStateLabels, Gauge>,
    /// Model build plus snapshot swap, per applied change.
    pub build_seconds: Histogram,
    pub backend_endpoints: Family<IngressBackendLabels, Gauge>,
    /// Hosts refused to an Ingress because the TOML config, another namespace or another
    /// tenant owns them, or its tenant's `hosts` leave them out.
    pub refused: Family<IngressRefusedLabels, Gauge>,
}

impl Default for IngressMetrics {
    fn default() -> Self {
        Self {
            ingresses: Family::default(),
            build_seconds: latency_histogram(),
            backend_endpoints: Family::default(),
            refused: Family::default(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GatewayRouteLabels {
    /// `accepted` (by at least one parent) or `not_accepted`.
    pub state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GatewayRefusalLabels {
    /// `HTTPRoute` or `Gateway`.
    pub kind: &'static str,
    /// The status condition's reason (`NotAllowedByListeners`, `InvalidCertificateRef`...).
    pub reason: &'static str,
}

/// The Gateway API source's: its HTTPRoutes, refusals, and what a build costs.
#[derive(Clone, Debug)]
pub struct GatewayMetrics {
    pub routes: Family<GatewayRouteLabels, Gauge>,
    /// Refusals in the last model applied, as `/status` lists them.
    pub refusals: Family<GatewayRefusalLabels, Gauge>,
    /// Translation plus snapshot swap, per applied change.
    pub build_seconds: Histogram,
    /// HTTPRoutes translated again by each build (the others' translation is kept).
    pub translated: Counter,
}

impl Default for GatewayMetrics {
    fn default() -> Self {
        Self {
            routes: Family::default(),
            refusals: Family::default(),
            build_seconds: latency_histogram(),
            translated: Counter::default(),
        }
    }
}

fn latency_histogram() -> Histogram {
    // 100 µs .. ~52 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers every core metric. Subsystems with metrics of their own add
    /// them through [`Metrics::registry_mut`] before the gateway wraps this in an `Arc`.
    pub fn new() -> Self {
        let mut m = Metrics {
            requests: Family::default(),
            request_duration: Family::new_with_constructor(latency_histogram),
            active_connections: Family::default(),
            connections: Family::default(),
            listener_saturated: Family::default(),
            fast_path_requests: Family::default(),
            fast_path_handoffs: Family::default(),
            upstream_errors: Family::default(),
            upgraded_active: Family::default(),
            upgraded_total: Family::default(),
            spliced_bytes: Family::default(),
            throttled_seconds: Family::default(),
            reloads: Counter::default(),
            plugins: PluginMetrics::default(),
            reload_failures: Counter::default(),
            reloads_skipped_unchanged: Counter::default(),
            leaves: LeafMetrics::default(),
            node_api_requests: Family::default(),
            kube_api_requests: Family::default(),
            log_lines: Family::default(),
            leader: Gauge::default(),
            root_writes: Family::default(),
            ingress: IngressMetrics::default(),
            gateway: GatewayMetrics::default(),
            sessions: SessionMetrics::default(),
            access_log_dropped: Counter::default(),
            certificate_expiry: Family::default(),
            leaf_objects: Family::default(),
            leaf_object_bytes: Family::default(),
            scrape: std::sync::Mutex::new(()),
            registry: Registry::with_prefix("leafgate"),
        };
        let registry = &mut m.registry;
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease (it alone writes virtual nodes)",
            m.leader.clone(),
        );
        registry.register(
            "root_writes",
            "Writes to the root cluster for virtual nodes, by kind and outcome",
            m.root_writes.clone(),
        );
        registry.register(
            "requests",
            "HTTP requests answered, by listener, route and status",
            m.requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from request head to response head, by route",
            m.request_duration.clone(),
        );
        registry.register(
            "active_connections",
            "Client connections open now, by listener",
            m.active_connections.clone(),
        );
        registry.register(
            "connections",
            "Client connections accepted, by listener",
            m.connections.clone(),
        );
        registry.register(
            "listener_saturated",
            "Times a listener was at max_connections and left new clients in the backlog",
            m.listener_saturated.clone(),
        );
        registry.register(
            "http1_fast_path_requests",
            "Requests served by the HTTP/1.1 fast path (on node-api listeners: upgrades read in place), by listener",
            m.fast_path_requests.clone(),
        );
        registry.register(
            "http1_fast_path_handoffs",
            "Connections the HTTP/1.1 fast path handed to hyper at a request it does not take",
            m.fast_path_handoffs.clone(),
        );
        registry.register(
            "upstream_errors",
            "Failed upstream exchanges, by route, backend and kind",
            m.upstream_errors.clone(),
        );
        registry.register(
            "upgraded_connections_active",
            "Hijacked (101) connections being spliced now",
            m.upgraded_active.clone(),
        );
        registry.register(
            "upgraded_connections",
            "Hijacked (101) connections, all time",
            m.upgraded_total.clone(),
        );
        registry.register(
            "spliced_bytes",
            "Bytes copied on hijacked connections, by route, tenant and direction",
            m.spliced_bytes.clone(),
        );
        registry.register(
            "throttled_seconds",
            "Time hijacked connections waited on bandwidth limits",
            m.throttled_seconds.clone(),
        );
        registry.register("reloads", "Successful config reloads", m.reloads.clone());
        registry.register(
            "access_log_dropped",
            "Access log lines dropped, never waited for: a serving thread's buffer was full or the log could not be written",
            m.access_log_dropped.clone(),
        );
        m.plugins.register(registry);
        m.sessions.register(registry);
        registry.register(
            "reload_failures",
            "Config reloads rejected (the running config stayed)",
            m.reload_failures.clone(),
        );
        registry.register(
            "reloads_skipped_unchanged",
            "File events on watched files whose content had not changed (no reload)",
            m.reloads_skipped_unchanged.clone(),
        );
        registry.register(
            "leaf_up",
            "1 while the leaf's pod watch is synced, 0 while it fails",
            m.leaves.up.clone(),
        );
        registry.register(
            "leaf_pods",
            "Pods the leaf's reflector holds",
            m.leaves.pods.clone(),
        );
        registry.register(
            "leaf_watch_restarts",
            "Times the leaf's pod watch failed and was started again",
            m.leaves.watch_restarts.clone(),
        );
        registry.register(
            "node_api_requests",
            "Node API requests on pods, by tenant, leaf, verb and status (streams are also in upgraded_connections with route node-api)",
            m.node_api_requests.clone(),
        );
        registry.register(
            "kube_api_requests",
            "kube-api requests on pod subresources, by tenant, leaf, verb and status (streams are also in upgraded_connections with route kube-api)",
            m.kube_api_requests.clone(),
        );
        registry.register(
            "log_lines",
            "Log lines through node-api log streams, by tenant and log-filter verdict",
            m.log_lines.clone(),
        );
        registry.register(
            "ingresses",
            "Ingresses of leafgate's class, by state: served, or skipped for a bad annotation",
            m.ingress.ingresses.clone(),
        );
        registry.register(
            "ingress_build_seconds",
            "Time to turn the watched Ingress objects into routes and swap them in",
            m.ingress.build_seconds.clone(),
        );
        registry.register(
            "ingress_backend_endpoints",
            "Ready endpoints of each Ingress backend (namespace/service:port)",
            m.ingress.backend_endpoints.clone(),
        );
        registry.register(
            "ingress_hosts_refused",
            "Hosts whose Ingress rules or certificate are refused because the TOML config, another namespace or another tenant owns them, or the tenant's hosts patterns leave them out",
            m.ingress.refused.clone(),
        );
        registry.register(
            "gateway_routes",
            "HTTPRoutes naming a Gateway of leafgate's, by state: accepted by at least one parent, or not_accepted",
            m.gateway.routes.clone(),
        );
        registry.register(
            "gateway_refusals",
            "Gateway API refusals in status (a route's parent, a Gateway or a listener condition saying no), by kind and reason",
            m.gateway.refusals.clone(),
        );
        registry.register(
            "gateway_build_seconds",
            "Time to translate the watched Gateway API objects into routes and swap them in",
            m.gateway.build_seconds.clone(),
        );
        registry.register(
            "gateway_routes_translated",
            "HTTPRoutes translated again by the Gateway API builds (a change translates only the routes whose inputs it changed)",
            m.gateway.translated.clone(),
        );
        registry.register(
            "certificate_expiry_seconds",
            "Seconds until a served certificate's notAfter (negative once expired), by listener and the hosts it is chosen for (* for the default)",
            m.certificate_expiry.clone(),
        );
        registry.register(
            "leaf_objects",
            "Objects a leaf's reflector keeps of a read-only kind the kube-api front serves, by leaf and resource",
            m.leaf_objects.clone(),
        );
        registry.register(
            "leaf_object_bytes",
            "The size as JSON text of the objects (and their printed cells) a leaf keeps of a read-only kind, by leaf and resource",
            m.leaf_object_bytes.clone(),
        );
        m
    }

    /// Counts one batch of a tenant's filtered log lines.
    pub fn count_log_lines(&self, tenant: &str, counts: LogCounts) {
        for (verdict, n) in [
            ("kept", counts.kept),
            ("dropped", counts.dropped),
            ("rewritten", counts.rewritten),
        ] {
            if n > 0 {
                self.log_lines
                    .get_or_create(&LogLineLabels {
                        tenant: tenant.to_string(),
                        verdict,
                    })
                    .inc_by(n);
            }
        }
    }

    /// Mutable access for subsystems that register their own metrics at start.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }

    /// [`Metrics::encode`], with `leafgate_certificate_expiry_seconds` set to exactly
    /// `certificates` (seconds left each), and `leafgate_leaf_objects` and
    /// `leafgate_leaf_object_bytes` to exactly `kinds` (objects and bytes each): what is no
    /// longer served or kept loses its series.
    pub fn encode_scrape(
        &self,
        certificates: impl IntoIterator<Item = (CertificateLabels, i64)>,
        kinds: impl IntoIterator<Item = (LeafKindLabels, i64, i64)>,
    ) -> String {
        let _scrape = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        self.certificate_expiry.clear();
        for (labels, seconds) in certificates {
            self.certificate_expiry.get_or_create(&labels).set(seconds);
        }
        self.leaf_objects.clear();
        self.leaf_object_bytes.clear();
        for (labels, objects, bytes) in kinds {
            self.leaf_objects.get_or_create(&labels).set(objects);
            self.leaf_object_bytes.get_or_create(&labels).set(bytes);
        }
        self.encode()
    }
}

/// What a tenant's log filter did to a batch of lines, counted by [`Metrics::count_log_lines`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LogCounts {
    pub kept: u64,
    pub dropped: u64,
    pub rewritten: u64,
}
