//! TLS toward servers, the one way leafgate dials them: the public web roots, the
//! accept-any-certificate verifier, a rustls client config from roots and a client
//! certificate, and the HTTP/1.1 HTTPS-or-HTTP connector over it.
//!
//! Route upstreams (`proxy::upstream`) and leaves (`k8s::leaf::tls`) both build on it;
//! leaves also keep warm connections ready ([`spares`]). A
//! bottom helper: it imports nothing from the crate, so each caller maps its own config
//! onto these arguments, and it knows nothing of routes, leaves or requests.

pub mod spares;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hyper_rustls::{FixedServerNameResolver, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Dials a server: TCP, then TLS for an `https` URI (plain TCP for `http`), HTTP/1.1.
pub type HttpsConnector = hyper_rustls::HttpsConnector<HttpConnector>;

/// The public web roots, built once: a config with thousands of routes must not copy them
/// thousands of times.
pub fn web_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            Arc::new(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
        })
        .clone()
}

/// How a server's certificate is checked.
pub enum Verify {
    /// Against these roots.
    Roots(Arc<RootCertStore>),
    /// Not at all ([`any_server_cert`]).
    Nothing,
}

/// A client certificate chain and its key, for mutual TLS.
pub type Identity<'a> = (&'a [CertificateDer<'static>], &'a PrivateKeyDer<'static>);

/// ring, with its cipher suites in the order Go's `crypto/tls` prefers them on a machine
/// with AES hardware, which is the order kube-apiserver, the kubelet and `kubectl`
/// negotiate: AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305, each version's
/// suites otherwise as ring lists them. ring's own order puts AES-256-GCM with SHA-384
/// first: on x86-64 its key schedule hashes with SHA-512 blocks, which have no hardware
/// instructions, where SHA-256 has them, and its records take 14 AES rounds to 10. A
/// client offers the suites in this order; a server picks by the client's (a client
/// without AES hardware asks for ChaCha20 first and gets it). Built once.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            let mut provider = rustls::crypto::ring::default_provider();
            provider
                .cipher_suites
                .sort_by_key(|suite| go_rank(suite.suite()));
            Arc::new(provider)
        })
        .clone()
}

/// Where Go puts `suite` on a machine with AES hardware: AES-128-GCM first, AES-256-GCM
/// next, the rest (ChaCha20-Poly1305) last.
fn go_rank(suite: rustls::CipherSuite) -> u8 {
    use rustls::CipherSuite::*;
    match suite {
        TLS13_AES_128_GCM_SHA256
        | TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
        TLS13_AES_256_GCM_SHA384
        | TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        | TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
        _ => 2,
    }
}

/// A rustls client config ([`provider`], the safe default protocol versions) that checks
/// the server as `verify` says and presents `identity` when there is one. It offers no
/// ALPN; a caller that wants some sets `alpn_protocols`.
pub fn client_config(
    verify: Verify,
    identity: Option<Identity<'_>>,
) -> Result<rustls::ClientConfig, rustls::Error> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?;
    let builder = match verify {
        Verify::Roots(roots) => builder.with_root_certificates(roots),
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(any_server_cert()),
    };
    match identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain.to_vec(), key.clone_key()),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// The HTTP/1.1 connector over `config` (TCP_NODELAY, `connect_timeout`), sending
/// `server_name` as SNI (and verifying it) instead of the dialled host when given.
/// HTTP/1.1 only: a protocol switch (exec, WebSocket) exists only there.
pub fn https_connector(
    config: rustls::ClientConfig,
    server_name: Option<ServerName<'static>>,
    connect_timeout: Duration,
) -> HttpsConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    // `enable_http1` below sets the ALPN list (http/1.1) itself.
    let https = HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http();
    let https = match server_name {
        Some(name) => https.with_server_name_resolver(FixedServerNameResolver::new(name)),
        None => https,
    };
    https.enable_http1().wrap_connector(http)
}

/// A verifier accepting any server certificate: a kubeconfig's `insecure-skip-tls-verify`,
/// and Ingress https backends (whose pod certificates are not checked, as ingress-nginx).
pub fn any_server_cert() -> Arc<dyn ServerCertVerifier> {
    Arc::new(AnyServerCert(provider()))
}

/// Any server certificate is accepted (the handshake's signatures are still checked, so
/// the session keys belong to whoever holds that key). Whoever asked for it warns about it.
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

/// Runs a TLS handshake in memory between `client` (naming `localhost`) and `server`, and
/// gives the cipher suite they settled on.
#[cfg(test)]
pub(crate) async fn handshake_suite(
    client: rustls::ClientConfig,
    server: Arc<rustls::ServerConfig>,
) -> rustls::CipherSuite {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let name = ServerName::try_from("localhost").unwrap();
    let (client, server) = tokio::join!(
        tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, client_end),
        tokio_rustls::TlsAcceptor::from(server).accept(server_end),
    );
    server.unwrap();
    let client = client.unwrap();
    client
        .get_ref()
        .1
        .negotiated_cipher_suite()
        .unwrap()
        .suite()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server honouring the client's order, as ring's and nginx's do by default: the
    /// suite is the one leafgate offers first.
    #[tokio::test]
    async fn leafgate_offers_aes_128_gcm_first_as_go_clients_do() {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![key.cert.der().clone()],
            PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap(),
        )
        .unwrap();
        let client = client_config(Verify::Nothing, None).unwrap();
        assert_eq!(
            handshake_suite(client, Arc::new(server)).await,
            rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
        );
        // Reordered, not narrowed: every suite ring offers is still offered.
        let (ours, ring) = (provider(), rustls::crypto::ring::default_provider());
        assert_eq!(ours.cipher_suites.len(), ring.cipher_suites.len());
        assert!(
            ring.cipher_suites
                .iter()
                .all(|s| ours.cipher_suites.contains(s))
        );
        assert_eq!(
            ours.cipher_suites[0].suite(),
            rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
        );
    }

    #[test]
    fn the_web_roots_are_built_once_and_shared() {
        let (a, b) = (web_roots(), web_roots());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!a.is_empty());
    }

    #[test]
    fn a_config_offers_no_alpn_until_its_caller_sets_some() {
        let config = client_config(Verify::Nothing, None).unwrap();
        assert!(config.alpn_protocols.is_empty());
        assert!(!config.client_auth_cert_resolver.has_certs());
    }
}
