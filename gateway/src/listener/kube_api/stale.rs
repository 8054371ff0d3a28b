//! Stale leaves said out loud: an answer that would include pods from a leaf whose
//! reflector is not in sync (never listed yet, or its watch failed and has not come
//! back) follows the leaf's `stale` policy: `warn` serves the last-known pods with a
//! `Warning` header naming the leaf and since when (kubectl prints it as `Warning: ...`),
//! `hide` leaves them out with the same kind of warning, `fail` answers 503.
//!
//! Only leaves the tenant may reach are looked at: a tenant never learns of another's.

use std::time::SystemTime;

use http::{HeaderValue, Response};

use super::caller::Caller;
use crate::config::StalePolicy;
use crate::k8s::leaf::Leaf;
use crate::k8s::status::Status;
use crate::proxy::Body;
use crate::snapshot::Snapshot;

/// What the unsynced leaves a tenant reaches mean for one answer.
#[derive(Debug, Default)]
pub struct Stale {
    /// One `Warning` header value per unsynced leaf (`299 - "..."`).
    warnings: Vec<HeaderValue>,
}

/// `name`'s policy in `snapshot`'s config.
fn policy(snapshot: &Snapshot, name: &str) -> StalePolicy {
    snapshot
        .config
        .leaves
        .iter()
        .find(|l| l.name == name)
        .map_or(StalePolicy::default(), |l| l.stale)
}

/// Whether `leaf`'s pods are left out of answers now: it is out of sync and its policy is
/// `hide`. Asked per leaf on every listing, so a watch shows the leaf's pods again (as
/// `ADDED`) once it is back in sync.
pub fn hidden(snapshot: &Snapshot, name: &str, leaf: &Leaf) -> bool {
    policy(snapshot, name) == StalePolicy::Hide && !leaf.watch_state().synced
}

impl Stale {
    /// The unsynced leaves `caller` reaches, by their policies; `Err` is the 503 of the
    /// first with `stale = "fail"`.
    pub fn of(snapshot: &Snapshot, caller: &Caller<'_>) -> Result<Stale, Box<Status>> {
        let mut stale = Stale::default();
        for (name, leaf) in &snapshot.leaves {
            if !caller.config.may_reach(name) {
                continue;
            }
            let state = leaf.watch_state();
            if state.synced {
                continue;
            }
            let since = since(state.unsynced_since);
            match policy(snapshot, name) {
                StalePolicy::Fail => {
                    return Err(Box::new(Status::with_reason(
                        503,
                        "ServiceUnavailable",
                        format!(
                            "leaf {name} is not in sync{since}: its pods cannot be served now; try again later"
                        ),
                    )));
                }
                StalePolicy::Warn => stale.warn(&format!(
                    "leaf {name} is not in sync{since}: its pods are shown as last seen"
                )),
                StalePolicy::Hide => stale.warn(&format!(
                    "leaf {name} is not in sync{since}: its pods are left out"
                )),
            }
        }
        Ok(stale)
    }

    fn warn(&mut self, text: &str) {
        // kube-apiserver's form (RFC 7234 warn-code 299, agent `-`); the text holds
        // no quote or backslash, so it needs no escaping.
        let text: String = text.chars().filter(|c| !matches!(c, '"' | '\\')).collect();
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            self.warnings.push(v);
        }
    }

    /// Adds the warnings to `res`.
    pub fn tell(&self, mut res: Response<Body>) -> Response<Body> {
        for w in &self.warnings {
            res.headers_mut().append(http::header::WARNING, w.clone());
        }
        res
    }
}

/// ` since <RFC 3339 time>`, when known.
fn since(at: Option<SystemTime>) -> String {
    at.map(|t| format!(" since {}", humantime::format_rfc3339_seconds(t)))
        .unwrap_or_default()
}
