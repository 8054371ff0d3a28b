//! Who a TLS client is, from the certificate it presented: the subject's common name and
//! its DNS and URI subject alternative names, as kube-apiserver and the kubelet read a
//! client certificate. Read once per connection, after the handshake verified the chain
//! against the listener's `client_ca`; nothing here verifies anything. A certificate seen
//! lately on the same serving thread is not parsed again ([`ClientIdentity::of_certificate`]):
//! kube-apiserver opens a connection per exec, attach or port-forward, with the same one.
//!
//! Two matchers, one per front: node-api's `allowed_clients` reads the subject only (CN,
//! and O when the entry names one), as the kubelet reads a caller; SANs never count there,
//! since every certificate the client CA signs (users', nodes', CSR-issued ones) could
//! carry any name. kube-api's tenant `client_names` keeps its own rule (`is_any_of`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::config::AllowedClient;

/// The names a verified client certificate carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The subject's first common name (Kubernetes' user name).
    pub common_name: Option<String>,
    /// The subject's organizations (Kubernetes' groups).
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub uris: Vec<String>,
}

/// How many certificates' identities a serving thread keeps. A gateway's callers are few
/// (the root API server, a handful of tenants' clients); when more than this many come
/// round, the thread starts over rather than tracking which is oldest.
const CACHED: usize = 256;

thread_local! {
    /// This thread's identities by the whole DER of their certificate, compared byte for
    /// byte: a lookup can only find the identity of exactly the certificate presented.
    static IDENTITIES: RefCell<HashMap<Box<[u8]>, Arc<ClientIdentity>>> =
        RefCell::new(HashMap::new());
}

impl ClientIdentity {
    /// The identity of a verified client certificate (DER), parsed the first time this
    /// thread sees it and shared after that; `None` if it does not parse (never cached).
    pub fn of_certificate(der: &[u8]) -> Option<Arc<ClientIdentity>> {
        if let Some(known) = IDENTITIES.with_borrow(|cache| cache.get(der).cloned()) {
            return Some(known);
        }
        let identity = Arc::new(ClientIdentity::from_der(der)?);
        IDENTITIES.with_borrow_mut(|cache| {
            if cache.len() >= CACHED {
                cache.clear();
            }
            cache.insert(der.into(), identity.clone());
        });
        Some(identity)
    }

