//! The Kubernetes version a leaf's API server runs: its `/version`, asked when the leaf
//! client starts and again each time the server accepts one of its watches (the pod
//! reflector's connect and reconnects: an upgraded leaf is seen on its next reconnect),
//! and retried every [`RETRY`] while it fails. The kube-api front reports the oldest.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::version::Info;
use tracing::debug;

/// How long after a failed `/version` it is asked again (unless a watch reconnects first).
const RETRY: Duration = Duration::from_secs(30);

/// A leaf's `/version`, as its server answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub info: Info,
    /// `major`, `minor` and the patch of `gitVersion`, for ordering: `minor` may carry a
    /// `+` (`"33+"` on some providers) and is read for its digits.
    pub order: (u32, u32, u32),
}

impl Version {
    /// `None` when `major` or `minor` has no leading number.
    pub fn new(info: Info) -> Option<Version> {
        let number = |s: &str| -> Option<u32> {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        let major = number(&info.major)?;
        let minor = number(&info.minor)?;
        let patch = info
            .git_version
            .trim_start_matches('v')
            .split('.')
            .nth(2)
            .and_then(number)
            .unwrap_or(0);
        Some(Version {
            info,
            order: (major, minor, patch),
        })
    }
}

/// The task keeping a leaf's version; dropping it stops the task.
pub struct LeafVersion {
    known: Arc<Mutex<Option<Version>>>,
    task: tokio::task::AbortHandle,
}

impl LeafVersion {
    /// Starts asking `client`'s `/version` on `runtime`; `watch_started` changes whenever
    /// the server accepts one of the client's watches.
    pub fn start(
        client: kube::Client,
        mut watch_started: tokio::sync::watch::Receiver<u64>,
        runtime: &tokio::runtime::Handle,
    ) -> LeafVersion {
        let known = Arc::new(Mutex::new(None));
        let keep = known.clone();
        let task = runtime.spawn(async move {
            loop {
                let asked = client.apiserver_version().await;
                let failed = match asked.map(Version::new) {
                    Ok(Some(version)) => {
                        *keep.lock().unwrap_or_else(PoisonError::into_inner) = Some(version);
                        false
                    }
                    Ok(None) => true,
                    Err(e) => {
                        debug!(error = %e, "leaf /version failed");
                        true
                    }
                };
                tokio::select! {
                    changed = watch_started.changed() => if changed.is_err() { return },
                    () = tokio::time::sleep(RETRY), if failed => {}
                }
            }
        });
        LeafVersion {
            known,
            task: task.abort_handle(),
        }
    }

    /// The last version the leaf reported, `None` before its first answer.
    pub fn get(&self) -> Option<Version> {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for LeafVersion {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(major: &str, minor: &str, git: &str) -> Info {
        Info {
            major: major.into(),
            minor: minor.into(),
            git_version: git.into(),
            ..Info::default()
        }
    }

    #[test]
    fn versions_order_by_major_minor_and_patch() {
        let v = |m, n, g| Version::new(info(m, n, g)).unwrap().order;
        assert_eq!(v("1", "33", "v1.33.4"), (1, 33, 4));
        assert_eq!(v("1", "33+", "v1.33.4-gke.100"), (1, 33, 4));
        assert!(v("1", "33", "v1.33.9") < v("1", "37", "v1.37.0"));
        assert_eq!(v("1", "30", "weird"), (1, 30, 0));
        assert!(Version::new(info("", "30", "v1.30.0")).is_none());
    }
}
