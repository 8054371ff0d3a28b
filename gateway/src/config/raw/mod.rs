//! The config file exactly as written: serde shapes with `deny_unknown_fields` everywhere
//! and spans on every value that validation may need to point at. The root cluster's
//! sections are in `kubernetes`, a tenant's plugins in `plugins`.
//!
//! Nothing here checks meaning (that is `validate`), and nothing past the config layer
//! sees these types. Enums that deserialize straight into their typed form
//! ([`ListenerKind`], [`UpstreamProtocol`], units) are the model's, imported from there.

pub mod kubernetes;
pub mod plugins;

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::config::model::units::{HumanDuration, RateLimit};
use crate::config::model::{ListenerKind, StalePolicy, UpstreamProtocol};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub admin: Option<RawAdmin>,
    #[serde(default)]
    pub timeouts: RawTimeouts,
    #[serde(default, rename = "listener")]
    pub listeners: Vec<RawListener>,
    #[serde(default, rename = "tenant")]
    pub tenants: Vec<RawTenant>,
    #[serde(default, rename = "leaf")]
    pub leaves: Vec<RawLeaf>,
    /// Boxed: a raw route is large, and the reloader's parse cache moves thousands of them
    /// from one file's parse to the next.
    #[serde(default, rename = "route")]
    #[allow(
        clippy::vec_box,
        reason = "moved between parses by pointer, not by 700 bytes"
    )]
    pub routes: Vec<Box<RawRoute>>,
    pub kubernetes: Option<Spanned<kubernetes::RawKubernetes>>,
    #[serde(default, rename = "virtual_node")]
    pub virtual_nodes: Vec<Spanned<kubernetes::RawVirtualNode>>,
    pub access_log: Option<RawAccessLog>,
    pub request_id: Option<RawRequestId>,
    pub tracing: Option<RawTracing>,
}

/// `[tracing]`: W3C trace context.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTracing {
    pub propagate: Option<bool>,
}

/// `[request_id]`: every request gets an ID (kept from a trusted proxy, else made).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRequestId {
    pub header: Option<Spanned<String>>,
    pub response: Option<bool>,
}