    /// Reads the names of a DER certificate; `None` if it does not parse.
    pub fn from_der(der: &[u8]) -> Option<ClientIdentity> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let subject = cert.subject();
        let common_name = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(str::to_string);
        let organizations = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .map(str::to_string)
            .collect();
        let mut dns_names = Vec::new();
        let mut uris = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::DNSName(d) => dns_names.push(d.to_string()),
                    GeneralName::URI(u) => uris.push(u.to_string()),
                    _ => {}
                }
            }
        }
        Some(ClientIdentity {
            common_name,
            organizations,
            dns_names,
            uris,
        })
    }

    /// node-api: whether any `allowed_clients` entry is this client's subject: its common
    /// name, and one of its organizations when the entry names one (exact, case-sensitive).
    pub fn is_allowed_client(&self, allowed: &[AllowedClient]) -> bool {
        let Some(cn) = self.common_name.as_deref() else {
            return false;
        };
        allowed.iter().any(|a| a.admits(cn, &self.organizations))
    }

    /// kube-api `client_names`: whether any of `allowed` is this client's common name, one
    /// of its DNS names or one of its URIs (exact, case-sensitive, as the names are issued).
    pub fn is_any_of(&self, allowed: &[String]) -> bool {
        allowed.iter().any(|a| {
            self.common_name.as_deref() == Some(a.as_str())
                || self.dns_names.iter().any(|d| d == a)
                || self.uris.iter().any(|u| u == a)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair, SanType};

    fn cert(cn: &str, org: Option<&str>, sans: Vec<SanType>) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        if let Some(o) = org {
            params.distinguished_name.push(DnType::OrganizationName, o);
        }
        params.subject_alt_names = sans;
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn reads_the_common_name_organizations_and_alternative_names() {
        let der = cert(
            "kube-apiserver-kubelet-client",
            Some("system:masters"),
            vec![
                SanType::DnsName("apiserver.example".try_into().unwrap()),
                SanType::URI("spiffe://root/apiserver".try_into().unwrap()),
            ],
        );
        let id = ClientIdentity::from_der(&der).unwrap();
        assert_eq!(
            id.common_name.as_deref(),
            Some("kube-apiserver-kubelet-client")
        );
        assert_eq!(id.organizations, vec!["system:masters"]);
        assert_eq!(id.dns_names, vec!["apiserver.example"]);
        assert_eq!(id.uris, vec!["spiffe://root/apiserver"]);
    }

    #[test]
    fn allowed_by_common_name_or_any_alternative_name() {
        let der = cert(
            "apiserver",
            None,
            vec![SanType::DnsName("api.root.example".try_into().unwrap())],
        );
        let id = ClientIdentity::from_der(&der).unwrap();
        assert!(id.is_any_of(&["apiserver".into()]));
        assert!(id.is_any_of(&["other".into(), "api.root.example".into()]));
        assert!(!id.is_any_of(&["Apiserver".into(), "root.example".into()]));
        assert!(!id.is_any_of(&[]));
    }

    #[test]
    fn an_allowed_client_is_the_subject_never_an_alternative_name() {
        let allowed = |entries: &[&str]| -> Vec<AllowedClient> {
            entries
                .iter()
                .map(|e| AllowedClient::parse(e).unwrap())
                .collect()
        };
        let impostor = ClientIdentity::from_der(&cert(
            "intruder",
            Some("system:masters"),
            vec![
                SanType::DnsName("kube-apiserver-kubelet-client".try_into().unwrap()),
                SanType::URI("kube-apiserver-kubelet-client".try_into().unwrap()),
            ],
        ))
        .unwrap();
        assert!(!impostor.is_allowed_client(&allowed(&["kube-apiserver-kubelet-client"])));
        let apiserver = ClientIdentity::from_der(&cert(
            "kube-apiserver-kubelet-client",
            Some("kubeadm:cluster-admins"),
            vec![],
        ))
        .unwrap();
        assert!(apiserver.is_allowed_client(&allowed(&["other", "kube-apiserver-kubelet-client"])));
        assert!(apiserver.is_allowed_client(&allowed(&[
            "kube-apiserver-kubelet-client/kubeadm:cluster-admins"
        ])));
        assert!(
            !apiserver
                .is_allowed_client(&allowed(&["kube-apiserver-kubelet-client/system:masters"]))
        );
        assert!(!apiserver.is_allowed_client(&allowed(&["Kube-Apiserver-Kubelet-Client"])));
        assert!(!apiserver.is_allowed_client(&[]));
        assert!(!ClientIdentity::default().is_allowed_client(&allowed(&["x"])));
    }

    #[test]
    fn garbage_is_no_identity() {
        assert_eq!(ClientIdentity::from_der(b"not a certificate"), None);
        assert_eq!(ClientIdentity::of_certificate(b"not a certificate"), None);
    }

    #[test]
    fn a_certificate_seen_before_is_read_once_and_only_for_itself() {
        let apiserver = cert("kube-apiserver-kubelet-client", None, vec![]);
        let first = ClientIdentity::of_certificate(&apiserver).unwrap();
        let again = ClientIdentity::of_certificate(&apiserver).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "parsed again");
        assert_eq!(*first, ClientIdentity::from_der(&apiserver).unwrap());

        // Another certificate with the same subject is another key: its own identity.
        let twin = cert(
            "kube-apiserver-kubelet-client",
            Some("system:masters"),
            vec![],
        );
        let other = ClientIdentity::of_certificate(&twin).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.organizations, vec!["system:masters"]);
        // A certificate cut short is not the one it was cut from.
        assert_eq!(
            ClientIdentity::of_certificate(&apiserver[..apiserver.len() - 1]),
            None
        );

        // Bounded: past CACHED certificates the thread starts over.
        for i in 0..CACHED {
            ClientIdentity::of_certificate(&cert(&format!("client-{i}"), None, vec![])).unwrap();
        }
        let cached = IDENTITIES.with_borrow(|cache| cache.len());
        assert!(cached <= CACHED, "{cached} identities kept");
        let reread = ClientIdentity::of_certificate(&apiserver).unwrap();
        assert_eq!(*reread, *first);
    }
}
