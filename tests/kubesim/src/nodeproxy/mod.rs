//! The root role: kube-apiserver's side of `apiserver -> kubelet`. When a pod's node has a
//! kubelet endpoint, its `exec`/`attach`/`portforward` and `log` subresources are proxied
//! to that kubelet as kube-apiserver does it (`pkg/registry/core/pod/strategy.go`,
//! `UpgradeAwareHandler`, `LocationStreamer`), over TLS with the kubelet-client
//! certificate.
//!
//! - this file: the kubelet-client identity, the TLS client, node address selection
//!   (`GetPreferredNodeAddress`), dialing, and the record of requests sent to kubelets.
//! - `upgrade`: exec/attach/port-forward, spliced after the kubelet's `101`.
//! - `logs`: `containerLogs`, streamed back as `text/plain`.
//!
//! Owns no routing: the API router decides that a pod is remote and hands the request here.

pub mod logs;
pub mod upgrade;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{CertificateParams, DnType, KeyPair};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::api::ApiError;
use crate::server::Recorded;
use crate::store::Store;

/// kube-apiserver's default `--kubelet-preferred-address-types`.
pub const DEFAULT_ADDRESS_TYPES: &[&str] = &[
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];
/// How long dialing a kubelet (TCP and TLS) may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The certificate kube-apiserver presents to kubelets (`--kubelet-client-certificate`),
/// with the CA that signed it, all PEM: the kubelet side trusts `ca_pem` as its client CA.
#[derive(Debug, Clone)]
pub struct KubeletClientCert {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl KubeletClientCert {
    /// A fresh CA and, signed by it, CN `kube-apiserver-kubelet-client`, O `system:masters`
    /// (what kubeadm issues).
    pub fn generate() -> Result<KubeletClientCert, rcgen::Error> {
        let ca = crate::server::Ca::new("kubesim-kubelet-client-ca")?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver-kubelet-client");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &ca.issuer)?;
        Ok(KubeletClientCert {
            ca_pem: ca.pem,
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// How this simulator reaches kubelets.
pub(crate) struct KubeletClient {
    pub identity: KubeletClientCert,
    tls: tokio_rustls::TlsConnector,
    preferred: Vec<String>,
    requests: Mutex<Vec<Recorded>>,
}

impl KubeletClient {
    /// `kubelet_ca_pem`: verify kubelets' serving certificates against it
    /// (`--kubelet-certificate-authority`); without it they are not verified.
    pub fn new(
        identity: KubeletClientCert,
        kubelet_ca_pem: Option<&str>,
        preferred: Vec<String>,
    ) -> Result<KubeletClient, crate::tls::TlsError> {
        let config =
            crate::tls::client_config(kubelet_ca_pem, &identity.cert_pem, &identity.key_pem)?;
        Ok(KubeletClient {
            identity,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            preferred,
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn record(&self, method: &str, path_and_query: &str, headers: &[(String, String)]) {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Recorded {
                method: method.to_string(),
                path: path.to_string(),
                query: query.to_string(),
                headers: headers.to_vec(),
                user: None,
                connected: None,
            });
    }

    /// TCP then TLS to the kubelet, as `DialURL` does (the server name is the address).
    async fn dial(&self, ep: &Endpoint) -> Result<TlsStream<TcpStream>, String> {
        let name = crate::tls::server_name(&ep.host).map_err(|e| e.to_string())?;
        let dial = async {
            let tcp = TcpStream::connect((ep.host.as_str(), ep.port))
                .await
                .map_err(|e| format!("dial tcp {}: {e}", ep.host_port()))?;
            // Go dials with TCP_NODELAY on, as every Go TCP connection.
            let _ = tcp.set_nodelay(true);
            self.tls
                .connect(name, tcp)
                .await
                .map_err(|e| format!("tls: {e}"))
        };
        tokio::time::timeout(DIAL_TIMEOUT, dial)
            .await
            .map_err(|_| format!("dial tcp {}: i/o timeout", ep.host_port()))?
    }
}

/// Where a node's kubelet listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// `host:port`, with brackets around an IPv6 address.
    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// `GetPreferredNodeAddress`: for each preferred type in order, the first address of that
/// type.
pub fn preferred_address(node: &Value, preferred: &[String]) -> Result<String, String> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let field = |a: &Value, k: &str| a[k].as_str().unwrap_or("").to_string();
    for t in preferred {
        if let Some(a) = addresses.iter().find(|a| field(a, "type") == *t) {
            return Ok(field(a, "address"));
        }
    }
    // Go's %v of []NodeAddress.
    let known: Vec<String> = addresses
        .iter()
        .map(|a| format!("{{{} {}}}", field(a, "type"), field(a, "address")))
        .collect();
    Err(format!(
        "no preferred addresses found; known addresses: [{}]",
        known.join(" ")
    ))
}

/// The kubelet of node `node_name`, when the pod is to be proxied there: `None` (serve the
/// pod locally) when the node is not in the store, declares no kubelet port
/// (`status.daemonEndpoints.kubeletEndpoint.Port` <= 0) or lists no addresses at all; the
/// apiserver's error when it lists addresses but none of a preferred type.
pub(crate) fn endpoint(
    store: &Store,
    client: &KubeletClient,
    node_name: &str,
) -> Option<Result<Endpoint, ApiError>> {
    let nodes = crate::resources::find("", "v1", "nodes").expect("nodes is served");
    let node = store.get(nodes, "", node_name).ok()?;
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0 && *p <= i64::from(u16::MAX))?;
    let listed = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !listed {
        return None;
    }
    Some(
        preferred_address(&node, &client.preferred)
            .map(|host| Endpoint {
                host,
                port: port as u16,
            })
            // A plain Go error: ErrorToAPIStatus makes it a 500 without a reason.
            .map_err(|m| ApiError::new(500, "", m)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preferred_address_takes_types_in_order_then_the_first_of_a_type() {
        let node = json!({"status": {"addresses": [
            {"type": "ExternalIP", "address": "1.2.3.4"},
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "InternalIP", "address": "10.0.0.2"},
        ]}});
        let types = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let defaults = types(DEFAULT_ADDRESS_TYPES);
        assert_eq!(preferred_address(&node, &defaults).unwrap(), "10.0.0.1");
        assert_eq!(
            preferred_address(&node, &types(&["ExternalIP", "InternalIP"])).unwrap(),
            "1.2.3.4"
        );
        assert_eq!(
            preferred_address(&node, &types(&["Hostname"])).unwrap_err(),
            "no preferred addresses found; known addresses: [{ExternalIP 1.2.3.4} {InternalIP 10.0.0.1} {InternalIP 10.0.0.2}]"
        );
    }

    #[test]
    fn the_generated_identity_is_kubeadms_apiserver_kubelet_client() {
        let id = KubeletClientCert::generate().unwrap();
        let der = crate::tls::certs(&id.cert_pem, "test").unwrap().remove(0);
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let first = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue>| {
            it.next().and_then(|a| a.as_str().ok()).map(str::to_string)
        };
        assert_eq!(
            first(&mut cert.subject().iter_common_name()).as_deref(),
            Some("kube-apiserver-kubelet-client")
        );
        assert_eq!(
            first(&mut cert.subject().iter_organization()).as_deref(),
            Some("system:masters")
        );
        assert_eq!(
            first(&mut cert.issuer().iter_common_name()).as_deref(),
            Some("kubesim-kubelet-client-ca")
        );
        // The CA and the key make a working client configuration.
        crate::tls::client_config(Some(&id.ca_pem), &id.cert_pem, &id.key_pem).unwrap();
    }

    #[test]
    fn ipv6_host_port() {
        let ep = Endpoint {
            host: "::1".into(),
            port: 10250,
        };
        assert_eq!(ep.host_port(), "[::1]:10250");
    }
}