/// `[access_log]`, and a listener's `access_log` table: each key left out is the
/// top-level table's (or the default).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAccessLog {
    pub format: Option<Spanned<String>>,
    pub template: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub sample: Option<Spanned<f64>>,
    pub exclude_paths: Option<Vec<Spanned<String>>>,
    pub query: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    pub bind: Spanned<String>,
    /// Bearer tokens for `/status` and `POST /reload` from peers that are not loopback.
    pub tokens_file: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTimeouts {
    pub connect: Option<HumanDuration>,
    pub response_header: Option<HumanDuration>,
    pub idle: Option<HumanDuration>,
    pub upgraded_idle: Option<HumanDuration>,
    pub shutdown_grace: Option<HumanDuration>,
    pub first_byte: Option<HumanDuration>,
    pub client_idle: Option<HumanDuration>,
    pub shutdown_delay: Option<HumanDuration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawListener {
    pub name: Spanned<String>,
    pub bind: Spanned<String>,
    pub kind: Option<Spanned<ListenerKind>>,
    pub tls: Option<RawServerTls>,
    #[serde(default)]
    pub certificate: Vec<RawSniCertificate>,
    pub max_connections: Option<Spanned<u64>>,
    #[serde(default)]
    pub trusted_proxies: Vec<Spanned<String>>,
    /// Serve plain HTTP/1.1 exchanges on leafgate's own fast path (default true); false
    /// serves every request through hyper.
    pub http1_fast_path: Option<bool>,
    #[serde(default)]
    pub allowed_clients: Vec<Spanned<String>>,
    /// kube-api: the version `/version` reports (`v1.33.4`) instead of the leaves' oldest.
    pub kubernetes_version: Option<Spanned<String>>,
    /// This listener's access log, over `[access_log]`.
    pub access_log: Option<RawAccessLog>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServerTls {
    pub cert: Spanned<String>,
    pub key: Spanned<String>,
    pub client_ca: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSniCertificate {
    pub hosts: Spanned<Vec<Spanned<String>>>,
    pub cert: Spanned<String>,
    pub key: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTenant {
    pub name: Spanned<String>,
    #[serde(default)]
    pub namespaces: Vec<Spanned<String>>,
    #[serde(default)]
    pub bandwidth: RawBandwidth,
    #[serde(default)]
    pub plugins: plugins::RawTenantPlugins,
    pub leaves: Option<Vec<Spanned<String>>>,
    /// kube-api front: a file of bearer tokens, one a line, `#` comments.
    pub tokens_file: Option<Spanned<String>>,
    /// kube-api front: client certificate names (CN) that authenticate as this tenant.
    #[serde(default)]
    pub client_names: Vec<Spanned<String>>,
    /// Caps on the tenant's open watches, streams and log follows.
    #[serde(default)]
    pub concurrent: RawConcurrent,
    /// The host patterns its namespaces' Ingresses may claim; absent: any host.
    pub hosts: Option<Spanned<Vec<Spanned<String>>>>,
    /// kube-api front: the read-only kinds it is served (`"default"`, `"secrets"`,
    /// `"deployments.apps"`, ...); absent: `["default"]`.
    pub resources: Option<Vec<Spanned<String>>>,
}

/// `[tenant.concurrent]`: how many long-lived calls of each kind the tenant may hold open.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConcurrent {
    pub watches: Option<RawCap>,
    pub streams: Option<RawCap>,
    pub log_follows: Option<RawCap>,
}

/// One kind's cap: over all the tenant's connections, and on any one connection.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCap {
    pub total: Option<Spanned<u64>>,
    pub per_connection: Option<Spanned<u64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBandwidth {
    pub per_connection: Option<RateLimit>,
    pub total: Option<RateLimit>,
}

/// A route's `bandwidth`: a bare limit is per connection (`bandwidth = "1MiB/s"`); the
/// table form sets `per_connection` and `total` like a tenant's.
#[derive(Debug, Default)]
pub struct RawRouteBandwidth(pub RawBandwidth);

impl<'de> Deserialize<'de> for RawRouteBandwidth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawRouteBandwidth;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a per-connection rate like \"1MiB/s\" or a table { per_connection, total }",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let rate = v.parse().map_err(E::custom)?;
                Ok(RawRouteBandwidth(RawBandwidth {
                    per_connection: Some(RateLimit { rate, burst: None }),
                    total: None,
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                RawBandwidth::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawRouteBandwidth)
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLeaf {
    pub name: Spanned<String>,
    pub kubeconfig: Spanned<String>,
    /// A context of the kubeconfig; its `current-context` when left out.
    pub context: Option<Spanned<String>>,
    pub stale: Option<StalePolicy>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoute {
    pub name: Option<Spanned<String>>,
    pub listeners: Option<Vec<Spanned<String>>>,
    pub host: Spanned<String>,
    pub path: Option<Spanned<String>>,
    pub exact: Option<Spanned<String>>,
    #[serde(default = "no_backends")]
    pub backends: Spanned<Vec<Spanned<String>>>,
    pub protocol: Option<UpstreamProtocol>,
    pub tls: Option<RawUpstreamTls>,
    pub direct: Option<Spanned<RawDirect>>,
    pub tenant: Option<Spanned<String>>,
    pub bandwidth: Option<RawRouteBandwidth>,
    #[serde(default)]
    pub timeouts: RawTimeouts,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpstreamTls {
    pub ca: Option<Spanned<String>>,
    pub cert: Option<Spanned<String>>,
    pub key: Option<Spanned<String>>,
    pub server_name: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDirect {
    #[serde(default = "default_status")]
    pub status: Spanned<u16>,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
}

fn no_backends() -> Spanned<Vec<Spanned<String>>> {
    Spanned::new(0..0, Vec::new())
}

fn default_status() -> Spanned<u16> {
    Spanned::new(0..0, 200)
}

/// Moves every span of a raw value by `delta` bytes: a `[[route]]` section parsed at one
/// offset of an earlier file and reused where it now sits. Defaulted values keep their
/// empty span `0..0` (they have no place in the file, wherever the section is).
pub(crate) trait Shift {
    fn shift(self, delta: isize) -> Self;
}

impl<T: Shift> Shift for Spanned<T> {
    fn shift(self, delta: isize) -> Self {
        let span = self.span();
        let span = if span == (0..0) {
            span
        } else {
            span.start.wrapping_add_signed(delta)..span.end.wrapping_add_signed(delta)
        };
        Spanned::new(span, self.into_inner().shift(delta))
    }
}

impl<T: Shift> Shift for Box<T> {
    fn shift(self, delta: isize) -> Self {
        Box::new((*self).shift(delta))
    }
}

impl<T: Shift> Shift for Option<T> {
    fn shift(self, delta: isize) -> Self {
        self.map(|v| v.shift(delta))
    }
}

impl<T: Shift> Shift for Vec<T> {
    fn shift(self, delta: isize) -> Self {
        self.into_iter().map(|v| v.shift(delta)).collect()
    }
}

impl<K: Ord, V: Shift> Shift for BTreeMap<K, V> {
    fn shift(self, delta: isize) -> Self {
        self.into_iter().map(|(k, v)| (k, v.shift(delta))).collect()
    }
}

/// Values without spans inside.
macro_rules! unspanned {
    ($($t:ty),*) => {$(
        impl Shift for $t {
            fn shift(self, _: isize) -> Self {
                self
            }
        }
    )*};
}
unspanned!(String, u16);

impl Shift for RawRoute {
    fn shift(self, delta: isize) -> Self {
        // Spelled out field by field so that a new spanned field does not compile until it
        // is shifted too.
        let RawRoute {
            name,
            listeners,
            host,
            path,
            exact,
            backends,
            protocol,
            tls,
            direct,
            tenant,
            bandwidth,
            timeouts,
        } = self;
        RawRoute {
            name: name.shift(delta),
            listeners: listeners.shift(delta),
            host: host.shift(delta),
            path: path.shift(delta),
            exact: exact.shift(delta),
            backends: backends.shift(delta),
            protocol,
            tls: tls.shift(delta),
            direct: direct.shift(delta),
            tenant: tenant.shift(delta),
            bandwidth,
            timeouts,
        }
    }
}

impl Shift for RawUpstreamTls {
    fn shift(self, delta: isize) -> Self {
        let RawUpstreamTls {
            ca,
            cert,
            key,
            server_name,
        } = self;
        RawUpstreamTls {
            ca: ca.shift(delta),
            cert: cert.shift(delta),
            key: key.shift(delta),
            server_name: server_name.shift(delta),
        }
    }
}

impl Shift for RawDirect {
    fn shift(self, delta: isize) -> Self {
        let RawDirect {
            status,
            body,
            headers,
        } = self;
        RawDirect {
            status: status.shift(delta),
            body,
            headers: headers.shift(delta),
        }
    }
}
