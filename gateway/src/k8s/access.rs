//! Who may call the node API, asked of the root cluster as the kubelet's webhook authorizer
//! asks it: a `SubjectAccessReview` (`authorization.k8s.io/v1`, POSTed with leafgate's root
//! credentials) for the caller's user and groups on `nodes/proxy`, its answer cached by the
//! whole question, allowed answers for 5 minutes and the others for 30 seconds (the
//! kubelet's `authorization.webhook.cacheAuthorizedTTL` / `cacheUnauthorizedTTL` defaults).
//!
//! Only `status.allowed` lets a caller in: a denial and "no opinion" (neither `allowed` nor
//! `denied`) both refuse, as the kubelet refuses anything not allowed. A review that could
//! not be asked (the root unreachable, its answer unreadable) is an error, never cached and
//! never an allowance. The requests run on the runtime that built this (the control
//! runtime, like the leaves' clients); the client is built on first use and rebuilt after a
//! failure to build it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::root::{self, RootError};
use crate::config::KubernetesConfig;

/// How long an allowed answer is believed (the kubelet's default).
pub const ALLOWED_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a refusal is believed (the kubelet's default).
pub const DENIED_TTL: Duration = Duration::from_secs(30);
/// How long one review may take before the caller gets an authorization error.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// Answers kept at most; past it the expired go, then (if none had) all of them.
const MAX_CACHED: usize = 4096;

/// The group every authenticated user has, as the kubelet's authenticator adds it.
pub const AUTHENTICATED: &str = "system:authenticated";

/// One question: may `user` (in `groups`) `verb` the `resource`/`subresource` named `name`?
/// Cluster-scoped resources of the core group, version v1 (what the kubelet asks).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attributes {
    pub user: String,
    pub groups: Vec<String>,
    pub verb: String,
    pub resource: &'static str,
    pub subresource: &'static str,
    /// Empty: the question is about no object in particular.
    pub name: String,
}

impl Attributes {
    /// The kubelet's question for a request to its API: `nodes/proxy` on `node`, the verb
    /// from the HTTP method as its webhook authorizer maps it (HEAD reads like GET; a
    /// method it does not map asks with an empty verb, which no policy allows).
    pub fn node_proxy(user: &str, groups: &[String], method: &http::Method, node: &str) -> Self {
        let verb = match *method {
            http::Method::GET | http::Method::HEAD => "get",
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            _ => "",
        };
        let mut groups = groups.to_vec();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_string());
        }
        Attributes {
            user: user.to_string(),
            groups,
            verb: verb.to_string(),
            resource: "nodes",
            subresource: "proxy",
            name: node.to_string(),
        }
    }

    fn review(&self) -> SubjectAccessReview {
        SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(self.user.clone()),
                groups: Some(self.groups.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(self.verb.clone()),
                    version: Some("v1".to_string()),
                    resource: Some(self.resource.to_string()),
                    subresource: Some(self.subresource.to_string()),
                    name: Some(self.name.clone()).filter(|n| !n.is_empty()),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        }
    }
}

/// Why a review could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Root(#[from] RootError),
    #[error("SubjectAccessReview at the root cluster: {0}")]
    Review(String),
    #[error("SubjectAccessReview at the root cluster: no answer within {0:?}")]
    Timeout(Duration),
}

/// The answers believed for now, by question.
#[derive(Debug, Default)]
struct Cache {
    answers: HashMap<Attributes, (bool, Instant)>,
}

impl Cache {
    /// The answer to `attrs` if one is still believed at `now`.
    fn get(&self, attrs: &Attributes, now: Instant) -> Option<bool> {
        self.answers
            .get(attrs)
            .filter(|(_, until)| *until > now)
            .map(|(allowed, _)| *allowed)
    }

    fn put(&mut self, attrs: Attributes, allowed: bool, now: Instant) {
        if self.answers.len() >= MAX_CACHED {
            self.answers.retain(|_, (_, until)| *until > now);
            if self.answers.len() >= MAX_CACHED {
                self.answers.clear();
            }
        }
        let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
        self.answers.insert(attrs, (allowed, now + ttl));
    }
}

/// The root cluster's SubjectAccessReviews and the answers believed for now.
pub struct AccessReviews {
    config: KubernetesConfig,
    client: OnceCell<kube::Client>,
    cache: Mutex<Cache>,
    runtime: Option<tokio::runtime::Handle>,
}

