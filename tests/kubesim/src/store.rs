//! The object store: JSON objects keyed by resource, namespace and name, one cluster-wide
//! resourceVersion counter, a bounded history of watch events (forgotten by `compact`), and
//! the container log buffers. Owns consistency rules (uid, resourceVersion, conflicts,
//! and for custom resources the apiextensions strategy: `metadata.generation`, a status
//! written only through its subresource, no unconditional updates, one stored version);
//! it knows nothing of HTTP.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::broadcast;

use crate::patch;
use crate::resources::{Resource, stored_api_version};

/// Why the store refused; each maps to the `Status` kube-apiserver answers.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} \"{1}\" not found")]
    NotFound(String, String),
    #[error("{0} \"{1}\" already exists")]
    AlreadyExists(String, String),
    #[error(
        "Operation cannot be fulfilled on {0} \"{1}\": the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict(String, String),
    #[error("{0}")]
    Invalid(String),
    #[error("too old resource version: {0} ({1})")]
    Gone(u64, u64),
    /// A PUT without `metadata.resourceVersion` of a kind that allows no unconditional
    /// update (custom resources): group, plural, name.
    #[error(
        "{1}.{0} \"{2}\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    )]
    VersionRequired(String, String, String),
}

impl StoreError {
    /// HTTP code and `StatusReason`.
    pub fn code_reason(&self) -> (u16, &'static str) {
        match self {
            StoreError::NotFound(..) => (404, "NotFound"),
            StoreError::AlreadyExists(..) => (409, "AlreadyExists"),
            StoreError::Conflict(..) => (409, "Conflict"),
            StoreError::Invalid(..) => (400, "BadRequest"),
            StoreError::Gone(..) => (410, "Expired"),
            StoreError::VersionRequired(..) => (422, "Invalid"),
        }
    }

    /// The Status's `details`, for the errors whose Status carries them.
    pub fn details(&self) -> Option<Value> {
        match self {
            StoreError::VersionRequired(group, plural, name) => Some(json!({
                "name": name, "group": group, "kind": plural,
                "causes": [{"reason": "FieldValueInvalid",
                            "message": "Invalid value: 0x0: must be specified for an update",
                            "field": "metadata.resourceVersion"}]
            })),
            _ => None,
        }
    }
}

/// One watch event as stored in history.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub resource: &'static str,
    pub kind: &'static str,
    pub object: Value,
    /// The object before a MODIFIED, so watchers with selectors can see it enter or leave.
    pub prev: Option<Value>,
}

/// One appended log line.
#[derive(Debug, Clone)]
pub struct LogLine {
    pub at: OffsetDateTime,
    pub text: String,
}

#[derive(Default)]
struct LogBuf {
    current: Vec<LogLine>,
    previous: Option<Vec<LogLine>>,
}

type Key = (&'static str, String, String);
/// Namespace, pod, container.
pub type LogKey = (String, String, String);
/// A log line and the container it belongs to, as followers receive it.
pub type LogItem = Arc<(LogKey, LogLine)>;

struct Inner {
    objects: BTreeMap<Key, Value>,
    rv: u64,
    /// Oldest first; a deque, so forgetting the oldest event of a full history is O(1)
    /// (bulk loads of tens of thousands of objects go past the cap on every write).
    history: std::collections::VecDeque<Event>,
    /// Versions at or below this are forgotten.
    compacted: u64,
    logs: BTreeMap<(String, String, String), LogBuf>,
}

/// The shared store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
    events: broadcast::Sender<Arc<Event>>,
    log_tx: broadcast::Sender<LogItem>,
}

/// `metadata.name` and friends, with "" when absent.
pub fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The resource name kube-apiserver uses in messages (`pods`, `leases.coordination.k8s.io`).
pub fn qualified(res: &Resource) -> String {
    if res.group.is_empty() {
        res.plural.to_string()
    } else {
        format!("{}.{}", res.plural, res.group)
    }
}

/// Now, as `metadata.creationTimestamp` carries it (seconds, UTC).
pub fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("0 is a valid nanosecond")
        .format(&Rfc3339)
        .expect("RFC 3339 formats any UTC time")
}

/// Kinds whose registry strategy drops status changes made through the main resource
/// (`PrepareForUpdate` copies the old status back, `PrepareForCreate` clears it): the
/// objects a controller writes status on. Pods and Nodes do too in kube-apiserver, but the
/// tests here set their status through the test object API, which goes through the same
/// store, so they keep the simpler rule.
/// Custom resources with the status subresource do too (the apiextensions strategy), and
/// so do the workload, autoscaling and policy kinds, PersistentVolumeClaims and
/// ResourceQuotas (their registries' strategies).
fn status_from_subresource_only(res: &Resource) -> bool {
    matches!(
        res.plural,
        "ingresses" | "services" | "persistentvolumeclaims" | "resourcequotas"
    ) || (!res.group.is_empty() && res.subresources.contains(&"status"))
}

