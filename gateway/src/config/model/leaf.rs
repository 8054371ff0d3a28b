//! A `[[leaf]]`, typed: its kubeconfig resolved into the server, the TLS trust and identity
//! and the `Authorization` leafgate uses to reach it.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};

use super::tls::ClientCert;

/// A `[[leaf]]`: its kubeconfig read, the context chosen and every file it names loaded.
/// Only what leafgate supports gets here: `exec`, `auth-provider`, `proxy-url` and the
/// like are config errors, not silently ignored settings.
#[derive(Debug, Clone)]
pub struct LeafConfig {
    pub name: String,
    pub kubeconfig: PathBuf,
    /// The context used: `context` from the TOML, else the kubeconfig's `current-context`.
    pub context: String,
    /// The API server, `https://host:port` (or `http://`), with any path prefix kept.
    pub server: http::Uri,
    /// The context's namespace, `default` when it names none.
    pub namespace: String,
    pub tls: LeafTls,
    pub auth: LeafAuth,
    /// What the kube-api front does with this leaf's pods while its reflector is out of
    /// sync (`stale`; not part of the leaf's identity: changing it keeps the leaf).
    pub stale: StalePolicy,
    /// SHA-256 over the context name, the kubeconfig and every file it names (but not a
    /// `tokenFile`, which is re-read while running): equal fingerprints mean a reload can
    /// keep the leaf's connections and pod index.
    pub fingerprint: [u8; 32],
}

impl PartialEq for LeafConfig {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.kubeconfig == other.kubeconfig
            && self.fingerprint == other.fingerprint
    }
}

impl Eq for LeafConfig {}

/// `[[leaf]] stale`: answers that would include pods from a leaf whose reflector is not in
/// sync (never listed yet, or its watch failed and has not recovered).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StalePolicy {
    /// Serve its last-known pods with a `Warning` header naming the leaf and since when.
    #[default]
    Warn,
    /// Leave its pods out (with the same warning).
    Hide,
    /// Answer 503 with a `Status` naming the leaf.
    Fail,
}

/// How leafgate checks a leaf's API server and proves itself to it.
#[derive(Debug, Clone)]
pub struct LeafTls {
    /// `certificate-authority(-data)`; `None`: the public web roots.
    pub roots: Option<Vec<CertificateDer<'static>>>,
    /// `insecure-skip-tls-verify`: the server's certificate is not checked (warned about).
    pub insecure_skip_verify: bool,
    /// `tls-server-name`: the name to verify and send as SNI instead of the server's host.
    pub server_name: Option<ServerName<'static>>,
    /// `client-certificate(-data)` + `client-key(-data)`.
    pub identity: Option<Arc<ClientCert>>,
}

/// The `Authorization` a leaf gets, besides (or instead of) a client certificate.
#[derive(Clone)]
pub enum LeafAuth {
    None,
    /// `token`: a fixed bearer token.
    Token(String),
    /// `tokenFile`: a bearer token read from this file, re-read whenever it changes
    /// (projected service-account tokens rotate).
    TokenFile(PathBuf),
}

impl std::fmt::Debug for LeafAuth {
    /// Never prints a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeafAuth::None => f.write_str("None"),
            LeafAuth::Token(_) => f.write_str("Token(<redacted>)"),
            LeafAuth::TokenFile(p) => write!(f, "TokenFile({})", p.display()),
        }
    }
}
