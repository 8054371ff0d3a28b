//! Loading the PEM files a config names (certificates, private keys, CA bundles), each
//! failure reported at the key that named the file. Part of validation; it never parses
//! TOML and keeps nothing but the files it read (for the watcher).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use toml::Spanned;

use super::validator::Validator;

/// A certificate chain and its private key from PEM text held in memory (a Kubernetes
/// `kubernetes.io/tls` Secret's `tls.crt` and `tls.key`). The error says which part is
/// wrong, for a report; it never panics on what a peer wrote.
pub fn certified_key_from_pem(cert: &[u8], key: &[u8]) -> Result<CertifiedKey, String> {
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("tls.crt is not PEM certificates: {e}"))?;
    if chain.is_empty() {
        return Err("tls.crt holds no PEM certificate".to_string());
    }
    let private = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| format!("tls.key is not a PEM private key: {e}"))?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, private, &provider)
        .map_err(|e| format!("tls.key does not fit tls.crt: {e}"))
}

impl Validator<'_, '_> {
    pub(super) fn certified_key(
        &mut self,
        cert: &Spanned<String>,
        key: &Spanned<String>,
        at: &str,
    ) -> Option<Arc<CertifiedKey>> {
        let chain = self.certificates(cert, &format!("{at}.cert"));
        let private = self.private_key(key, &format!("{at}.key"));
        let provider = rustls::crypto::ring::default_provider();
        match CertifiedKey::from_der(chain?, private?, &provider) {
            Ok(ck) => Some(Arc::new(ck)),
            Err(e) => {
                self.report.error(
                    key.span(),
                    format!("{at}.key"),
                    format!(
                        "the key does not fit the certificate {}: {e}",
                        cert.get_ref()
                    ),
                );
                None
            }
        }
    }

    pub(super) fn certificates(
        &mut self,
        file: &Spanned<String>,
        key: &str,
    ) -> Option<Vec<CertificateDer<'static>>> {
        let path = self.readable_file(file, key)?;
        let certs: Result<Vec<_>, _> = match CertificateDer::pem_file_iter(&path) {
            Ok(iter) => iter.collect(),
            Err(e) => Err(e),
        };
        match certs {
            Ok(c) if !c.is_empty() => Some(c),
            Ok(_) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("{} holds no PEM certificate", path.display()),
                );
                None
            }
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read certificates from {}: {e}", path.display()),
                );
                None
            }
        }
    }

    pub(super) fn private_key(
        &mut self,
        file: &Spanned<String>,
        key: &str,
    ) -> Option<PrivateKeyDer<'static>> {
        let path = self.readable_file(file, key)?;
        PrivateKeyDer::from_pem_file(&path)
            .map_err(|e| {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read a PEM private key from {}: {e}", path.display()),
                )
            })
            .ok()
    }

    /// Resolves `file` against the config's folder and checks it can be read.
    pub(super) fn readable_file(&mut self, file: &Spanned<String>, key: &str) -> Option<PathBuf> {
        let path = self.base.join(file.get_ref());
        match std::fs::File::open(&path) {
            Ok(_) => {
                self.files.insert(path.clone());
                Some(path)
            }
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read {}: {e}", path.display()),
                );
                None
            }
        }
    }
}