impl AccessReviews {
    /// Reviews at the root cluster of `config`, asked on the current runtime when there is
    /// one (else on the caller's). Nothing is dialled until the first review.
    pub fn new(config: &KubernetesConfig) -> AccessReviews {
        AccessReviews {
            config: config.clone(),
            client: OnceCell::new(),
            cache: Mutex::new(Cache::default()),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Whether these reviews go to the root cluster `config` names (a reload keeps them,
    /// and their cached answers, when it does).
    pub fn built_from(&self, config: &KubernetesConfig) -> bool {
        self.config.kubeconfig == config.kubeconfig && self.config.context == config.context
    }

    /// Whether `attrs` is allowed: from the cache, else asked of the root cluster.
    pub async fn allowed(&self, attrs: &Attributes) -> Result<bool, AccessError> {
        let cached = self.lock().get(attrs, Instant::now());
        if let Some(allowed) = cached {
            return Ok(allowed);
        }
        let review = attrs.review();
        let ask = async {
            let client = self
                .client
                .get_or_try_init(|| root::connect(&self.config))
                .await?
                .clone();
            let asked = async move {
                kube::Api::<SubjectAccessReview>::all(client)
                    .create(&PostParams::default(), &review)
                    .await
            };
            let answer = match &self.runtime {
                Some(rt) => rt
                    .spawn(asked)
                    .await
                    .map_err(|e| AccessError::Review(e.to_string()))?,
                None => asked.await,
            };
            answer.map_err(|e| AccessError::Review(e.to_string()))
        };
        let answer = tokio::time::timeout(REVIEW_TIMEOUT, ask)
            .await
            .map_err(|_| AccessError::Timeout(REVIEW_TIMEOUT))??;
        let allowed = answer.status.is_some_and(|s| s.allowed);
        self.lock().put(attrs.clone(), allowed, Instant::now());
        Ok(allowed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A poisoned cache only lost answers; they are asked again.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(user: &str, verb: &http::Method) -> Attributes {
        Attributes::node_proxy(user, &["oncall".to_string()], verb, "vn-1")
    }

    #[test]
    fn the_kubelet_s_verbs_and_the_authenticated_group() {
        let verbs: Vec<String> = [
            http::Method::GET,
            http::Method::HEAD,
            http::Method::POST,
            http::Method::PUT,
            http::Method::PATCH,
            http::Method::DELETE,
            http::Method::OPTIONS,
        ]
        .iter()
        .map(|m| attrs("ops", m).verb)
        .collect();
        assert_eq!(
            verbs,
            ["get", "get", "create", "update", "patch", "delete", ""]
        );
        let a = attrs("ops", &http::Method::GET);
        assert_eq!(a.groups, ["oncall", AUTHENTICATED]);
        let spec = serde_json::to_value(a.review().spec).unwrap();
        assert_eq!(
            spec,
            serde_json::json!({
                "user": "ops", "groups": ["oncall", "system:authenticated"],
                "resourceAttributes": {"verb": "get", "version": "v1", "resource": "nodes",
                                       "subresource": "proxy", "name": "vn-1"}
            })
        );
        let nameless = Attributes::node_proxy("ops", &[], &http::Method::GET, "");
        let spec = serde_json::to_value(nameless.review().spec).unwrap();
        assert!(spec["resourceAttributes"].get("name").is_none(), "{spec}");
    }

    #[test]
    fn allowed_answers_live_five_minutes_and_refusals_thirty_seconds() {
        let mut cache = Cache::default();
        let t0 = Instant::now();
        let ops = attrs("ops", &http::Method::GET);
        let intruder = attrs("intruder", &http::Method::GET);
        cache.put(ops.clone(), true, t0);
        cache.put(intruder.clone(), false, t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(cache.get(&ops, at(29)), Some(true));
        assert_eq!(cache.get(&intruder, at(29)), Some(false));
        assert_eq!(cache.get(&intruder, at(30)), None);
        assert_eq!(cache.get(&ops, at(299)), Some(true));
        assert_eq!(cache.get(&ops, at(300)), None);
        // Another verb, group or node is another question.
        assert_eq!(cache.get(&attrs("ops", &http::Method::POST), at(1)), None);
        let other_groups = Attributes::node_proxy("ops", &[], &http::Method::GET, "vn-1");
        assert_eq!(cache.get(&other_groups, at(1)), None);
    }

    #[test]
    fn a_full_cache_drops_the_expired_first() {
        let mut cache = Cache::default();
        let t0 = Instant::now();
        for i in 0..MAX_CACHED {
            cache.put(attrs(&format!("u{i}"), &http::Method::POST), false, t0);
        }
        let later = t0 + DENIED_TTL;
        cache.put(attrs("fresh", &http::Method::GET), true, later);
        assert_eq!(cache.answers.len(), 1);
        assert_eq!(
            cache.get(&attrs("fresh", &http::Method::GET), later),
            Some(true)
        );
    }
}
