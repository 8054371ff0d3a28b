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
        self.issue_to(
            &dir.join(format!("{stem}.pem")),
            &dir.join(format!("{stem}-key.pem")),
            names.first().copied().unwrap_or(stem),
            names,
        )
    }

    /// Issues a certificate named `common_name` for `names` and writes it to `cert` and
    /// its key to `key`, wherever a config names them.
    pub fn issue_to(
        &self,
        cert: &Path,
        key: &Path,
        common_name: &str,
        names: &[&str],
    ) -> CertFiles {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key_pair = KeyPair::generate().unwrap();
        let issued = params.signed_by(&key_pair, &self.issuer).unwrap();
        std::fs::write(cert, issued.pem()).unwrap();
        std::fs::write(key, key_pair.serialize_pem()).unwrap();
        CertFiles {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            der: issued.der().clone(),
        }
    }

    pub fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert_der.clone()).unwrap();
        roots
    }
}
