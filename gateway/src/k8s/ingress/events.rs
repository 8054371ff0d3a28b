//! Kubernetes Events on the Ingresses leafgate skips for a bad annotation or whose rules
//! or certificate it refuses because another owns their host or their tenant may not
//! claim it, written by the leader: one `Warning` Event, reason `InvalidAnnotation`,
//! `HostTaken` or `HostNotAllowed`, per (uid, resourceVersion, message). The Gateway API
//! source's refusals of HTTPRoutes and Gateways are written the same way ([`HTTP_ROUTE`],
//! [`GATEWAY`], reason the status condition's), keyed by the object's generation rather
//! than its resourceVersion: the leader's own status writes bump the resourceVersion of
//! those kinds, and a refusal is one Event until the object's spec changes.
//!
//! The Event's name is derived from that triple, so a second create of the same Event
//! (a new leader that does not know what the last one wrote) is refused by the API server
//! as already existing and counts as written. Fixing the annotation and breaking it again
//! changes the resourceVersion, so it is reported again. It runs only inside a leadership
//! term and decides nothing about routes.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Event;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::model::{IngressRef, Model, Refusal, Refused, Skipped};

/// The `reportingComponent` of leafgate's Events.
pub const REPORTING_COMPONENT: &str = "leafgate.io/ingress-controller";
/// The reason of the Event on an Ingress skipped for an annotation.
pub const INVALID_ANNOTATION: &str = "InvalidAnnotation";
/// The reason of the Event on an Ingress whose rules or certificate for a host are refused.
pub const HOST_TAKEN: &str = "HostTaken";
/// The reason of the Event on an Ingress whose rules or certificate for a host are refused
/// because the host is outside its tenant's `hosts` patterns.
pub const HOST_NOT_ALLOWED: &str = "HostNotAllowed";
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// What identifies one Event: the object's uid, its resourceVersion (or generation), and
/// the message.
type EventKey = (String, String, String);

/// The kind of object an Event is about: an Ingress, or (the Gateway API source's
/// refusals) an HTTPRoute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Involved {
    pub api_version: &'static str,
    pub kind: &'static str,
}

pub const INGRESS: Involved = Involved {
    api_version: "networking.k8s.io/v1",
    kind: "Ingress",
};

pub const HTTP_ROUTE: Involved = Involved {
    api_version: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
};

pub const GATEWAY: Involved = Involved {
    api_version: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
};

/// One Event to write: on which object, why, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice<'m> {
    /// The object's kind ([`INGRESS`] for all the Ingress model's).
    pub object: Involved,
    /// The object (an Ingress, or one of the same shape: namespace, name, uid, version).
    pub ingress: &'m IngressRef,
    /// [`INVALID_ANNOTATION`], [`HOST_TAKEN`] or [`HOST_NOT_ALLOWED`] (an Ingress's), or a
    /// status condition's reason.
    pub reason: &'static str,
    pub message: String,
    /// The object's generation, which keys the Event in place of its resourceVersion
    /// (`None`: keyed by the resourceVersion, as an Ingress's).
    pub generation: Option<i64>,
}

impl<'m> From<&'m Skipped> for Notice<'m> {
    fn from(s: &'m Skipped) -> Self {
        Notice {
            object: INGRESS,
            ingress: &s.ingress,
            reason: INVALID_ANNOTATION,
            message: message(s),
            generation: None,
        }
    }
}

impl<'m> From<&'m Refused> for Notice<'m> {
    fn from(r: &'m Refused) -> Self {
        Notice {
            object: INGRESS,
            ingress: &r.ingress,
            reason: match r.why {
                Refusal::Taken { .. } => HOST_TAKEN,
                Refusal::NotAllowed { .. } => HOST_NOT_ALLOWED,
            },
            message: r.message(),
            generation: None,
        }
    }
}

/// Every Event `model` calls for: skipped Ingresses, then refused hosts.
pub fn notices(model: &Model) -> Vec<Notice<'_>> {
    model
        .skipped
        .iter()
        .map(Notice::from)
        .chain(model.refused.iter().map(Notice::from))
        .collect()
}

/// The message of the Event for `s`: the annotation and why it was refused.
pub fn message(s: &Skipped) -> String {
    if s.reason.contains(&s.annotation) {
        s.reason.clone()
    } else {
        format!("annotation {}: {}", s.annotation, s.reason)
    }
}

fn key(s: &Notice<'_>) -> EventKey {
    let version = match s.generation {
        Some(g) => format!("generation {g}"),
        None => s.ingress.resource_version.clone(),
    };
    (s.ingress.uid.clone(), version, s.message.clone())
}

/// The Event's name: the Ingress's name (cut so the whole stays a valid object name) and
/// a digest of the key, the same on every replica and every build.
pub fn event_name(s: &Notice<'_>) -> String {
    let (uid, rv, message) = key(s);
    let mut h = Sha256::new();
    for part in [uid, rv, message] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let digest: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let name: String = s.ingress.name.chars().take(200).collect();
    format!("{name}.{digest}")
}

/// The Event object for `s`.
pub fn event(s: &Notice<'_>, instance: &str, now: SystemTime) -> Value {
    let at = humantime::format_rfc3339_seconds(now).to_string();
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(s), "namespace": s.ingress.namespace},
        "involvedObject": {
            "apiVersion": s.object.api_version,
            "kind": s.object.kind,
            "namespace": s.ingress.namespace,
            "name": s.ingress.name,
            "uid": s.ingress.uid,
            "resourceVersion": s.ingress.resource_version,
        },
        "type": "Warning",
        "reason": s.reason,
        "message": s.message,
        "source": {"component": "leafgate"},
        "reportingComponent": REPORTING_COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    })
}

