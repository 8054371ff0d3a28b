//! rustls configurations built from PEM: client configurations with a client certificate,
//! verifying the server against a CA or (as kube-apiserver does without
//! `--kubelet-certificate-authority`) not at all. Issues no certificates itself.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Why PEM material could not become a TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("no certificate in the PEM given for {0}")]
    NoCert(&'static str),
    #[error("unreadable PEM for {what}: {source}")]
    Pem {
        what: &'static str,
        source: rustls::pki_types::pem::Error,
    },
    #[error("TLS configuration rejected: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Every certificate in `pem`.
pub fn certs(pem: &str, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem { what, source })?;
    if certs.is_empty() {
        return Err(TlsError::NoCert(what));
    }
    Ok(certs)
}

/// A root store of the certificates in `pem`.
pub fn roots(pem: &str, what: &'static str) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for c in certs(pem, what)? {
        roots.add(c)?;
    }
    Ok(roots)
}

/// ring with its cipher suites in the order Go's `crypto/tls` uses on a machine with AES
/// hardware, as kube-apiserver, the kubelet and `kubectl` (all Go) offer and choose them:
/// AES-128-GCM, AES-256-GCM, then ChaCha20-Poly1305 ("Automatic cipher suite ordering in
/// crypto/tls", Go blog, 2021-09-15). ring's own order starts with AES-256-GCM-SHA384.
pub fn go_provider() -> Arc<CryptoProvider> {
    use rustls::CipherSuite::*;
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|suite| match suite.suite() {
            TLS13_AES_128_GCM_SHA256
            | TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            | TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
            TLS13_AES_256_GCM_SHA384
            | TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
            | TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
            _ => 2,
        });
    Arc::new(provider)
}

/// A client configuration presenting `cert_pem`/`key_pem`, verifying the server against
/// `ca_pem` when given and not at all otherwise, offering suites as a Go client does
/// ([`go_provider`]). ALPN `http/1.1`: upgrades need it.
pub fn client_config(
    ca_pem: Option<&str>,
    cert_pem: &str,
    key_pem: &str,
) -> Result<rustls::ClientConfig, TlsError> {
    let provider = go_provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match ca_pem {
        Some(ca) => builder.with_root_certificates(roots(ca, "the server CA")?),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider))),
    };
    let key =
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|source| TlsError::Pem {
            what: "the client key",
            source,
        })?;
    let mut config =
        builder.with_client_auth_cert(certs(cert_pem, "the client certificate")?, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Accepts any server certificate (signatures are still checked, so the handshake is real).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
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

/// The TLS server name for `host`: an IP address (needs an IP SAN) or a DNS name.
pub fn server_name(
    host: &str,
) -> Result<ServerName<'static>, rustls::pki_types::InvalidDnsNameError> {
    ServerName::try_from(host.to_string())
}
