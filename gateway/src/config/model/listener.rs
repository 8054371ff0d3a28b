//! A `[[listener]]`, typed: where it binds, what it serves, its certificates loaded.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::sign::CertifiedKey;
use serde::Deserialize;

use super::cidr::Cidr;
use super::route::HostPattern;

/// What a listener serves.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListenerKind {
    /// Routes (`[[route]]`) by host and path.
    #[default]
    Http,
    /// The kubelet API of virtual nodes, forwarded to the pods' leaf clusters.
    NodeApi,
    /// One Kubernetes API endpoint for tenants' `kubectl` across the leaves.
    KubeApi,
}

#[derive(Debug, Clone)]
pub struct ListenerConfig {
    pub name: String,
    pub bind: SocketAddr,
    pub kind: ListenerKind,
    pub tls: Option<ServerTls>,
    /// Connections served at once; past it the listener stops accepting (new clients wait
    /// in the kernel backlog) until one closes. `None`: sized from the descriptor limit.
    pub max_connections: Option<usize>,
    /// Peers whose `X-Forwarded-*`, `Forwarded` and `X-Real-IP` are kept and appended to;
    /// from any other peer they are replaced by leafgate's own.
    pub trusted_proxies: Vec<Cidr>,
    /// Client certificate names (CN, DNS or URI SAN) let in; empty: any the CA signed.
    pub allowed_clients: Vec<String>,
}

impl ListenerConfig {
    /// True when forwarding headers from `peer` are believed (see `trusted_proxies`).
    pub fn trusts(&self, peer: std::net::IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(peer))
    }
}

/// A listener's certificates, loaded: the default one and those chosen by SNI.
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub default: Arc<CertifiedKey>,
    pub by_host: Vec<(HostPattern, Arc<CertifiedKey>)>,
    /// When set, clients must present a certificate signed by one of these.
    pub client_ca: Option<Arc<rustls::RootCertStore>>,
    /// With `client_ca`: a client may also come without a certificate (kube-api, where
    /// bearer tokens authenticate too). One that presents a certificate is still verified.
    pub client_cert_optional: bool,
}
