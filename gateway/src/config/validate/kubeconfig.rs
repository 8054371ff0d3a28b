//! A leaf's kubeconfig, read into the typed [`LeafConfig`] parts: server, CA, client
//! certificate, token or token file, `tls-server-name`, `insecure-skip-tls-verify`.
//!
//! kube-rs parses the YAML (`Kubeconfig::from_yaml`); this module picks the context, loads
//! the files it names (relative to the kubeconfig, as kubectl does) and refuses what
//! leafgate cannot honour (`exec` and `auth-provider` plugins, `proxy-url`, basic auth,
//! impersonation) with a [`Problem`] naming the kubeconfig field, which validation reports
//! at the `[[leaf]]` key. It builds no TLS config and opens no connection.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use kube::config::{AuthInfo, Cluster, Kubeconfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};

use crate::config::model::{ClientCert, LeafAuth, LeafTls};

/// Which `[[leaf]]` key a problem is reported at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum At {
    Kubeconfig,
    Context,
}

/// Why a kubeconfig cannot serve as a leaf.
#[derive(Debug)]
pub(super) struct Problem {
    pub at: At,
    pub message: String,
}

/// What a kubeconfig resolves to, plus the files it named (for the reload watcher).
pub(super) struct Resolved {
    pub context: String,
    pub server: http::Uri,
    pub namespace: String,
    pub tls: LeafTls,
    pub auth: LeafAuth,
    pub files: Vec<PathBuf>,
    pub fingerprint: [u8; 32],
}

fn problem(message: impl Into<String>) -> Problem {
    Problem {
        at: At::Kubeconfig,
        message: message.into(),
    }
}

/// Reads `path` and resolves `context` (or the current context) in it.
pub(super) fn resolve(path: &Path, context: Option<&str>) -> Result<Resolved, Problem> {
    let bytes =
        std::fs::read(path).map_err(|e| problem(format!("cannot read {}: {e}", path.display())))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| problem(format!("{} is not UTF-8 text", path.display())))?;
    let kubeconfig = Kubeconfig::from_yaml(text)
        .map_err(|e| problem(format!("{} is not a kubeconfig: {e}", path.display())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut loader = Loader {
        dir,
        files: Vec::new(),
        digest: Sha256::new(),
    };
    loader.digest.update(&bytes);

    let context_name = match context {
        Some(c) => c.to_string(),
        None => kubeconfig.current_context.clone().ok_or_else(|| {
            problem("the kubeconfig has no `current-context`: set `context` on the [[leaf]]")
        })?,
    };
    loader.digest.update(context_name.as_bytes());
    let Some(ctx) = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
    else {
        let known: Vec<&str> = kubeconfig
            .contexts
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        return Err(Problem {
            at: if context.is_some() {
                At::Context
            } else {
                At::Kubeconfig
            },
            message: format!(
                "context `{context_name}` is not in {} (it has: {})",
                path.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        });
    };
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            problem(format!(
                "contexts[{context_name}].context.cluster: no cluster is named `{}`",
                ctx.cluster
            ))
        })?;
    let user_name = ctx.user.clone().unwrap_or_default();
    let no_user = AuthInfo::default();
    let user = match &ctx.user {
        Some(u) => kubeconfig
            .auth_infos
            .iter()
            .find(|a| &a.name == u)
            .and_then(|a| a.auth_info.as_ref())
            .ok_or_else(|| {
                problem(format!(
                    "contexts[{context_name}].context.user: no user is named `{u}`"
                ))
            })?,
        None => &no_user,
    };
    let at_cluster = format!("clusters[{}].cluster", ctx.cluster);
    let at_user = format!("users[{user_name}].user");

    let server = loader.server(cluster, &at_cluster)?;
    let roots = loader.roots(cluster, &at_cluster)?;
    let server_name = match &cluster.tls_server_name {
        Some(n) => Some(ServerName::try_from(n.clone()).map_err(|e| {
            problem(format!(
                "{at_cluster}.tls-server-name: `{n}` is not a DNS name or IP address: {e}"
            ))
        })?),
        None => None,
    };
    let (identity, auth) = loader.user(user, &at_user)?;
    Ok(Resolved {
        context: context_name,
        server,
        namespace: ctx
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string()),
        tls: LeafTls {
            roots,
            insecure_skip_verify: cluster.insecure_skip_tls_verify.unwrap_or(false),
            server_name,
            identity,
        },
        auth,
        files: loader.files,
        fingerprint: loader.digest.finalize().into(),
    })
}

