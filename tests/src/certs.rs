//! Certificates for tests: one CA per test, leaf certificates for any names, written as PEM
//! files for the config to name.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::CertificateDer;

pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pub cert_pem: String,
    pub cert_der: CertificateDer<'static>,
}

/// A certificate and key on disk.
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub der: CertificateDer<'static>,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// Writes the CA certificate to `dir/file` and returns its path.
    pub fn write(&self, dir: &Path, file: &str) -> PathBuf {
        let path = dir.join(file);
        std::fs::write(&path, &self.cert_pem).unwrap();
        path
    }

    /// Issues a certificate for `names` (DNS names or IP addresses), usable by servers and
    /// clients, and writes `dir/{stem}.pem` and `dir/{stem}-key.pem`.
    pub fn issue(&self, dir: &Path, stem: &str, names: &[&str]) -> CertFiles {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or(stem));
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let cert_path = dir.join(format!("{stem}.pem"));
        let key_path = dir.join(format!("{stem}-key.pem"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        CertFiles {
            cert: cert_path,
            key: key_path,
            der: cert.der().clone(),
        }
    }

    pub fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert_der.clone()).unwrap();
        roots
    }
}
