//! A leaf's one TLS setup: the rustls `ClientConfig` (the kubeconfig's CA or the public
//! roots, its client certificate, `insecure-skip-tls-verify`) and the HTTPS connector built
//! on it, which both the leaf's `kube::Client` and the raw forwarded requests dial with.
//!
//! It speaks only HTTP/1.1 (the connector offers no ALPN, so the server does not pick h2):
//! exec, attach and port-forward switch protocols, and a protocol switch exists only there. It must not know about requests or tokens.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::config::LeafTls;

/// Dials a leaf's API server: TCP, then TLS with the leaf's settings (plain TCP for an
/// `http://` server).
pub type LeafConnector = HttpsConnector<HttpConnector>;

/// The leaf's rustls client config.
pub fn client_config(tls: &LeafTls) -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?;
    let builder = if tls.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(any_server_cert())
    } else {
        let roots = match &tls.roots {
            Some(certs) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in certs {
                    roots.add(c.clone())?;
                }
                Arc::new(roots)
            }
            None => web_roots(),
        };
        builder.with_root_certificates(roots)
    };
    let config = match &tls.identity {
        Some(id) => builder.with_client_auth_cert(id.chain.clone(), id.key.clone_key())?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The connector over `config`, sending `tls-server-name` as SNI (and verifying it) when
/// the kubeconfig sets one.
pub fn connector(
    config: Arc<rustls::ClientConfig>,
    server_name: Option<ServerName<'static>>,
    connect_timeout: Duration,
) -> LeafConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    let https = HttpsConnectorBuilder::new()
        .with_tls_config(Arc::unwrap_or_clone(config))
        .https_or_http();
    let https = match server_name {
        Some(name) => https.with_server_name_resolver(FixedServerNameResolver::new(name)),
        None => https,
    };
    https.enable_http1().wrap_connector(http)
}

/// The public web roots, built once.
fn web_roots() -> Arc<rustls::RootCertStore> {
    static ROOTS: OnceLock<Arc<rustls::RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            Arc::new(rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
        })
        .clone()
}

/// A verifier accepting any server certificate: a kubeconfig's `insecure-skip-tls-verify`,
/// and Ingress https backends (whose pod certificates are not checked, as ingress-nginx).
pub fn any_server_cert() -> Arc<dyn ServerCertVerifier> {
    Arc::new(AnyServerCert(Arc::new(
        rustls::crypto::ring::default_provider(),
    )))
}

/// `insecure-skip-tls-verify: true`: any server certificate is accepted (the handshake's
/// signatures are still checked, so the session keys belong to whoever holds that key).
/// The kubeconfig asked for it; leafgate warns about it in the log and `/status`.
#[derive(Debug)]
struct AnyServerCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
