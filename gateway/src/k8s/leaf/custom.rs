//! One leaf's custom resources: the ones some tenant reaching the leaf is served
//! (`[[tenant]] resources` entries `<plural>.<group>`), each followed by one task that asks
//! the leaf's discovery about it, then keeps it as a built-in kind is kept (`printed`:
//! listed and watched as the leaf's `Table` with the object, so the columns and cells are
//! the leaf's own printer's, its CRD's `additionalPrinterColumns`).
//!
//! What the leaf says of it decides ([`Seen`]):
//! - the first version of its group (the leaf's `/apis`, the preferred version first: for
//!   a CRD, its highest-priority served version) whose resource list has it, and there its
//!   kind, scope, verbs, short names and categories;
//! - a leaf without it (no such group, version or resource) is no error: it is asked
//!   again every [`REASK`], so a CRD installed later is found;
//! - a cluster-scoped one is not served (a tenant's reads are its namespaces' alone; a
//!   cluster-wide object belongs to no tenant): a warning, and `/status` says so;
//! - one without `list` and `watch` is not served either.
//!
//! What a hostile leaf could say is bounded: a kind must be a CamelCase name of at most
//! 63 bytes, short names and categories DNS-1123 labels (at most 16 of each); anything else
//! is the resource not found.

use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, warn};

use super::printed::{self, Kept};
use crate::config::kinds::{CustomResource, Gvr, custom_gvr};
use crate::errors::{self, Causes};

/// How long a leaf without the resource waits before it is asked again.
pub const REASK: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The most short names, categories and versions of a group taken from a leaf.
const MAX_NAMES: usize = 16;

/// What the leaf said of one custom resource.
#[derive(Clone)]
pub enum Seen {
    /// Its discovery has not answered yet.
    Asking,
    /// It has no such resource (asked again every [`REASK`]).
    Absent,
    /// It has it cluster-scoped, or without `list` and `watch`: not served.
    Refused(&'static Gvr, &'static str),
    /// Served: kept, with its discovery names.
    Served(Arc<Served>),
}

/// A custom resource a leaf serves, as the front serves it.
pub struct Served {
    pub kept: Arc<Kept>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

impl Served {
    pub fn gvr(&self) -> &'static Gvr {
        self.kept.gvr
    }
}

/// What the leaf's discovery lists of a resource.
struct Found {
    gvr: &'static Gvr,
    namespaced: bool,
    watchable: bool,
    short_names: Vec<String>,
    categories: Vec<String>,
}

/// Follows `name` in `client`'s leaf for ever: asks its discovery until it answers (and
/// again while it lacks the resource), tells `seen` what it said, then reflects it if it
/// is served.
pub async fn follow(
    client: kube::Client,
    leaf: String,
    name: CustomResource,
    seen: impl Fn(Seen) + Send + 'static,
) {
    let mut delay = Duration::from_secs(1);
    let found = loop {
        match discover(&client, &name).await {
            Ok(Some(found)) => break found,
            Ok(None) => {
                debug!(leaf = %leaf, resource = %name.entry(), "the leaf does not serve the custom resource; asking again later");
                seen(Seen::Absent);
                tokio::time::sleep(REASK).await;
            }
            Err(e) => {
                let reason = errors::describe(&e, Causes::All);
                warn!(leaf = %leaf, resource = %name.entry(), error = %reason, "leaf discovery of a custom resource failed; retrying after backoff");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_BACKOFF);
            }
        }
    };
    let refused = match (found.namespaced, found.watchable) {
        (false, _) => Some("cluster-scoped: not served (a tenant reads its namespaces only)"),
        (true, false) => Some("without list and watch: not served"),
        (true, true) => None,
    };
    if let Some(why) = refused {
        warn!(leaf = %leaf, resource = %name.entry(), version = found.gvr.version(), why, "custom resource not served");
        seen(Seen::Refused(found.gvr, why));
        return;
    }
    let kept = Arc::new(Kept::new(found.gvr));
    seen(Seen::Served(Arc::new(Served {
        kept: kept.clone(),
        short_names: found.short_names,
        categories: found.categories,
    })));
    printed::reflect(client, kept, leaf).await;
}

/// What the leaf's discovery lists of `name` at the first version of its group that has
/// it, the group's preferred version first (as kubectl's preferred resources pick it: one
/// group may hold CRDs of different versions); `None` when it has no such group or
/// resource (or lists it in words no resource can have).
async fn discover(
    client: &kube::Client,
    name: &CustomResource,
) -> Result<Option<Found>, kube::Error> {
    let groups = client.list_api_groups().await?;
    let Some(group) = groups.groups.iter().find(|g| g.name == name.group) else {
        return Ok(None);
    };
    let preferred = group.preferred_version.iter();
    let mut versions: Vec<&str> = preferred
        .chain(&group.versions)
        .map(|v| v.version.as_str())
        .collect();
    versions.dedup();
    for version in versions.into_iter().take(MAX_NAMES) {
        if !is_label(version) {
            continue;
        }
        let listed = client
            .list_api_group_resources(&format!("{}/{version}", name.group))
            .await;
        let list = match listed {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => return Err(e),
        };
        let Some(r) = list.resources.iter().find(|r| r.name == name.resource) else {
            continue;
        };
        if !is_kind(&r.kind) {
            return Ok(None);
        }
        let labels = |names: &Option<Vec<String>>| -> Vec<String> {
            let names = names.iter().flatten().filter(|n| is_label(n));
            names.take(MAX_NAMES).cloned().collect()
        };
        return Ok(Some(Found {
            gvr: custom_gvr(&name.group, version, &name.resource, &r.kind),
            namespaced: r.namespaced,
            watchable: ["list", "watch"]
                .iter()
                .all(|v| r.verbs.iter().any(|have| have == v)),
            short_names: labels(&r.short_names),
            categories: labels(&r.categories),
        }));
    }
    Ok(None)
}

/// A kind's name: an ASCII letter, then letters and digits, at most 63 bytes.
fn is_kind(s: &str) -> bool {
    s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric())
}

fn is_label(s: &str) -> bool {
    crate::k8s::names::is_label(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_a_resource_can_have_are_taken() {
        assert!(is_kind("CronTab"));
        for bad in ["", "1Tab", "Cron-Tab", "Cron Tab", &"K".repeat(64)] {
            assert!(!is_kind(bad), "{bad:?}");
        }
        assert!(is_label("ct"));
        assert!(!is_label("CT"));
    }
}
