//! A leaf's one TLS setup: the rustls `ClientConfig` (the kubeconfig's CA or the public
//! roots, its client certificate, `insecure-skip-tls-verify`) and the HTTPS connector built
//! on it, which both the leaf's `kube::Client` and the raw forwarded requests dial with.
//!
//! It maps the kubeconfig's settings onto `crate::tls`, which routes' upstreams share. It
//! speaks only HTTP/1.1 (the connector offers no ALPN, so the server does not pick h2):
//! exec, attach and port-forward switch protocols, and a protocol switch exists only there.
//! It must not know about requests or tokens.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;

use crate::config::LeafTls;
use crate::tls::{self, Verify};

/// Dials a leaf's API server: TCP, then TLS with the leaf's settings (plain TCP for an
/// `http://` server).
pub type LeafConnector = tls::HttpsConnector;

/// The leaf's rustls client config.
pub fn client_config(leaf: &LeafTls) -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    let verify = if leaf.insecure_skip_verify {
        Verify::Nothing
    } else {
        Verify::Roots(match &leaf.roots {
            Some(certs) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in certs {
                    roots.add(c.clone())?;
                }
                Arc::new(roots)
            }
            None => tls::web_roots(),
        })
    };
    let identity = leaf.identity.as_ref().map(|id| (&id.chain[..], &id.key));
    tls::client_config(verify, identity).map(Arc::new)
}

/// The connector over `config`, sending `tls-server-name` as SNI (and verifying it) when
/// the kubeconfig sets one.
pub fn connector(
    config: Arc<rustls::ClientConfig>,
    server_name: Option<ServerName<'static>>,
    connect_timeout: Duration,
) -> LeafConnector {
    tls::https_connector(Arc::unwrap_or_clone(config), server_name, connect_timeout)
}