/// Built-in kinds whose strategy keeps `metadata.generation`: `PrepareForCreate` sets 1,
/// `PrepareForUpdate` adds one when the spec changed (a Deployment's also when its
/// annotations did, `pkg/registry/apps/deployment/strategy.go`); status writes never do.
fn generation_of_spec(res: &Resource) -> bool {
    !res.crd
        && matches!(
            res.plural,
            "deployments"
                | "replicasets"
                | "statefulsets"
                | "daemonsets"
                | "jobs"
                | "cronjobs"
                | "horizontalpodautoscalers"
                | "poddisruptionbudgets"
                | "networkpolicies"
        )
}

/// A status-subresource write of a custom resource whose written object `given` has no
/// status (or a null one) leaves no `status` field in `new` (the apiextensions status
/// strategy deletes it), rather than an empty one.
fn status_as_given(res: &Resource, given: &Value, new: &mut Value) {
    if res.crd
        && given.get("status").is_none_or(Value::is_null)
        && let Some(o) = new.as_object_mut()
    {
        o.remove("status");
    }
}

/// Everything but `metadata`: what the apiextensions strategy compares to bump the
/// generation.
fn non_metadata(obj: &Value) -> Option<Vec<(&String, &Value)>> {
    obj.as_object()
        .map(|o| o.iter().filter(|(k, _)| *k != "metadata").collect())
}

/// After a write to the main resource, puts the stored status back where the kind wants it.
fn keep_status(res: &Resource, old: &Value, new: &mut Value) {
    if status_from_subresource_only(res) {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
}

/// `Convert_v1_Secret_To_core_Secret`: `stringData` is written into `data` (its values
/// base64-encoded, overwriting keys `data` has) and is never stored.
fn fold_string_data(res: &Resource, obj: &mut Value) {
    if res.crd || res.plural != "secrets" {
        return;
    }
    let Some(string_data) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    use base64::Engine as _;
    for (k, v) in string_data.as_object().into_iter().flatten() {
        let text = v.as_str().unwrap_or("");
        if !obj["data"].is_object() {
            obj["data"] = json!({});
        }
        obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(text.as_bytes()));
    }
}

/// The Job strategy's `generateSelector` on create, unless `spec.manualSelector`: the pod
/// template gains the `job-name` and `controller-uid` labels (legacy and
/// `batch.kubernetes.io/` forms) where it has none of its own, and the selector matches
/// `batch.kubernetes.io/controller-uid`.
fn generate_job_selector(obj: &mut Value, name: &str, uid: &str) {
    // Defaulting gave a Job without labels its template's labels map itself, so what is
    // added to the template here shows in the Job's labels too.
    let shared = obj
        .pointer("/spec/template/metadata/labels")
        .is_some_and(Value::is_object)
        && obj.pointer("/metadata/labels") == obj.pointer("/spec/template/metadata/labels");
    let labels = &mut obj["spec"]["template"]["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    for (key, value) in [
        ("job-name", name),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("batch.kubernetes.io/controller-uid", uid),
    ] {
        if labels.get(key).is_none() {
            labels[key] = json!(value);
        }
    }
    let selector = &mut obj["spec"]["selector"]["matchLabels"];
    if !selector.is_object() {
        *selector = json!({});
    }
    if selector.get("batch.kubernetes.io/controller-uid").is_none() {
        selector["batch.kubernetes.io/controller-uid"] = json!(uid);
    }
    if shared {
        obj["metadata"]["labels"] = obj["spec"]["template"]["metadata"]["labels"].clone();
    }
}

/// The storage key: cluster-scoped objects ignore the namespace.
fn key(res: &Resource, ns: &str, name: &str) -> Key {
    (res.plural, segment(res, ns), name.to_string())
}

/// A namespace as kube-apiserver's storage key holds it (`/<resource>/<ns>/<name>`): with
/// its `/`, which is what orders lists across namespaces (`team-a-dev/x` before
/// `team-a/y`, since `-` sorts before `/`); empty for every namespace, and for
/// cluster-scoped objects.
fn segment(res: &Resource, ns: &str) -> String {
    if res.namespaced && !ns.is_empty() {
        format!("{ns}/")
    } else {
        String::new()
    }
}