/// Loads the files and inline data a kubeconfig names, hashing everything it reads.
struct Loader<'a> {
    dir: &'a Path,
    files: Vec<PathBuf>,
    digest: Sha256,
}

impl Loader<'_> {
    fn server(&mut self, cluster: &Cluster, at: &str) -> Result<http::Uri, Problem> {
        if cluster.proxy_url.is_some() {
            return Err(problem(format!(
                "{at}.proxy-url: proxies are not supported; let leafgate reach the API server directly"
            )));
        }
        let text = cluster
            .server
            .as_deref()
            .ok_or_else(|| problem(format!("{at}.server: missing; name the API server URL")))?;
        let uri: http::Uri = text
            .parse()
            .map_err(|e| problem(format!("{at}.server: `{text}` is not a URL: {e}")))?;
        match (uri.scheme_str(), uri.authority()) {
            (Some("https" | "http"), Some(_)) => Ok(uri),
            _ => Err(problem(format!(
                "{at}.server: `{text}` must be an https:// (or http://) URL with a host"
            ))),
        }
    }

    fn roots(
        &mut self,
        cluster: &Cluster,
        at: &str,
    ) -> Result<Option<Vec<CertificateDer<'static>>>, Problem> {
        let Some(pem) = self.data_or_file(
            cluster.certificate_authority_data.as_deref(),
            cluster.certificate_authority.as_deref(),
            &format!("{at}.certificate-authority"),
        )?
        else {
            return Ok(None);
        };
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                problem(format!(
                    "{at}.certificate-authority: not PEM certificates: {e}"
                ))
            })?;
        if certs.is_empty() {
            return Err(problem(format!(
                "{at}.certificate-authority: holds no PEM certificate"
            )));
        }
        Ok(Some(certs))
    }

    fn user(
        &mut self,
        user: &AuthInfo,
        at: &str,
    ) -> Result<(Option<Arc<ClientCert>>, LeafAuth), Problem> {
        let unsupported = [
            (user.exec.is_some(), "exec", "exec credential plugins"),
            (
                user.auth_provider.is_some(),
                "auth-provider",
                "auth-provider plugins",
            ),
            (
                user.username.is_some() || user.password.is_some(),
                "username",
                "basic authentication",
            ),
            (
                user.impersonate.is_some() || user.impersonate_groups.is_some(),
                "as",
                "impersonation",
            ),
        ];
        if let Some((_, field, what)) = unsupported.iter().find(|(set, _, _)| *set) {
            return Err(problem(format!(
                "{at}.{field}: {what} are not supported; give the leaf a client certificate, a `token` or a `tokenFile`"
            )));
        }
        let cert = self.data_or_file(
            user.client_certificate_data.as_deref(),
            user.client_certificate.as_deref(),
            &format!("{at}.client-certificate"),
        )?;
        let key = self.data_or_file(
            user.client_key_data.as_ref().map(|k| k.expose_secret()),
            user.client_key.as_deref(),
            &format!("{at}.client-key"),
        )?;
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(&cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        problem(format!(
                            "{at}.client-certificate: not PEM certificates: {e}"
                        ))
                    })?;
                if chain.is_empty() {
                    return Err(problem(format!(
                        "{at}.client-certificate: holds no PEM certificate"
                    )));
                }
                let key = PrivateKeyDer::from_pem_slice(&key)
                    .map_err(|e| problem(format!("{at}.client-key: not a PEM private key: {e}")))?;
                Some(Arc::new(ClientCert { chain, key }))
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(problem(format!(
                    "{at}.client-key: a client certificate needs its key"
                )));
            }
            (None, Some(_)) => {
                return Err(problem(format!(
                    "{at}.client-certificate: a client key needs its certificate"
                )));
            }
        };
        let auth = match (&user.token, &user.token_file) {
            (Some(token), _) => {
                let token = token.expose_secret().trim().to_string();
                self.digest.update(token.as_bytes());
                if http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
                    return Err(problem(format!(
                        "{at}.token: has characters a header cannot carry"
                    )));
                }
                LeafAuth::Token(token)
            }
            (None, Some(file)) => {
                let path = self.dir.join(file);
                // Read once now so a missing file is a config error; while running it is
                // re-read whenever it changes, and it is not hashed: rotation is no reload.
                std::fs::read(&path).map_err(|e| {
                    problem(format!(
                        "{at}.tokenFile: cannot read {}: {e}",
                        path.display()
                    ))
                })?;
                self.digest.update(path.as_os_str().as_encoded_bytes());
                LeafAuth::TokenFile(path)
            }
            (None, None) => LeafAuth::None,
        };
        Ok((identity, auth))
    }

    /// Inline base64 `*-data` wins over the file, as in kubectl.
    fn data_or_file(
        &mut self,
        data: Option<&str>,
        file: Option<&str>,
        at: &str,
    ) -> Result<Option<Vec<u8>>, Problem> {
        let bytes = match (data, file) {
            (Some(d), _) => base64::engine::general_purpose::STANDARD
                .decode(d.trim())
                .map_err(|e| problem(format!("{at}-data: not base64: {e}")))?,
            (None, Some(f)) => {
                let path = self.dir.join(f);
                let bytes = std::fs::read(&path)
                    .map_err(|e| problem(format!("{at}: cannot read {}: {e}", path.display())))?;
                self.files.push(path);
                bytes
            }
            (None, None) => return Ok(None),
        };
        self.digest.update(&bytes);
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\n    tls-server-name: api.leaf\nusers:\n- name: u\n  user:\n    tokenFile: token\n- name: plugin\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\ncontexts:\n- name: a\n  context:\n    cluster: c\n    user: u\n    namespace: apps\n- name: b\n  context:\n    cluster: c\n    user: plugin\ncurrent-context: a\n";

    #[test]
    fn resolves_the_current_context_with_a_token_file_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "token", "t0\n");
        let path = write(dir.path(), "leaf.kubeconfig", KUBECONFIG);
        let r = resolve(&path, None).unwrap();
        assert_eq!(r.context, "a");
        assert_eq!(r.namespace, "apps");
        assert_eq!(r.server.to_string(), "https://127.0.0.1:6443/");
        assert!(r.tls.insecure_skip_verify && r.tls.roots.is_none());
        assert!(matches!(&r.auth, LeafAuth::TokenFile(p) if p == &dir.path().join("token")));
        // Rotating the token does not change the fingerprint; editing the kubeconfig does.
        write(dir.path(), "token", "t1\n");
        assert_eq!(resolve(&path, None).unwrap().fingerprint, r.fingerprint);
        write(
            dir.path(),
            "leaf.kubeconfig",
            &KUBECONFIG.replace("6443", "6444"),
        );
        assert_ne!(resolve(&path, None).unwrap().fingerprint, r.fingerprint);
    }

    #[test]
    fn unsupported_auth_and_unknown_contexts_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "token", "t0\n");
        let path = write(dir.path(), "leaf.kubeconfig", KUBECONFIG);
        let Err(e) = resolve(&path, Some("b")) else {
            panic!("exec accepted")
        };
        assert_eq!(e.at, At::Kubeconfig);
        assert!(
            e.message.starts_with("users[plugin].user.exec: "),
            "{}",
            e.message
        );
        let Err(e) = resolve(&path, Some("nope")) else {
            panic!("unknown context accepted")
        };
        assert_eq!(e.at, At::Context);
        assert!(
            e.message.contains("`nope`") && e.message.contains("a, b"),
            "{}",
            e.message
        );
        let proxied = write(
            dir.path(),
            "proxied",
            &KUBECONFIG.replace(
                "    tls-server-name",
                "    proxy-url: http://p:3128\n    tls-server-name",
            ),
        );
        let Err(e) = resolve(&proxied, None) else {
            panic!("proxy-url accepted")
        };
        assert!(
            e.message.starts_with("clusters[c].cluster.proxy-url"),
            "{}",
            e.message
        );
    }
}
