//! A `[[listener]]`, typed: where it binds, what it serves, its certificates loaded.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::sign::CertifiedKey;
use serde::Deserialize;

use super::cidr::Cidr;
use super::host::HostPattern;

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
    /// Routes listeners: plain HTTP/1.1 exchanges take the fast path (`listener::fast`);
    /// false serves every request through hyper.
    pub http1_fast_path: bool,
    /// node-api: the client certificates let in, by subject (never by SAN). Empty: each
    /// caller is authorized by a SubjectAccessReview at the root cluster (validation
    /// makes sure `[kubernetes]` names one).
    pub allowed_clients: Vec<AllowedClient>,
    /// kube-api: the version `/version` reports, pinned; `None`: the oldest among the
    /// tenant's synced leaves.
    pub kubernetes_version: Option<KubernetesVersion>,
}

/// A Kubernetes version as `/version` reports it: `gitVersion` `v1.33.4` (a `-suffix` or
/// `+suffix` kept), `major` `1`, `minor` `33`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesVersion {
    pub major: u32,
    pub minor: u32,
    pub git_version: String,
}

impl KubernetesVersion {
    /// `v<major>.<minor>.<patch>`, optionally followed by `-...` or `+...`.
    pub fn parse(text: &str) -> Result<KubernetesVersion, String> {
        let bad = || {
            format!(
                "`{text}` is not a Kubernetes version: write it as `/version`'s gitVersion, e.g. \"v1.33.4\""
            )
        };
        let rest = text.strip_prefix('v').ok_or_else(bad)?;
        let core = rest.split(['-', '+']).next().unwrap_or("");
        let numbers: Vec<u32> = core
            .split('.')
            .map(|n| {
                (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                    .then(|| n.parse().ok())
                    .flatten()
                    .ok_or_else(bad)
            })
            .collect::<Result<_, _>>()?;
        match numbers[..] {
            [major, minor, _patch] => Ok(KubernetesVersion {
                major,
                minor,
                git_version: text.to_string(),
            }),
            _ => Err(bad()),
        }
    }
}

/// One `allowed_clients` entry, `CN` or `CN/O`: a client certificate whose subject's common
/// name is `common_name` and, when the entry names one, whose organizations include
/// `organization`. Exact and case-sensitive, as kube-apiserver and the kubelet read a
/// certificate's user (CN) and groups (O); subject alternative names never count, since
/// any certificate the CA signs may carry any of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedClient {
    pub common_name: String,
    pub organization: Option<String>,
}

impl AllowedClient {
    /// Whether this entry names the subject `common_name` with `organizations` (exact,
    /// case-sensitive; the organization only when the entry names one).
    pub fn admits(&self, common_name: &str, organizations: &[String]) -> bool {
        self.common_name == common_name
            && self
                .organization
                .as_ref()
                .is_none_or(|o| organizations.contains(o))
    }

    /// Reads `CN` or `CN/O` (split at the first `/`; a CN never holds one).
    pub fn parse(entry: &str) -> Result<AllowedClient, String> {
        let (cn, org) = match entry.split_once('/') {
            Some((cn, org)) => (cn, Some(org)),
            None => (entry, None),
        };
        if cn.is_empty() {
            return Err(format!(
                "{entry:?} names no common name: write `CN` or `CN/O`, e.g. \"kube-apiserver-kubelet-client\" or \"kube-apiserver-kubelet-client/kubeadm:cluster-admins\""
            ));
        }
        if org.is_some_and(str::is_empty) {
            return Err(format!(
                "{entry:?} ends with `/` but names no organization: write `CN` or `CN/O`"
            ));
        }
        Ok(AllowedClient {
            common_name: cn.to_string(),
            organization: org.map(str::to_string),
        })
    }
}

impl std::fmt::Display for AllowedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.organization {
            Some(o) => write!(f, "{}/{o}", self.common_name),
            None => f.write_str(&self.common_name),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::{AllowedClient, KubernetesVersion};

    #[test]
    fn kubernetes_versions_read_as_git_versions() {
        let v = KubernetesVersion::parse("v1.33.4").unwrap();
        assert_eq!(
            (v.major, v.minor, v.git_version.as_str()),
            (1, 33, "v1.33.4")
        );
        assert_eq!(
            KubernetesVersion::parse("v1.30.2-gke.1+x").unwrap().minor,
            30
        );
        for bad in [
            "1.33.4",
            "v1.33",
            "v1..4",
            "v1.33.4.5",
            "vx.y.z",
            "v1.33.-4",
            "",
        ] {
            assert!(KubernetesVersion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_allowed_client_is_a_cn_or_a_cn_and_an_organization() {
        let cn = AllowedClient::parse("kube-apiserver-kubelet-client").unwrap();
        assert_eq!(cn.organization, None);
        let both = AllowedClient::parse("apiserver/kubeadm:cluster-admins").unwrap();
        assert_eq!(
            (both.common_name.as_str(), both.organization.as_deref()),
            ("apiserver", Some("kubeadm:cluster-admins"))
        );
        assert_eq!(both.to_string(), "apiserver/kubeadm:cluster-admins");
        assert!(AllowedClient::parse("").is_err());
        assert!(AllowedClient::parse("/system:masters").is_err());
        assert!(AllowedClient::parse("apiserver/").is_err());
    }
}
