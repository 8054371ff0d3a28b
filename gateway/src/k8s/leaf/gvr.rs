//! A kind's names as the API spells them: its group, version, resource and kind.

/// A kind the front serves read-only: its group, version, resource and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gvr {
    /// `""` for the core group.
    pub group: &'static str,
    /// `v1` or `<group>/v1`.
    pub api_version: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
}

impl Gvr {
    /// The version within the group (`v1` of `apps/v1`).
    pub fn version(&self) -> &'static str {
        self.api_version
            .split_once('/')
            .map_or(self.api_version, |(_, v)| v)
    }

    /// The path listing the kind across namespaces (`/apis/apps/v1/deployments`).
    pub fn path(&self) -> String {
        let root = if self.group.is_empty() { "api" } else { "apis" };
        format!("/{root}/{}/{}", self.api_version, self.resource)
    }
}

pub(super) const fn gvr(
    group: &'static str,
    api_version: &'static str,
    resource: &'static str,
    kind: &'static str,
) -> Gvr {
    Gvr {
        group,
        api_version,
        resource,
        kind,
    }
}
