//! The Ingress provider as `/status` shows it, and the handle the gateway pokes after a
//! reload: what each reflector, build, apply and leader write last reported.
//!
//! It holds reports and wake-ups only; the loops that fill them are `reflectors`,
//! `rebuild` and `leader`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::k8s::gateway::incremental::Changes as GatewayChanges;
use crate::k8s::gateway::model::{Cond, Model as GatewayModel};
use crate::k8s::gateway::status::refused;
use crate::k8s::ingress::model::Refusal;
use crate::k8s::ingress::{Changes, events};
use crate::snapshot::Snapshot;

/// The provider as `/status` shows it, and the handle the gateway pokes after a reload.
pub struct IngressProvider {
    pub(super) report: Mutex<Report>,
    /// Something that can change the routes happened.
    pub(super) changed: Notify,
    /// Some Ingress changed (maybe only its status): the leader checks statuses.
    pub(super) statuses: Notify,
    /// What changed since the last build, as the reflectors saw it.
    pub(super) changes: Mutex<Changes>,
    /// What the Gateway API translation reads that changed since it last ran.
    gateway_changes: Arc<GatewayNotes>,
    /// `[kubernetes.gateway]` was configured when the provider started.
    gateway_api: bool,
}

/// What the reflectors tell the Gateway API translation: that something it reads changed,
/// and which HTTPRoutes and Services (the other kinds it reads are few: it reads them
/// again at each build).
pub(super) struct GatewayNotes {
    changed: AtomicBool,
    changes: Mutex<GatewayChanges>,
}

impl GatewayNotes {
    /// Notes a change (`f` says which routes or Services, if it can) and flags the build.
    pub(super) fn note(&self, f: impl FnOnce(&mut GatewayChanges)) {
        f(&mut lock(&self.changes));
        self.changed.store(true, Ordering::Release);
    }
}

#[derive(Debug, Default)]
pub(super) struct Report {
    pub(super) connect_error: Option<String>,
    pub(super) watches: BTreeMap<&'static str, WatchReport>,
    pub(super) last_build_ms: Option<f64>,
    pub(super) applied: u64,
    pub(super) apply_error: Option<String>,
    pub(super) status_error: Option<String>,
    pub(super) events_error: Option<String>,
    pub(super) gateway: GatewayReport,
}

/// The Gateway API source's last build, apply and status writes.
#[derive(Debug, Default)]
pub(super) struct GatewayReport {
    pub(super) last_build_ms: Option<f64>,
    pub(super) applied: u64,
    /// The addresses bound for Gateway listeners.
    pub(super) listeners: Vec<String>,
    /// Those that could not be, with why.
    pub(super) unbound: Vec<String>,
    pub(super) apply_error: Option<String>,
    pub(super) status_error: Option<String>,
    pub(super) events_error: Option<String>,
    /// The model last applied (with the listeners that could not be bound).
    pub(super) model: Option<Arc<GatewayModel>>,
    /// HTTPRoutes the last build translated again (the others' translation was kept).
    pub(super) translated: usize,
}

impl Report {
    fn synced(&self) -> bool {
        !self.watches.is_empty() && self.watches.values().all(|w| w.synced)
    }
}

