//! The root cluster's client: its kubeconfig, else the in-cluster service account. The
//! drivers that write to the root cluster (virtual nodes, the election, the Ingress
//! provider) live in `controllers`; this is only how they connect.

use crate::config::KubernetesConfig;

#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("root cluster kubeconfig {path}: {reason}")]
    Kubeconfig { path: String, reason: String },
    #[error("root cluster client: {0}")]
    Client(String),
}

/// Builds the root cluster's client: its kubeconfig, else the in-cluster service account.
pub async fn connect(config: &KubernetesConfig) -> Result<kube::Client, RootError> {
    let kube_config = match &config.kubeconfig {
        Some(path) => {
            let err = |reason: String| RootError::Kubeconfig {
                path: path.display().to_string(),
                reason,
            };
            let file = kube::config::Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
            let options = kube::config::KubeConfigOptions {
                context: config.context.clone(),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| err(e.to_string()))?
        }
        None => kube::Config::incluster().map_err(|e| RootError::Client(e.to_string()))?,
    };
    kube::Client::try_from(kube_config).map_err(|e| RootError::Client(e.to_string()))
}
