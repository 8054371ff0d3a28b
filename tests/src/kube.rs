//! The kube-api front's test bed pieces that every kubectl suite needs: the leaves'
//! kubeconfigs in the gateway's folder, the listener's serving certificate, and
//! kubeconfigs that point kubectl at the listener as a tenant's token or certificate.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use kubesim::{Credential, KubeSim};

use crate::certs::TestCa;
use crate::config::Listener;

/// Writes each leaf's kubeconfig (leafgate's client certificate) into `dir` as named.
pub fn leaf_kubeconfigs(dir: &Path, leaves: &[(&KubeSim, &str)]) {
    for (sim, file) in leaves {
        sim.kubeconfig(&Credential::ClientCert("leafgate".into()), &dir.join(file))
            .unwrap();
    }
}

/// A CA that signs the kube-api listener's certificate (`kube-api.pem`, for 127.0.0.1)
/// in `dir` and tenants' client certificates (`clients-ca.pem`).
pub fn serving_ca(dir: &Path) -> TestCa {
    let ca = TestCa::new("kube-api CA");
    ca.issue(dir, "kube-api", &["127.0.0.1"]);
    ca.write(dir, "clients-ca.pem");
    ca
}

/// The kube-api listener `kube` with the certificate [`serving_ca`] wrote, taking client
/// certificates too.
pub fn listener() -> Listener {
    Listener::kube_api("kube")
        .tls("kube-api.pem", "kube-api-key.pem")
        .client_ca("clients-ca.pem")
}

/// Who kubectl is.
#[derive(Clone, Copy, Debug)]
pub enum KubeUser<'a> {
    /// A bearer token from a tenant's `tokens_file`.
    Token(&'a str),
    /// A client certificate the CA issues for this common name.
    Cert(&'a str),
}

/// A kubeconfig in `dir` for `server` (trusting `ca`) as `user`, in namespace `ns` when
/// given. Each user and namespace gets a file of its own.
pub fn kubeconfig(
    dir: &Path,
    ca: &TestCa,
    server: SocketAddr,
    user: KubeUser<'_>,
    ns: Option<&str>,
) -> PathBuf {
    let ca_file = ca.write(dir, "ca.pem");
    let (name, user_yaml) = match user {
        KubeUser::Token(t) => (t.to_string(), format!("    token: {t}\n")),
        KubeUser::Cert(cn) => {
            let files = ca.issue(dir, cn, &[cn]);
            (
                cn.to_string(),
                format!(
                    "    client-certificate: {}\n    client-key: {}\n",
                    files.cert.display(),
                    files.key.display()
                ),
            )
        }
    };
    let namespace = ns
        .map(|n| format!("    namespace: {n}\n"))
        .unwrap_or_default();
    let path = dir.join(format!("{name}-{}.kubeconfig", ns.unwrap_or("_")));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: leafgate\n  cluster:\n    server: https://{server}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n{user_yaml}contexts:\n- name: c\n  context:\n    cluster: leafgate\n    user: u\n{namespace}current-context: c\n",
            ca_file.display()
        ),
    )
    .unwrap();
    path
}

/// The common bed of the kubectl suites: leaves `leaf-a` and `leaf-b` (each a simulator)
/// behind the kube-api listener, tenant `acme` (`apps`, `apps-*`) and tenant `other`
/// (`other`), each with one bearer token.
pub struct TwoLeaves {
    pub gw: crate::TestGateway,
    pub leaf_a: KubeSim,
    pub leaf_b: KubeSim,
    pub ca: TestCa,
}

impl TwoLeaves {
    /// Starts it with `acme`'s and `other`'s tokens.
    pub async fn start(acme_token: &str, other_token: &str) -> TwoLeaves {
        TwoLeaves::start_with(acme_token, other_token, |acme| acme).await
    }

    /// Starts it with `acme`'s and `other`'s tokens, tenant `acme` as `acme` makes it
    /// (its plugins, say).
    pub async fn start_with(
        acme_token: &str,
        other_token: &str,
        acme: impl FnOnce(crate::config::Tenant) -> crate::config::Tenant,
    ) -> TwoLeaves {
        TwoLeaves::start_tenants(acme_token, other_token, acme, |other| other).await
    }

    /// [`TwoLeaves::start_with`], tenant `other` as `other` makes it too.
    pub async fn start_tenants(
        acme_token: &str,
        other_token: &str,
        acme: impl FnOnce(crate::config::Tenant) -> crate::config::Tenant,
        other: impl FnOnce(crate::config::Tenant) -> crate::config::Tenant,
    ) -> TwoLeaves {
        let builders = (KubeSim::builder(), KubeSim::builder());
        TwoLeaves::start_built(builders, acme_token, other_token, acme, other).await
    }

    /// [`TwoLeaves::start_tenants`], the leaves' simulators as `builders` make them
    /// (leaf-a's, leaf-b's).
    pub async fn start_built(
        builders: (kubesim::KubeSimBuilder, kubesim::KubeSimBuilder),
        acme_token: &str,
        other_token: &str,
        acme: impl FnOnce(crate::config::Tenant) -> crate::config::Tenant,
        other: impl FnOnce(crate::config::Tenant) -> crate::config::Tenant,
    ) -> TwoLeaves {
        use crate::config::{Leaf, Tenant};
        let leaf_a = builders.0.start().await.unwrap();
        let leaf_b = builders.1.start().await.unwrap();
        let gw_dir = tempfile::tempdir().unwrap();
        leaf_kubeconfigs(
            gw_dir.path(),
            &[(&leaf_a, "a.kubeconfig"), (&leaf_b, "b.kubeconfig")],
        );
        let ca = serving_ca(gw_dir.path());
        std::fs::write(gw_dir.path().join("acme.tokens"), acme_token).unwrap();
        std::fs::write(gw_dir.path().join("other.tokens"), other_token).unwrap();
        let config = crate::Config::new()
            .admin()
            .listener(listener())
            .leaf(Leaf::new("leaf-a", "a.kubeconfig"))
            .leaf(Leaf::new("leaf-b", "b.kubeconfig"))
            .tenant(acme(
                Tenant::new("acme")
                    .namespaces(["apps", "apps-*"])
                    .tokens_file("acme.tokens"),
            ))
            .tenant(other(
                Tenant::new("other")
                    .namespaces(["other"])
                    .tokens_file("other.tokens"),
            ));
        let gw = crate::TestGateway::start_in(gw_dir, config).await;
        TwoLeaves {
            gw,
            leaf_a,
            leaf_b,
            ca,
        }
    }
}

/// A kubectl that keeps printing (`get -w`, `logs -f`), read a line at a time: its stdout
/// piped, killed when dropped.
pub struct Following {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Following {
    /// Starts `cmd` with its stdout (and stderr) piped.
    pub fn spawn(mut cmd: tokio::process::Command) -> Following {
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("kubectl starts");
        let stdout = child.stdout.take().expect("piped stdout");
        Following {
            child,
            lines: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout)),
        }
    }

    /// The next line it prints, within 15 s; `None` once it has exited.
    pub async fn next_line(&mut self) -> Option<String> {
        tokio::time::timeout(std::time::Duration::from_secs(15), self.lines.next_line())
            .await
            .expect("a line within 15 s")
            .expect("kubectl's output reads")
    }

    /// The next line it prints, within 15 s, while it keeps running.
    pub async fn next(&mut self) -> String {
        self.next_line().await.expect("kubectl still running")
    }

    /// Stops it.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
