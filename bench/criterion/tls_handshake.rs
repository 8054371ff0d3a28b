//! What the negotiated cipher suite costs (issue 25, exec): a TLS 1.3 handshake as the
//! node API and a leaf connection make them (client certificate, X25519, ECDSA P-256), full
//! and resumed, and 16 KiB records sealed and opened, with ring's suite order (AES-256-GCM
//! with SHA-384 first) against leafgate's ([`leafgate::tls_provider`], Go's order:
//! AES-128-GCM with SHA-256 first). Both ends run in memory on one thread, so each figure
//! is a client's and a server's work together. Measures only; never gates CI on time.

use std::hint::black_box;
use std::io::{Read, Write};
use std::ops::DerefMut;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{PrivateKeyDer, ServerName};
use rustls::{ClientConnection, ConnectionCommon, HandshakeKind, ServerConnection};

/// A CA, a server certificate for `localhost` and a client certificate, all signed by it.
struct Pki {
    ca: rustls::pki_types::CertificateDer<'static>,
    server: (
        rustls::pki_types::CertificateDer<'static>,
        PrivateKeyDer<'static>,
    ),
    client: (
        rustls::pki_types::CertificateDer<'static>,
        PrivateKeyDer<'static>,
    ),
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>, usage| {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer).unwrap();
        (
            cert.der().clone(),
            PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
    };
    Pki {
        ca: ca.der().clone(),
        server: leaf(
            vec!["localhost".into()],
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        ),
        client: leaf(vec![], rcgen::ExtendedKeyUsagePurpose::ClientAuth),
    }
}

/// The two ends' configs over `provider`: the server checks client certificates against
/// the CA and honours the client's order; the client checks the server and keeps tickets.
fn configs(
    pki: &Pki,
    provider: CryptoProvider,
) -> (Arc<rustls::ClientConfig>, Arc<rustls::ServerConfig>) {
    let provider = Arc::new(provider);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.clone()).unwrap();
    let roots = Arc::new(roots);
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        roots.clone(),
        provider.clone(),
    )
    .build()
    .unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![pki.server.0.clone()], pki.server.1.clone_key())
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(vec![pki.client.0.clone()], pki.client.1.clone_key())
        .unwrap();
    (Arc::new(client), Arc::new(server))
}

/// Moves every pending TLS byte from one end to the other.
fn pass<A, B>(
    from: &mut impl DerefMut<Target = ConnectionCommon<A>>,
    to: &mut impl DerefMut<Target = ConnectionCommon<B>>,
) {
    let mut flight = Vec::new();
    from.write_tls(&mut flight).unwrap();
    let mut rest = &flight[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest).unwrap();
    }
    to.process_new_packets().unwrap();
}

/// One handshake to its end, tickets included.
fn handshake(
    client: &Arc<rustls::ClientConfig>,
    server: &Arc<rustls::ServerConfig>,
) -> (ClientConnection, ServerConnection) {
    let name = ServerName::try_from("localhost").unwrap();
    let mut c = ClientConnection::new(client.clone(), name).unwrap();
    let mut s = ServerConnection::new(server.clone()).unwrap();
    while c.is_handshaking() || s.is_handshaking() {
        pass(&mut c, &mut s);
        pass(&mut s, &mut c);
    }
    pass(&mut s, &mut c);
    (c, s)
}

fn suites(c: &mut Criterion) {
    let pki = pki();
    let orders = [
        ("ring order", rustls::crypto::ring::default_provider()),
        ("Go order", (*leafgate::tls_provider()).clone()),
    ];
    let mut group = c.benchmark_group("tls13-handshake");
    for (label, provider) in &orders {
        let (client, server) = configs(&pki, provider.clone());
        let suite = handshake(&client, &server)
            .0
            .negotiated_cipher_suite()
            .unwrap();
        eprintln!("{label}: {:?}", suite.suite());
        // Full: a client that keeps no tickets.
        let mut full = (*client).clone();
        full.resumption = rustls::client::Resumption::disabled();
        let full = Arc::new(full);
        // Each kind is what its name says.
        for (config, kind) in [
            (&full, HandshakeKind::Full),
            (&client, HandshakeKind::Resumed),
        ] {
            assert_eq!(handshake(config, &server).0.handshake_kind(), Some(kind));
        }
        group.bench_function(format!("full, {label}"), |b| {
            b.iter(|| black_box(handshake(&full, &server)))
        });
        // Resumed: the same client config, so each handshake uses the last one's ticket.
        group.bench_function(format!("resumed, {label}"), |b| {
            b.iter(|| black_box(handshake(&client, &server)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("tls13-records-16KiB");
    let record = vec![7u8; 16 << 10];
    for (label, provider) in &orders {
        let (client, server) = configs(&pki, provider.clone());
        let (mut c, mut s) = handshake(&client, &server);
        let mut got = vec![0u8; 16 << 10];
        group.throughput(criterion::Throughput::Bytes(record.len() as u64));
        group.bench_function(format!("sealed and opened, {label}"), |b| {
            b.iter(|| {
                c.writer().write_all(&record).unwrap();
                pass(&mut c, &mut s);
                s.reader().read_exact(&mut got).unwrap();
                black_box(&got);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, suites);
criterion_main!(benches);
