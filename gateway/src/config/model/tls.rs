//! The TLS identity leafgate presents as a client, to TLS backends and to leaves.

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate chain and its private key, presented for mutual TLS.
#[derive(Debug)]
pub struct ClientCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}
