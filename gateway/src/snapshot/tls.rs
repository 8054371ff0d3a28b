//! TLS termination: a rustls `ServerConfig` per listener whose certificate is chosen by SNI.
//!
//! An exact name beats a wildcard, the longest wildcard suffix wins (at equal suffix the
//! one-label wildcard of Ingress hosts first, as in routing), and a client that sends
//! no SNI (or an unknown name) gets the listener's default certificate. ALPN offers `h2`
//! and `http/1.1`. Built once per snapshot; a new connection uses the snapshot current at
//! its accept, so a reloaded certificate applies to new connections only.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;

use crate::config::{HostPattern, ServerTls, one_label_before};

#[derive(Debug)]
struct SniResolver {
    default: Arc<CertifiedKey>,
    exact: HashMap<String, Arc<CertifiedKey>>,
    /// `(".suffix", one label only, cert)`, longest suffix first, the one-label kind first
    /// at equal suffix.
    wildcard: Vec<(String, bool, Arc<CertifiedKey>)>,
}

impl SniResolver {
    fn new(tls: &ServerTls) -> Self {
        let mut exact = HashMap::new();
        let mut wildcard = Vec::new();
        for (host, cert) in &tls.by_host {
            match host {
                HostPattern::Exact(h) => {
                    exact.entry(h.clone()).or_insert_with(|| cert.clone());
                }
                HostPattern::Wildcard(s) => wildcard.push((s.clone(), false, cert.clone())),
                HostPattern::WildcardLabel(s) => wildcard.push((s.clone(), true, cert.clone())),
                HostPattern::Any => {}
            }
        }
        // Stable: among equal patterns the first listed wins, as for exact names.
        wildcard.sort_by_key(|(s, one_label, _)| (std::cmp::Reverse(s.len()), !*one_label));
        SniResolver {
            default: tls.default.clone(),
            exact,
            wildcard,
        }
    }

    fn pick(&self, name: Option<&str>) -> Arc<CertifiedKey> {
        let Some(name) = name.map(str::to_ascii_lowercase) else {
            return self.default.clone();
        };
        if let Some(cert) = self.exact.get(&name) {
            return cert.clone();
        }
        self.wildcard
            .iter()
            .find(|(suffix, one_label, _)| match one_label {
                true => one_label_before(&name, suffix),
                false => name.len() > suffix.len() && name.ends_with(suffix.as_str()),
            })
            .map_or_else(|| self.default.clone(), |(_, _, cert)| cert.clone())
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.pick(hello.server_name()))
    }
}

/// The certificate the listener's resolver gives a client asking for `name`, worked out
/// from `tls` as [`SniResolver`] picks it (an exact name first, as listed; then the
/// longest wildcard suffix, the one-label kind first at equal suffix; else the default),
/// for a request's `Host`: no allocation, and the few names of a Gateway's listeners
/// scanned.
pub fn certificate_for<'t>(tls: &'t ServerTls, name: &str) -> &'t Arc<CertifiedKey> {
    let exact = tls.by_host.iter().find(|(host, _)| match host {
        HostPattern::Exact(h) => h.eq_ignore_ascii_case(name),
        _ => false,
    });
    if let Some((_, cert)) = exact {
        return cert;
    }
    let mut best: Option<(usize, bool, &Arc<CertifiedKey>)> = None;
    for (host, cert) in &tls.by_host {
        let (suffix, one_label) = match host {
            HostPattern::Wildcard(s) => (s, false),
            HostPattern::WildcardLabel(s) => (s, true),
            _ => continue,
        };
        let fits = match one_label {
            true => one_label_before(name, suffix),
            false => {
                name.len() > suffix.len()
                    && name.as_bytes()[name.len() - suffix.len()..]
                        .eq_ignore_ascii_case(suffix.as_bytes())
            }
        };
        let better = best.is_none_or(|(len, one, _)| {
            suffix.len() > len || (suffix.len() == len && one_label && !one)
        });
        if fits && better {
            best = Some((suffix.len(), one_label, cert));
        }
    }
    best.map_or(&tls.default, |(_, _, cert)| cert)
}

/// Whether a request for `host` (a `Host` or `:authority`, a port allowed) on a connection
/// whose client asked for `sni` is misdirected (RFC 9110 §15.5.20, 421): the host is one
/// another of the listener's certificates serves, so its client reached this connection
/// by a name that was not the host's (connection reuse across names, or a forged
/// `Host`). Envoy Gateway and nginx answer such a request 421 on a Gateway's shared port.
pub fn misdirected(tls: &ServerTls, sni: &str, host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    !Arc::ptr_eq(certificate_for(tls, sni), certificate_for(tls, name))
}