#[derive(Debug, Default, Clone)]
pub(super) struct WatchReport {
    /// The first full list has arrived.
    pub(super) synced: bool,
    pub(super) restarts: u64,
    pub(super) last_error: Option<(SystemTime, String)>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl IngressProvider {
    pub(super) fn new(gateway_api: bool) -> IngressProvider {
        IngressProvider {
            report: Mutex::new(Report::default()),
            changed: Notify::new(),
            statuses: Notify::new(),
            changes: Mutex::new(Changes::everything()),
            gateway_changes: Arc::new(GatewayNotes {
                changed: AtomicBool::new(true),
                changes: Mutex::new(GatewayChanges::everything()),
            }),
            gateway_api,
        }
    }

    /// Asks for a rebuild: a reload may have changed the tenants, `[kubernetes.ingress]`
    /// or `[kubernetes.gateway]`.
    pub fn kick(&self) {
        self.gateway_changed();
        self.changed.notify_one();
    }

    /// Where the reflectors note what the Gateway API translation must look at again.
    pub(super) fn gateway_notes(&self) -> Arc<GatewayNotes> {
        self.gateway_changes.clone()
    }

    /// The Gateway API translation must run again and look at every route.
    pub(super) fn gateway_changed(&self) {
        self.gateway_changes.note(|c| c.all = true);
    }

    /// What changed since the Gateway API translation last ran, taken; `None` when nothing
    /// it reads did.
    pub(super) fn take_gateway_changes(&self) -> Option<GatewayChanges> {
        let n = &self.gateway_changes;
        // The flag first: a change noted after it is taken now or flags the next build.
        n.changed
            .swap(false, Ordering::AcqRel)
            .then(|| std::mem::take(&mut *lock(&n.changes)))
    }

    /// Every reflector started (each registers before its first event) has listed.
    pub(super) fn synced(&self) -> bool {
        lock(&self.report).synced()
    }

    /// The `ingress` section of `/status`, with what `snapshot` serves.
    pub fn status(&self, snapshot: &Snapshot) -> Value {
        let r = lock(&self.report);
        let synced = r.synced();
        let model = snapshot.ingress.model.as_deref();
        let skipped: Vec<Value> = model
            .map(|m| {
                m.skipped
                    .iter()
                    .map(
                        |s| json!({"ingress": s.ingress.to_string(), "reason": events::message(s)}),
                    )
                    .collect()
            })
            .unwrap_or_default();
        let refused: Vec<Value> = model
            .map(|m| {
                m.refused
                    .iter()
                    .map(|r| {
                        let mut entry = json!({
                            "ingress": r.ingress.to_string(),
                            "host": r.host,
                            "certificate": r.certificate,
                            "reason": r.message(),
                        });
                        // Taken: who owns it; not allowed: whose `hosts` leave it out.
                        match &r.why {
                            Refusal::Taken { owner } => entry["owner"] = json!(owner),
                            Refusal::NotAllowed { tenant, .. } => {
                                entry["not_allowed_for"] = json!(tenant)
                            }
                        }
                        entry
                    })
                    .collect()
            })
            .unwrap_or_default();
        let conflicts: Vec<Value> = model
            .map(|m| {
                m.conflicts
                    .iter()
                    .map(|c| json!({"host": c.host, "path": c.path, "winner": c.winner, "losers": c.losers}))
                    .collect()
            })
            .unwrap_or_default();
        let mut problems: Vec<Value> = model
            .map(|m| {
                m.problems
                    .iter()
                    .map(|p| json!({"ingress": p.ingress, "problem": p.problem}))
                    .collect()
            })
            .unwrap_or_default();
        problems.extend(
            snapshot
                .ingress
                .problems
                .iter()
                .map(|(i, p)| json!({"ingress": i, "problem": p})),
        );
        let shadowed: Vec<Value> = snapshot
            .shadowed
            .iter()
            .map(
                |s| json!({"ingress": s.ingress, "host": s.host, "path": s.path, "route": s.route}),
            )
            .collect();
        let watches: BTreeMap<&str, Value> = r
            .watches
            .iter()
            .map(|(k, w)| {
                (
                    *k,
                    json!({
                        "synced": w.synced,
                        "restarts": w.restarts,
                        "last_error": w.last_error.as_ref().map(|(_, e)| e),
                        "last_error_at": w.last_error.as_ref().map(|(at, _)| humantime::format_rfc3339_seconds(*at).to_string()),
                    }),
                )
            })
            .collect();
        json!({
            "synced": synced,
            "served": model.map_or(0, |m| m.served.len()),
            "routes": snapshot.ingress.routes.len(),
            "skipped": skipped,
            "refused": refused,
            "conflicts": conflicts,
            "shadowed": shadowed,
            "problems": problems,
            "last_build_ms": r.last_build_ms,
            "applied": r.applied,
            "connect_error": r.connect_error,
            "apply_error": r.apply_error,
            "status_error": r.status_error,
            "events_error": r.events_error,
            "watches": watches,
        })
    }

    /// The `gateway` section of `/status`: the classes, Gateways (addresses, listeners and
    /// their attached routes), HTTPRoutes and refusals of the model last applied, and the
    /// source's last build; `None` without `[kubernetes.gateway]`.
    pub fn gateway_status(&self) -> Option<Value> {
        if !self.gateway_api {
            return None;
        }
        let r = lock(&self.report);
        let g = &r.gateway;
        let model = g.model.as_deref();
        let cond = |conds: &[Cond], type_: &str| {
            conds
                .iter()
                .find(|c| c.type_ == type_)
                .map(|c| json!({"status": c.status, "reason": c.reason, "message": c.message}))
        };
        let classes: Vec<Value> = model
            .iter()
            .flat_map(|m| &m.classes)
            .map(|c| json!({"name": c.name, "accepted": cond(&c.conditions, "Accepted")}))
            .collect();
        let gateways: Vec<Value> = model
            .iter()
            .flat_map(|m| &m.gateways)
            .map(|gw| {
                json!({
                    "namespace": gw.namespace,
                    "name": gw.name,
                    "addresses": gw.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "accepted": cond(&gw.conditions, "Accepted"),
                    "programmed": cond(&gw.conditions, "Programmed"),
                    "listeners": gw.listeners.iter().map(|l| json!({
                        "name": l.name,
                        "attached_routes": l.attached_routes,
                        "accepted": cond(&l.conditions, "Accepted"),
                        "programmed": cond(&l.conditions, "Programmed"),
                        "resolved_refs": cond(&l.conditions, "ResolvedRefs"),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let routes = model.map_or(&[][..], |m| &m.http_routes[..]);
        let accepted = routes.iter().filter(|r| r.accepted()).count();
        let refusals: Vec<Value> = model
            .map(refused)
            .unwrap_or_default()
            .iter()
            .map(|w| {
                json!({
                    "kind": w.kind,
                    "object": format!("{}/{}", w.namespace, w.name),
                    "reason": w.reason,
                    "message": w.message,
                })
            })
            .collect();
        Some(json!({
            "synced": r.synced(),
            "classes": classes,
            "gateways": gateways,
            "routes": {
                "httproutes": routes.len(),
                "accepted": accepted,
                "not_accepted": routes.len() - accepted,
                "entries": model.map_or(0, |m| m.routes.len()),
            },
            "refusals": refusals,
            "listeners": g.listeners,
            "unbound": g.unbound,
            "last_build_ms": g.last_build_ms,
            "translated": g.translated,
            "applied": g.applied,
            "apply_error": g.apply_error,
            "status_error": g.status_error,
            "events_error": g.events_error,
        }))
    }

    pub(super) fn watch_report(&self, kind: &'static str, f: impl FnOnce(&mut WatchReport)) {
        f(lock(&self.report).watches.entry(kind).or_default());
    }
}