fn uid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (t >> 32) as u32,
        (t >> 16) as u16,
        n & 0xfff,
        (t >> 4) & 0xfff,
        n
    )
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    pub fn new() -> Store {
        let store = Store {
            inner: Arc::new(Mutex::new(Inner {
                objects: BTreeMap::new(),
                rv: 0,
                history: std::collections::VecDeque::new(),
                compacted: 0,
                logs: BTreeMap::new(),
            })),
            events: broadcast::channel(4096).0,
            log_tx: broadcast::channel(4096).0,
        };
        let ns = crate::resources::find("", "v1", "namespaces").expect("namespaces is served");
        for name in ["default", "kube-system"] {
            store
                .create(ns, "", json!({"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}))
                .expect("a fresh store has no namespaces");
        }
        store
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current cluster-wide resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    /// The oldest version a watch may resume from.
    pub fn compacted(&self) -> u64 {
        self.lock().compacted
    }

    /// Forgets history: any watch from a version older than now gets 410 Gone.
    pub fn compact(&self) {
        let mut g = self.lock();
        g.compacted = g.rv;
        g.history.clear();
    }

    /// Subscribes to live events.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.events.subscribe()
    }

    /// Events of `resource` after `rv`, and a receiver for what follows, taken atomically.
    /// Fails with Gone when `rv` is older than the compaction point.
    pub fn watch_from(
        &self,
        resource: &'static str,
        rv: u64,
    ) -> Result<(Vec<Event>, broadcast::Receiver<Arc<Event>>), StoreError> {
        let g = self.lock();
        if rv < g.compacted {
            return Err(StoreError::Gone(rv, g.compacted));
        }
        let rx = self.events.subscribe();
        let past = g
            .history
            .iter()
            .filter(|e| e.rv > rv && e.resource == resource)
            .cloned()
            .collect();
        Ok((past, rx))
    }

    fn record(
        &self,
        g: &mut Inner,
        resource: &'static str,
        kind: &'static str,
        object: Value,
        prev: Option<Value>,
    ) {
        let ev = Event {
            rv: g.rv,
            resource,
            kind,
            object,
            prev,
        };
        g.history.push_back(ev.clone());
        if g.history.len() > 10_000 {
            let drop = g.history.len() - 10_000;
            g.compacted = g.history[drop - 1].rv;
            g.history.drain(..drop);
        }
        let _ = self.events.send(Arc::new(ev));
    }

    /// Lists objects of `res` (all namespaces when `ns` is empty), in storage-key order.
    pub fn list(&self, res: &Resource, ns: &str) -> (Vec<Value>, u64) {
        Self::list_locked(&self.lock(), res, ns)
    }

    /// One page of a list of `res` (all namespaces when `ns` is empty), in storage-key
    /// order (see [`segment`]): the objects after `after` (the `(namespace, name)` a
    /// previous page ended on) that `keep` accepts, at most `limit` of them, and whether
    /// more follow. It reads only from where the page starts, as kube-apiserver serves a
    /// paged list from its sorted cache: listing N objects in pages costs N, not N times
    /// the number of pages.
    pub fn page(
        &self,
        res: &Resource,
        ns: &str,
        after: Option<(&str, &str)>,
        limit: Option<usize>,
        keep: impl Fn(&Value) -> bool,
    ) -> (Vec<Value>, bool, u64) {
        let g = self.lock();
        let mut matching = Self::range_locked(&g, res, ns, after).filter(|v| keep(v));
        let limit = limit.unwrap_or(usize::MAX);
        let items: Vec<Value> = matching.by_ref().take(limit).cloned().collect();
        let more = matching.next().is_some();
        (items, more, g.rv)
    }

    /// The current objects and a receiver for every later event, taken atomically, so a
    /// watch from "now" neither misses nor repeats a change.
    pub fn snapshot(
        &self,
        res: &Resource,
        ns: &str,
    ) -> (Vec<Value>, u64, broadcast::Receiver<Arc<Event>>) {
        let g = self.lock();
        let rx = self.events.subscribe();
        let (items, rv) = Self::list_locked(&g, res, ns);
        (items, rv, rx)
    }

    fn list_locked(g: &Inner, res: &Resource, ns: &str) -> (Vec<Value>, u64) {
        let items = Self::range_locked(g, res, ns, None).cloned().collect();
        (items, g.rv)
    }

    /// The objects of `res` in `ns` (all when empty) in store order, from after `after`
    /// when given: a walk of the sorted store from where they start, never of all of it.
    fn range_locked<'g>(
        g: &'g Inner,
        res: &Resource,
        ns: &str,
        after: Option<(&str, &str)>,
    ) -> impl Iterator<Item = &'g Value> + use<'g> {
        use std::ops::Bound;
        let ns = segment(res, ns);
        let plural = res.plural;
        let start = match after {
            Some((n, name)) => Bound::Excluded((plural, segment(res, n), name.to_string())),
            None => Bound::Included((plural, ns.clone(), String::new())),
        };
        g.objects
            .range((start, Bound::Unbounded))
            .take_while(move |((r, n, _), _)| *r == plural && (ns.is_empty() || *n == ns))
            .map(|(_, v)| v)
    }

    pub fn get(&self, res: &Resource, ns: &str, name: &str) -> Result<Value, StoreError> {
        self.lock()
            .objects
            .get(&key(res, ns, name))
            .cloned()
            .ok_or_else(|| StoreError::NotFound(qualified(res), name.to_string()))
    }

    /// Creates `obj` (name or generateName), filling uid, creationTimestamp, resourceVersion.
    pub fn create(&self, res: &Resource, ns: &str, mut obj: Value) -> Result<Value, StoreError> {
        if !obj.is_object() {
            return Err(StoreError::Invalid(
                "the object must be a JSON object".into(),
            ));
        }
        let mut g = self.lock();
        if res.namespaced
            && !g
                .objects
                .contains_key(&("namespaces", String::new(), ns.to_string()))
        {
            return Err(StoreError::NotFound("namespaces".into(), ns.to_string()));
        }
        let mut name = meta(&obj, "name").to_string();
        if name.is_empty() {
            let prefix = meta(&obj, "generateName").to_string();
            if prefix.is_empty() {
                return Err(StoreError::Invalid(format!(
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    res.kind
                )));
            }
            let suffix = uid();
            name = format!("{prefix}{}", &suffix[suffix.len() - 5..]);
        }
        let key = key(res, ns, &name);
        if g.objects.contains_key(&key) {
            return Err(StoreError::AlreadyExists(qualified(res), name));
        }
        g.rv += 1;
        let rv = g.rv;
        obj["apiVersion"] = json!(stored_api_version(res));
        obj["kind"] = json!(res.kind);
        let m = obj
            .as_object_mut()
            .expect("checked above")
            .entry("metadata")
            .or_insert_with(|| json!({}));
        m["name"] = json!(name);
        if res.namespaced {
            m["namespace"] = json!(ns);
        } else if let Some(m) = m.as_object_mut() {
            m.remove("namespace");
        }
        let new_uid = uid();
        m["uid"] = json!(new_uid);
        if res.crd || generation_of_spec(res) {
            // The apiextensions strategy's PrepareForCreate, and the built-ins'.
            m["generation"] = json!(1);
        }
        if status_from_subresource_only(res) {
            // PrepareForCreate: the status starts empty; only the controller fills it. A
            // custom resource has none at all until then.
            if res.crd {
                obj.as_object_mut().expect("checked above").remove("status");
            } else {
                obj["status"] = json!({});
            }
        }
        if res.crd {
            crate::crd::structure(res, &mut obj);
        }
        fold_string_data(res, &mut obj);
        crate::defaults::apply(res, &mut obj);
        if res.plural == "jobs"
            && !res.crd
            && obj.pointer("/spec/manualSelector").and_then(Value::as_bool) != Some(true)
        {
            generate_job_selector(&mut obj, &name, &new_uid);
        }
        let m = &mut obj["metadata"];
        m["resourceVersion"] = json!(rv.to_string());
        m["creationTimestamp"] = json!(now_rfc3339());
        g.objects.insert(key, obj.clone());
        self.record(&mut g, res.plural, "ADDED", obj.clone(), None);
        Ok(obj)
    }

    /// Replaces an object (or only its status). A non-empty stale resourceVersion conflicts;
    /// an empty one is refused for custom resources, which allow no unconditional update.
    /// For kinds with `status_from_subresource_only`, a write to the main resource keeps
    /// the stored status whatever it carries.
    pub fn update(
        &self,
        res: &Resource,
        ns: &str,
        name: &str,
        obj: Value,
        status_only: bool,
    ) -> Result<Value, StoreError> {
        self.modify(res, ns, name, status_only, |old| {
            let given = meta(&obj, "resourceVersion");
            if given.is_empty() && res.crd {
                return Err(StoreError::VersionRequired(
                    res.group.to_string(),
                    res.plural.to_string(),
                    name.to_string(),
                ));
            }
            if !given.is_empty() && given != meta(old, "resourceVersion") {
                return Err(StoreError::Conflict(qualified(res), name.to_string()));
            }
            if status_only {
                let mut new = old.clone();
                new["status"] = obj.get("status").cloned().unwrap_or(json!({}));
                status_as_given(res, &obj, &mut new);
                Ok(new)
            } else if status_from_subresource_only(res) {
                let mut new = obj.clone();
                keep_status(res, old, &mut new);
                Ok(new)
            } else if res.crd {
                // No status subresource: the object is replaced, status and all.
                Ok(obj.clone())
            } else {
                let mut new = obj.clone();
                if let Some(s) = old.get("status").filter(|_| obj.get("status").is_none()) {
                    new["status"] = s.clone();
                }
                Ok(new)
            }
        })
    }

    /// Applies a merge (`strategic` = false) or strategic merge patch.
    pub fn patch(
        &self,
        res: &Resource,
        ns: &str,
        name: &str,
        body: &Value,
        strategic: bool,
        status_only: bool,
    ) -> Result<Value, StoreError> {
        self.modify(res, ns, name, status_only, |old| {
            let given = body
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str);
            if given.is_some_and(|g| g != meta(old, "resourceVersion")) {
                return Err(StoreError::Conflict(qualified(res), name.to_string()));
            }
            let mut new = old.clone();
            if status_only {
                let mut status = old.get("status").cloned().unwrap_or(json!({}));
                if let Some(p) = body.get("status") {
                    if strategic {
                        patch::strategic(&mut status, p)
                    } else {
                        patch::merge(&mut status, p)
                    }
                }
                let none = status.is_null()
                    || (old.get("status").is_none() && body.get("status").is_none());
                new["status"] = status;
                if none {
                    // A custom resource's status strategy keeps no status as none.
                    status_as_given(res, &json!({}), &mut new);
                }
            } else {
                if strategic {
                    patch::strategic(&mut new, body);
                } else {
                    patch::merge(&mut new, body);
                }
                keep_status(res, old, &mut new);
            }
            Ok(new)
        })
    }

    /// Applies an RFC 6902 JSON patch (to the status only when `status_only`).
    pub fn json_patch(
        &self,
        res: &Resource,
        ns: &str,
        name: &str,
        ops: &Value,
        status_only: bool,
    ) -> Result<Value, StoreError> {
        self.modify(res, ns, name, status_only, |old| {
            let mut new = old.clone();
            patch::json_patch(&mut new, ops).map_err(|e| {
                StoreError::Invalid(format!(
                    "the server rejected our request due to an error in our request: {e}"
                ))
            })?;
            if status_only {
                let mut only = old.clone();
                only["status"] = new.get("status").cloned().unwrap_or(json!({}));
                status_as_given(res, &new, &mut only);
                return Ok(only);
            }
            keep_status(res, old, &mut new);
            Ok(new)
        })
    }

    /// Writes what `f` makes of the stored object. `status_only`: a status-subresource
    /// write, which leaves a custom resource's generation alone.
    fn modify(
        &self,
        res: &Resource,
        ns: &str,
        name: &str,
        status_only: bool,
        f: impl FnOnce(&Value) -> Result<Value, StoreError>,
    ) -> Result<Value, StoreError> {
        let mut g = self.lock();
        let key = key(res, ns, name);
        let old = g
            .objects
            .get(&key)
            .ok_or_else(|| StoreError::NotFound(qualified(res), name.to_string()))?;
        let mut new = f(old)?;
        if !new.is_object() {
            return Err(StoreError::Invalid(
                "the object must be a JSON object".into(),
            ));
        }
        // Identity fields are the server's.
        for field in ["name", "namespace", "uid", "creationTimestamp"] {
            if let Some(v) = old.pointer(&format!("/metadata/{field}")) {
                new["metadata"][field] = v.clone();
            }
        }
        new["apiVersion"] = json!(stored_api_version(res));
        new["kind"] = json!(res.kind);
        fold_string_data(res, &mut new);
        crate::defaults::apply(res, &mut new);
        if res.crd {
            crate::crd::structure(res, &mut new);
        }
        if res.crd || generation_of_spec(res) {
            // BeforeUpdate keeps the stored generation; PrepareForUpdate adds one when what
            // the strategy watches changed (a status write never does: its strategy copies
            // the old object). The apiextensions strategy watches anything but metadata.
            let changed = if res.crd {
                non_metadata(&new) != non_metadata(old)
            } else {
                let annotations = res.plural == "deployments"
                    && old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations");
                new.get("spec") != old.get("spec") || annotations
            };
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            new["metadata"]["generation"] = json!(generation + i64::from(!status_only && changed));
        }
        // A write that changes nothing is not stored: kube-apiserver's GuaranteedUpdate
        // compares the bytes and returns the current object, with no new resourceVersion
        // and no watch event (status writers that patch the same value rely on it).
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if new == *old {
            return Ok(new);
        }
        g.rv += 1;
        new["metadata"]["resourceVersion"] = json!(g.rv.to_string());
        let prev = g.objects.insert(key, new.clone());
        self.record(&mut g, res.plural, "MODIFIED", new.clone(), prev);
        Ok(new)
    }

    pub fn delete(&self, res: &Resource, ns: &str, name: &str) -> Result<Value, StoreError> {
        let mut g = self.lock();
        let key = key(res, ns, name);
        let mut old = g
            .objects
            .remove(&key)
            .ok_or_else(|| StoreError::NotFound(qualified(res), name.to_string()))?;
        g.rv += 1;
        old["metadata"]["resourceVersion"] = json!(g.rv.to_string());
        self.record(&mut g, res.plural, "DELETED", old.clone(), None);
        Ok(old)
    }

    /// Appends one log line to a container's current log.
    pub fn append_log(&self, ns: &str, pod: &str, container: &str, text: &str) {
        let key = (ns.to_string(), pod.to_string(), container.to_string());
        let line = LogLine {
            at: OffsetDateTime::now_utc(),
            text: text.to_string(),
        };
        let mut g = self.lock();
        g.logs
            .entry(key.clone())
            .or_default()
            .current
            .push(line.clone());
        let _ = self.log_tx.send(Arc::new((key, line)));
    }

    /// Ends the container's current log: it becomes the `previous` one (a restart).
    pub fn restart_container(&self, ns: &str, pod: &str, container: &str) {
        let key = (ns.to_string(), pod.to_string(), container.to_string());
        let mut g = self.lock();
        let buf = g.logs.entry(key).or_default();
        buf.previous = Some(std::mem::take(&mut buf.current));
    }

    /// The container's log lines (previous or current) and, for follows, a receiver for what
    /// is appended next, taken atomically. None when there is no previous log.
    pub fn logs(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Option<(Vec<LogLine>, broadcast::Receiver<LogItem>)> {
        let key = (ns.to_string(), pod.to_string(), container.to_string());
        let g = self.lock();
        let rx = self.log_tx.subscribe();
        let buf = g.logs.get(&key);
        let lines = if previous {
            buf?.previous.clone()?
        } else {
            buf.map(|b| b.current.clone()).unwrap_or_default()
        };
        Some((lines, rx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    #[test]
    fn secret_string_data_is_folded_into_data() {
        let s = Store::new();
        let secrets = find("", "v1", "secrets").unwrap();
        let created = s
            .create(
                secrets,
                "default",
                json!({"metadata": {"name": "db"}, "data": {"user": "YWRtaW4=", "pw": "b2xk"},
                    "stringData": {"pw": "s3cret"}}),
            )
            .unwrap();
        assert_eq!(created.get("stringData"), None);
        assert_eq!(
            created["data"],
            json!({"user": "YWRtaW4=", "pw": "czNjcmV0"})
        );
        let patched = s
            .patch(
                secrets,
                "default",
                "db",
                &json!({"stringData": {"token": "t"}}),
                false,
                false,
            )
            .unwrap();
        assert_eq!(patched.get("stringData"), None);
        assert_eq!(patched["data"]["token"], "dA==");
    }

    /// kube-apiserver lists across namespaces in the order of its storage keys
    /// (`/configmaps/<ns>/<name>`), so `team-a-dev` comes before `team-a`, whose key goes on
    /// with a `/`; and a page that ends in one namespace goes on in the next in that order.
    #[test]
    fn lists_across_namespaces_come_in_storage_key_order() {
        let s = Store::new();
        let namespaces = find("", "v1", "namespaces").unwrap();
        let cms = find("", "v1", "configmaps").unwrap();
        for ns in ["team-a", "team-a-dev", "team-b"] {
            s.create(namespaces, "", json!({"metadata": {"name": ns}}))
                .unwrap();
            for name in ["y", "x"] {
                s.create(cms, ns, json!({"metadata": {"name": name}}))
                    .unwrap();
            }
        }
        let keys = |items: &[Value]| -> Vec<String> {
            items
                .iter()
                .map(|o| format!("{}/{}", meta(o, "namespace"), meta(o, "name")))
                .collect()
        };
        let all = [
            "team-a-dev/x",
            "team-a-dev/y",
            "team-a/x",
            "team-a/y",
            "team-b/x",
            "team-b/y",
        ];
        assert_eq!(keys(&s.list(cms, "").0), all);
        assert_eq!(keys(&s.list(cms, "team-a").0), ["team-a/x", "team-a/y"]);
        let (page, more, _) = s.page(cms, "", Some(("team-a-dev", "y")), Some(2), |_| true);
        assert_eq!(keys(&page), ["team-a/x", "team-a/y"]);
        assert!(more);
        let listed = s.list(namespaces, "").0;
        assert!(
            listed.iter().all(|n| n["status"]["phase"] == "Active"),
            "{listed:?}"
        );
    }

    #[test]
    fn conflict_on_stale_version() {
        let s = Store::new();
        let pods = find("", "v1", "pods").unwrap();
        let p = s
            .create(pods, "default", json!({"metadata": {"name": "a"}}))
            .unwrap();
        let stale = p.clone();
        s.patch(
            pods,
            "default",
            "a",
            &json!({"metadata": {"labels": {"x": "1"}}}),
            false,
            false,
        )
        .unwrap();
        let err = s.update(pods, "default", "a", stale, false).unwrap_err();
        assert_eq!(err.code_reason(), (409, "Conflict"));
        assert!(err.to_string().contains("the object has been modified"));
        let err = s
            .create(pods, "default", json!({"metadata": {"name": "a"}}))
            .unwrap_err();
        assert_eq!(err.to_string(), "pods \"a\" already exists");
    }

    #[test]
    fn watch_resume_and_gone() {
        let s = Store::new();
        let pods = find("", "v1", "pods").unwrap();
        let p = s
            .create(pods, "default", json!({"metadata": {"name": "a"}}))
            .unwrap();
        let rv: u64 = meta(&p, "resourceVersion").parse().unwrap();
        s.create(pods, "default", json!({"metadata": {"name": "b"}}))
            .unwrap();
        s.delete(pods, "default", "a").unwrap();
        let (past, _) = s.watch_from("pods", rv).unwrap();
        let kinds: Vec<_> = past
            .iter()
            .map(|e| (e.kind, meta(&e.object, "name").to_string()))
            .collect();
        assert_eq!(
            kinds,
            vec![("ADDED", "b".to_string()), ("DELETED", "a".to_string())]
        );
        s.compact();
        assert!(matches!(
            s.watch_from("pods", rv),
            Err(StoreError::Gone(..))
        ));
        assert!(
            s.watch_from("pods", s.resource_version())
                .unwrap()
                .0
                .is_empty()
        );
    }

    #[test]
    fn custom_resources_follow_the_apiextensions_strategy() {
        let s = Store::new();
        let gw = find("gateway.networking.k8s.io", "v1", "gateways").unwrap();
        let created = s
            .create(
                gw,
                "default",
                json!({"metadata": {"name": "g"}, "spec": {"gatewayClassName": "c", "listeners": []},
                       "status": {"addresses": [{"value": "1.2.3.4"}]}}),
            )
            .unwrap();
        assert_eq!(created["metadata"]["generation"], 1);
        // Create drops the status given; the schema's default status is what reads back.
        assert_eq!(created["status"]["conditions"][0]["reason"], "Pending");
        assert!(created["status"].get("addresses").is_none());
        let generation = |v: &Value| v["metadata"]["generation"].as_i64().unwrap();

        // Status writes: no generation bump, spec untouched, metadata untouched.
        let st = s
            .patch(
                gw,
                "default",
                "g",
                &json!({"spec": {"gatewayClassName": "x"}, "metadata": {"labels": {"a": "b"}},
                        "status": {"conditions": [{"type": "Programmed", "status": "True"}]}}),
                false,
                true,
            )
            .unwrap();
        assert_eq!(
            (generation(&st), st["spec"]["gatewayClassName"].as_str()),
            (1, Some("c"))
        );
        assert!(st["metadata"].get("labels").is_none());
        assert_eq!(st["status"]["conditions"][0]["status"], "True");
        // A PUT of the status with none resets it to the schema's default.
        let mut put = st.clone();
        put.as_object_mut().unwrap().remove("status");
        let reset = s.update(gw, "default", "g", put, true).unwrap();
        assert_eq!(reset["status"]["conditions"][0]["reason"], "Pending");

        // Main-resource writes: status ignored; generation bumps on spec only.
        let meta_only = s
            .patch(
                gw,
                "default",
                "g",
                &json!({"metadata": {"labels": {"a": "b"}}}),
                false,
                false,
            )
            .unwrap();
        assert_eq!(generation(&meta_only), 1);
        let spec = s
            .patch(
                gw,
                "default",
                "g",
                &json!({"spec": {"gatewayClassName": "d"}, "status": {"addresses": []}}),
                false,
                false,
            )
            .unwrap();
        assert_eq!(generation(&spec), 2);
        assert_eq!(spec["status"], reset["status"]);
        // The generation is the server's.
        let mut put = spec.clone();
        put["metadata"]["generation"] = json!(9);
        assert_eq!(
            generation(&s.update(gw, "default", "g", put, false).unwrap()),
            2
        );

        // No unconditional update.
        let mut put = spec.clone();
        put["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        let err = s.update(gw, "default", "g", put, false).unwrap_err();
        assert_eq!(err.code_reason(), (422, "Invalid"));
        assert_eq!(
            err.to_string(),
            "gateways.gateway.networking.k8s.io \"g\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        );

        // ReferenceGrant: stored at v1beta1, no status subresource, so any change but
        // metadata bumps the generation.
        let rg = find("gateway.networking.k8s.io", "v1", "referencegrants").unwrap();
        let g = s
            .create(
                rg,
                "default",
                json!({"metadata": {"name": "r"}, "spec": {"from": [], "to": []}}),
            )
            .unwrap();
        assert_eq!(g["apiVersion"], "gateway.networking.k8s.io/v1beta1");
        let g = s
            .patch(
                rg,
                "default",
                "r",
                &json!({"spec": {"to": [{"group": "", "kind": "Service"}]}}),
                false,
                false,
            )
            .unwrap();
        assert_eq!(generation(&g), 2);
    }

    /// Writes that try what their endpoint does not allow get kube-apiserver's answer: a
    /// status patch of the spec or of `metadata.generation` changes neither; a merge patch
    /// of `status` on the main resource changes nothing (and stores nothing) where the
    /// status has its subresource, and is pruned where the schema has no status; fields the
    /// schema does not name are pruned, not stored.
    #[test]
    fn hostile_writes_of_custom_resources() {
        let s = Store::new();
        let gw = find("gateway.networking.k8s.io", "v1", "gateways").unwrap();
        let generation = |v: &Value| v["metadata"]["generation"].as_i64().unwrap();
        let patch = |res, name: &str, body: Value, status_only| {
            s.patch(res, "default", name, &body, false, status_only)
                .unwrap()
        };
        let created = s
            .create(
                gw,
                "default",
                json!({"metadata": {"name": "g"}, "spec": {"gatewayClassName": "c", "listeners": [],
                       "foo": {"bar": 1}}, "extra": true}),
            )
            .unwrap();
        assert_eq!(created["spec"].get("foo"), None, "{created}");
        assert_eq!(created.get("extra"), None, "{created}");
        let rv = s.resource_version();

        // The status subresource takes neither the spec nor the generation.
        let st = patch(
            gw,
            "g",
            json!({"metadata": {"generation": 7}, "spec": {"gatewayClassName": "x"},
                   "status": {"addresses": [{"value": "10.0.0.10"}]}}),
            true,
        );
        assert_eq!(generation(&st), 1);
        assert_eq!(st["spec"]["gatewayClassName"], "c");
        assert_eq!(st["status"]["addresses"][0]["value"], "10.0.0.10");
        // Nor does a PUT of the status.
        let mut put = st.clone();
        put["metadata"]["generation"] = json!(9);
        put["spec"]["gatewayClassName"] = json!("y");
        let put = s.update(gw, "default", "g", put, true).unwrap();
        assert_eq!(
            (generation(&put), put["spec"]["gatewayClassName"].as_str()),
            (1, Some("c"))
        );

        // `status` on the main resource: ignored, nothing written.
        let rv = {
            assert!(s.resource_version() > rv);
            s.resource_version()
        };
        let main = patch(gw, "g", json!({"status": {"addresses": []}}), false);
        assert_eq!(main["status"], st["status"]);
        assert_eq!(generation(&main), 1);
        assert_eq!(s.resource_version(), rv, "a write that changes nothing");
        // The generation is the server's on the main resource too.
        let main = patch(gw, "g", json!({"metadata": {"generation": 5}}), false);
        assert_eq!(generation(&main), 1);
        assert_eq!(s.resource_version(), rv);

        // ReferenceGrant has no status in its schema: pruned, whatever writes it.
        let rg = find("gateway.networking.k8s.io", "v1beta1", "referencegrants").unwrap();
        let grant = s
            .create(
                rg,
                "default",
                json!({"metadata": {"name": "r"}, "spec": {"from": [], "to": []},
                       "status": {"ok": true}}),
            )
            .unwrap();
        assert_eq!(grant.get("status"), None, "{grant}");
        let rv = s.resource_version();
        let g = patch(rg, "r", json!({"status": {"ok": true}}), false);
        assert_eq!((g.get("status"), generation(&g)), (None, 1));
        let g = patch(
            rg,
            "r",
            json!({"spec": {"to": [{"group": "", "kind": "Service", "port": 80}]}}),
            false,
        );
        assert_eq!(g["spec"]["to"], json!([{"group": "", "kind": "Service"}]));
        assert_eq!(generation(&g), 2);
        assert_eq!(
            s.resource_version(),
            rv + 1,
            "only the spec change was written"
        );
        let mut put = g.clone();
        put["status"] = json!({"ok": true});
        assert_eq!(
            s.update(rg, "default", "r", put, false)
                .unwrap()
                .get("status"),
            None
        );
        assert_eq!(s.resource_version(), rv + 1);
    }

    #[test]
    fn status_update_touches_only_status() {
        let s = Store::new();
        let pods = find("", "v1", "pods").unwrap();
        s.create(
            pods,
            "default",
            json!({"metadata": {"name": "a"}, "spec": {"nodeName": "n"}}),
        )
        .unwrap();
        let new = s
            .update(
                pods,
                "default",
                "a",
                json!({"spec": {"nodeName": "other"}, "status": {"phase": "Running"}}),
                true,
            )
            .unwrap();
        assert_eq!(new["spec"]["nodeName"], "n");
        assert_eq!(new["status"]["phase"], "Running");
    }
}