/// What one leader has reported.
#[derive(Default)]
pub struct EventLog {
    sent: HashSet<EventKey>,
}

impl EventLog {
    /// The Events of `model` not written yet. Keys no longer due are forgotten, so the
    /// log is as large as the current list.
    pub fn due<'m>(&mut self, model: &'m Model) -> Vec<Notice<'m>> {
        self.due_of(notices(model))
    }

    /// Of `all` (every Event due now, of one source), those not written yet; the others'
    /// keys are forgotten, so a log serves one source.
    pub fn due_of<'m>(&mut self, all: Vec<Notice<'m>>) -> Vec<Notice<'m>> {
        let now: HashSet<EventKey> = all.iter().map(key).collect();
        self.sent.retain(|k| now.contains(k));
        all.into_iter()
            .filter(|s| !self.sent.contains(&key(s)))
            .collect()
    }

    pub fn mark(&mut self, s: &Notice<'_>) {
        self.sent.insert(key(s));
    }
}

/// Creates the Events `log` says are due; the first failure is returned (the rest are
/// tried again at the next model).
pub async fn emit(
    client: &kube::Client,
    log: &mut EventLog,
    model: &Model,
    instance: &str,
) -> Result<usize, String> {
    let due = log.due(model);
    emit_due(client, log, due, instance).await
}

/// Creates the Events `due` (from [`EventLog::due_of`]); the first failure is returned.
pub async fn emit_due(
    client: &kube::Client,
    log: &mut EventLog,
    due: Vec<Notice<'_>>,
    instance: &str,
) -> Result<usize, String> {
    let mut written = 0;
    let mut first_error = None;
    for s in due {
        let api: Api<Event> = Api::namespaced(client.clone(), &s.ingress.namespace);
        let body: Event = match serde_json::from_value(event(&s, instance, SystemTime::now())) {
            Ok(e) => e,
            Err(e) => {
                first_error.get_or_insert(format!("build the Event: {e}"));
                continue;
            }
        };
        let params = PostParams::default();
        match tokio::time::timeout(CALL_TIMEOUT, api.create(&params, &body)).await {
            Ok(Ok(_)) => {
                written += 1;
                log.mark(&s);
            }
            // Already written, by this replica's previous term or another leader.
            Ok(Err(kube::Error::Api(e))) if e.code == 409 => log.mark(&s),
            Ok(Err(e)) => {
                first_error.get_or_insert(format!(
                    "create an Event on {} {}: {e}",
                    s.object.kind, s.ingress
                ));
            }
            Err(_) => {
                first_error.get_or_insert(format!(
                    "create an Event on {} {}: no answer within {CALL_TIMEOUT:?}",
                    s.object.kind, s.ingress
                ));
            }
        }
    }
    match first_error {
        None => Ok(written),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(name: &str, rv: &str, reason: &str) -> Skipped {
        Skipped {
            ingress: IngressRef {
                namespace: "web".into(),
                name: name.into(),
                uid: format!("uid-{name}"),
                resource_version: rv.into(),
            },
            annotation: "leafgate.io/tenant".into(),
            reason: reason.into(),
        }
    }

    fn model(s: Vec<Skipped>) -> Model {
        Model {
            skipped: s,
            ..Model::default()
        }
    }

    #[test]
    fn each_uid_version_and_message_is_reported_once() {
        let mut log = EventLog::default();
        let m = model(vec![
            skipped("a", "1", "no tenant `x`"),
            skipped("b", "1", "no tenant `y`"),
        ]);
        let due: Vec<String> = log.due(&m).iter().map(|s| s.ingress.name.clone()).collect();
        assert_eq!(due, ["a", "b"]);
        log.mark(&Notice::from(&m.skipped[0]));
        assert_eq!(log.due(&m).len(), 1);
        log.mark(&Notice::from(&m.skipped[1]));
        assert!(log.due(&m).is_empty());
        // A new version of `a` with the same problem: reported again.
        let m = model(vec![
            skipped("a", "2", "no tenant `x`"),
            skipped("b", "1", "no tenant `y`"),
        ]);
        let due: Vec<String> = log
            .due(&m)
            .iter()
            .map(|s| s.ingress.resource_version.clone())
            .collect();
        assert_eq!(due, ["2"]);
    }

    #[test]
    fn the_event_names_the_ingress_annotation_and_reporter() {
        let s = skipped("a", "7", "`fast` is not a rate");
        let s = Notice::from(&s);
        let e = event(&s, "replica-1", SystemTime::UNIX_EPOCH);
        assert_eq!(e["involvedObject"]["kind"], "Ingress");
        assert_eq!(e["involvedObject"]["apiVersion"], "networking.k8s.io/v1");
        assert_eq!(e["involvedObject"]["uid"], "uid-a");
        assert_eq!(e["type"], "Warning");
        assert_eq!(e["reason"], "InvalidAnnotation");
        assert_eq!(
            e["message"],
            "annotation leafgate.io/tenant: `fast` is not a rate"
        );
        assert_eq!(e["source"]["component"], "leafgate");
        assert_eq!(e["reportingComponent"], REPORTING_COMPONENT);
        assert_eq!(e["firstTimestamp"], "1970-01-01T00:00:00Z");
        assert_eq!(e["count"], 1);
        // It deserialises as a core/v1 Event.
        let _: Event = serde_json::from_value(e).unwrap();
        // Same key, same name; another version, another name.
        assert_eq!(event_name(&s), event_name(&s.clone()));
        let next = skipped("a", "8", "`fast` is not a rate");
        assert_ne!(event_name(&s), event_name(&Notice::from(&next)));
    }
}