/// Builds the listener's rustls config. Fails only if rustls rejects the client CA set.
pub fn server_config(tls: &ServerTls) -> Result<Arc<rustls::ServerConfig>, rustls::Error> {
    let provider = crate::tls::provider();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match &tls.client_ca {
        Some(roots) => {
            let mut verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider);
            if tls.client_cert_optional {
                verifier = verifier.allow_unauthenticated();
            }
            let verifier = verifier
                .build()
                .map_err(|e| rustls::Error::General(format!("client CA: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(Arc::new(SniResolver::new(tls)));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(name: &str) -> Arc<CertifiedKey> {
        let key = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        let der =
            rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
        let provider = rustls::crypto::ring::default_provider();
        Arc::new(CertifiedKey::from_der(vec![key.cert.der().clone()], der, &provider).unwrap())
    }

    #[test]
    fn the_one_label_wildcard_is_tried_before_the_toml_one_at_equal_suffix() {
        let (default, toml, ingress, exact) = (
            cert("default"),
            cert("toml"),
            cert("ingress"),
            cert("exact"),
        );
        let tls = ServerTls {
            default: default.clone(),
            by_host: vec![
                (HostPattern::parse("*.example.com").unwrap(), toml.clone()),
                (
                    HostPattern::parse_ingress("*.example.com").unwrap(),
                    ingress.clone(),
                ),
                (HostPattern::parse("a.example.com").unwrap(), exact.clone()),
            ],
            client_ca: None,
            client_cert_optional: false,
        };
        let r = SniResolver::new(&tls);
        // The resolver and `certificate_for` (a request's `Host`) choose alike.
        for name in [
            "a.example.com",
            "A.Example.com",
            "b.example.com",
            "x.b.example.com",
            "example.com",
            "other.org",
        ] {
            assert!(
                Arc::ptr_eq(&r.pick(Some(name)), certificate_for(&tls, name)),
                "{name}"
            );
        }
        assert!(!misdirected(&tls, "a.example.com", "A.example.com:443"));
        assert!(misdirected(&tls, "a.example.com", "b.example.com"));
        assert!(misdirected(&tls, "b.example.com", "other.org:8443"));
        assert!(!misdirected(&tls, "other.org", "[::1]:443"));
        assert!(Arc::ptr_eq(&r.pick(Some("a.example.com")), &exact));
        assert!(Arc::ptr_eq(&r.pick(Some("B.example.com")), &ingress));
        assert!(Arc::ptr_eq(&r.pick(Some("x.b.example.com")), &toml));
        assert!(Arc::ptr_eq(&r.pick(Some("example.com")), &default));
        assert!(Arc::ptr_eq(&r.pick(None), &default));

        let only_ingress = ServerTls {
            by_host: vec![(
                HostPattern::parse_ingress("*.example.com").unwrap(),
                ingress,
            )],
            ..tls
        };
        let r = SniResolver::new(&only_ingress);
        assert!(Arc::ptr_eq(&r.pick(Some("x.b.example.com")), &default));
    }

    /// A listener takes the suite the client asks for first: Go's and browsers' AES-128-GCM,
    /// ring's AES-256-GCM, or ChaCha20 from a client without AES hardware.
    #[tokio::test]
    async fn a_listener_takes_the_cipher_suite_in_the_clients_order() {
        use rustls::CipherSuite::{
            TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384, TLS13_CHACHA20_POLY1305_SHA256,
        };
        let server = server_config(&ServerTls {
            default: cert("localhost"),
            by_host: vec![],
            client_ca: None,
            client_cert_optional: false,
        })
        .unwrap();
        let client = |provider: rustls::crypto::CryptoProvider| {
            rustls::ClientConfig::builder_with_provider(Arc::new(provider))
                .with_safe_default_protocol_versions()
                .unwrap()
                .dangerous()
                .with_custom_certificate_verifier(crate::tls::any_server_cert())
                .with_no_client_auth()
        };
        let ring = rustls::crypto::ring::default_provider;
        for (offered, taken) in [
            ((*crate::tls::provider()).clone(), TLS13_AES_128_GCM_SHA256),
            (ring(), TLS13_AES_256_GCM_SHA384),
            (
                rustls::crypto::CryptoProvider {
                    cipher_suites: vec![
                        rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
                        rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
                    ],
                    ..ring()
                },
                TLS13_CHACHA20_POLY1305_SHA256,
            ),
        ] {
            let suite = crate::tls::handshake_suite(client(offered), server.clone()).await;
            assert_eq!(suite, taken);
        }
    }
}
