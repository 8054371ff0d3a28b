//! The read-only kinds leafgate serves without interpreting them (deployments,
//! replicasets, statefulsets, daemonsets, services, configmaps, jobs, cronjobs, secrets,
//! ...), each a [`Declared`]: its group, version, resource and kind (the config's
//! catalogue, `config::kinds`), its short names and categories (discovery), the fields
//! kube-apiserver selects it by and the words of its refusal, and which of its printed
//! cells are ages.
//!
//! Only to a tenant whose `resources` name the kind: any other gets kube-apiserver's RBAC
//! 403 for whatever it asks (any verb, any namespace, a Table or a watch alike), before
//! anything of the request is read.
//!
//! Get, list and watch (anything else: the front's 405), from the leaves' feeds of the
//! kind, through the one machinery (`list::collection`, `watch`): the tenant's namespaces
//! only (another namespace: the RBAC 403), merged across its leaves in storage-key order,
//! each object with the `leafgate.io/leaf` annotation. Tables are the leaves' own: each
//! leaf's reflector keeps the row its kube-apiserver printed for the object, so the
//! columns and cells are exactly kube-apiserver's for that leaf's version; the ages in
//! them are printed again at each read (they were the leaf's at the last change); LEAF
//! follows. Leaves whose columns differ (another version) have their cells laid out by
//! column name under the first leaf's (by name) columns.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};

use super::caller::Caller;
use super::fields::Fields;
use super::list::{self, Listing};
use super::listed::Listed;
use super::object_table::{self, leaf_column};
use super::query::query_value;
use super::resource::{self, Names, Resource, Writing};
use super::select::LabelSelector;
use super::table::{self, Wanted};
use crate::k8s::feed::{Feed, Printed};
use crate::k8s::leaf::kinds::{self as leaf_kinds, Gvr};
use crate::k8s::status::Status;
use crate::k8s::{Leaf, names};
use crate::listener::client::Client;
use crate::listener::reply;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// A read-only kind, as the front serves it.
pub struct Declared {
    pub gvr: Gvr,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// The fields it is selected by beside `metadata.name` and `metadata.namespace`: the
    /// label, where the object holds it, and its value when unset (the strategies read
    /// the defaulted object).
    fields: &'static [(&'static str, &'static str, &'static str)],
    /// kube-apiserver's 400 for a field it does not select by.
    refusal: fn(&str) -> String,
    /// Cells that are ages: the column, the time it is the age of, the cell when unset.
    ages: &'static [(&'static str, &'static str, &'static str)],
    /// The `Warning` header kube-apiserver adds to every answer about the kind (a
    /// deprecation).
    warning: Option<&'static str>,
}

/// The words of `runtime.DefaultMetaV1FieldSelectorConversion`, for the kinds that
/// register no field label conversion of their own.
fn default_refusal(key: &str) -> String {
    format!("{key:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")
}

/// The core kinds' conversion (`field label not supported`).
fn core_refusal(key: &str) -> String {
    format!("field label not supported: {key}")
}

/// batch/v1's conversion for `Job`.
fn job_refusal(key: &str) -> String {
    format!("field label {key:?} not supported for Job")
}

const AGE: (&str, &str, &str) = ("Age", "/metadata/creationTimestamp", "<unknown>");
const ALL: &[&str] = &["all"];

const fn declared(
    gvr: Gvr,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
) -> Declared {
    Declared {
        gvr,
        short_names,
        categories,
        fields: &[],
        refusal: default_refusal,
        ages: &[AGE],
        warning: None,
    }
}

/// Every kind served this way.
pub const DECLARED: &[Declared] = &[
    declared(leaf_kinds::DEPLOYMENTS, &["deploy"], ALL),
    declared(leaf_kinds::REPLICASETS, &["rs"], ALL),
    declared(leaf_kinds::STATEFULSETS, &["sts"], ALL),
    declared(leaf_kinds::DAEMONSETS, &["ds"], ALL),
    Declared {
        // `AddFieldLabelConversionsForService` (1.31+).
        fields: &[
            ("spec.clusterIP", "/spec/clusterIP", ""),
            ("spec.type", "/spec/type", "ClusterIP"),
        ],
        refusal: core_refusal,
        ..declared(leaf_kinds::SERVICES, &["svc"], ALL)
    },
    declared(leaf_kinds::CONTROLLERREVISIONS, &[], &[]),
    declared(leaf_kinds::CONFIGMAPS, &["cm"], &[]),
    Declared {
        warning: Some(
            "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"",
        ),
        ..declared(leaf_kinds::ENDPOINTS, &["ep"], &[])
    },
    declared(leaf_kinds::PERSISTENTVOLUMECLAIMS, &["pvc"], &[]),
    declared(leaf_kinds::SERVICEACCOUNTS, &["sa"], &[]),
    declared(leaf_kinds::LIMITRANGES, &["limits"], &[]),
    declared(leaf_kinds::RESOURCEQUOTAS, &["quota"], &[]),
    declared(leaf_kinds::ENDPOINTSLICES, &[], &[]),
    declared(leaf_kinds::INGRESSES, &["ing"], &[]),
    declared(leaf_kinds::NETWORKPOLICIES, &["netpol"], &[]),
    declared(leaf_kinds::HORIZONTALPODAUTOSCALERS, &["hpa"], ALL),
    declared(leaf_kinds::PODDISRUPTIONBUDGETS, &["pdb"], &[]),
    Declared {
        // core/v1's conversion for `Secret`; `type` defaults to `Opaque`.
        fields: &[("type", "/type", "Opaque")],
        refusal: core_refusal,
        ..declared(leaf_kinds::SECRETS, &[], &[])
    },
    Declared {
        // `JobToSelectableFields`: the count as a decimal.
        fields: &[("status.successful", "/status/succeeded", "0")],
        refusal: job_refusal,
        ..declared(leaf_kinds::JOBS, &[], ALL)
    },
    Declared {
        ages: &[AGE, ("Last Schedule", "/status/lastScheduleTime", "<none>")],
        ..declared(leaf_kinds::CRONJOBS, &["cj"], ALL)
    },
];

/// The kind `resource` of `group`, if served this way.
pub fn find(group: &str, resource: &str) -> Option<&'static Declared> {
    DECLARED
        .iter()
        .find(|d| d.gvr.group == group && d.gvr.resource == resource)
}

impl Declared {
    fn names(&self) -> Names {
        Names {
            group: self.gvr.group,
            resource: self.gvr.resource,
            kind: self.gvr.kind,
            api_version: self.gvr.api_version,
        }
    }

    /// `res` with the kind's `Warning`, if it has one.
    fn warn(&self, mut res: Response<Body>) -> Response<Body> {
        if let Some(warning) = self.warning {
            res.headers_mut()
                .append(header::WARNING, HeaderValue::from_static(warning));
        }
        res
    }

    fn selectable(&self) -> Vec<&'static str> {
        let mut out = vec!["metadata.name", "metadata.namespace"];
        out.extend(self.fields.iter().map(|(label, _, _)| *label));
        out
    }

    /// The object's value for field selector label `key`.
    fn field(&self, object: &Value, key: &str) -> String {
        let (pointer, unset) = match key {
            "metadata.name" => ("/metadata/name", ""),
            "metadata.namespace" => ("/metadata/namespace", ""),
            other => match self.fields.iter().find(|(label, _, _)| *label == other) {
                Some((_, pointer, unset)) => (*pointer, *unset),
                None => return String::new(),
            },
        };
        match object.pointer(pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::Bool(b)) => b.to_string(),
            _ => unset.to_string(),
        }
    }
}

/// One leaf's column definitions of the kind.
type LeafColumns = (Arc<str>, Arc<Vec<Value>>);

/// What a list or watch of a kind selects, and the Table asked for.
struct Filter {
    declared: &'static Declared,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: Fields,
    wanted: Option<Wanted>,
    /// The Table's columns (the first leaf's, by name, that printed the kind), and each
    /// reachable leaf's own.
    columns: Arc<Vec<Value>>,
    leaf_columns: Vec<LeafColumns>,
}

impl Filter {
    fn from_query(
        query: Option<&str>,
        namespace: Option<&str>,
        declared: &'static Declared,
    ) -> Result<Filter, String> {
        Ok(Filter {
            declared,
            namespace: namespace.map(str::to_string),
            labels: LabelSelector::parse(&query_value(query, "labelSelector").unwrap_or_default())?,
            fields: Fields::parse_refusing(
                &query_value(query, "fieldSelector").unwrap_or_default(),
                &declared.selectable(),
                declared.refusal,
            )?,
            wanted: None,
            columns: Arc::default(),
            leaf_columns: Vec::new(),
        })
    }

    /// Reads the columns of the leaves `caller` may reach, for a Table.
    fn with_columns(mut self, snapshot: &Snapshot, caller: &Caller<'_>) -> Filter {
        let mut leaves: Vec<LeafColumns> = snapshot
            .leaves
            .iter()
            .filter(|(name, _)| caller.config.may_reach(name))
            .filter_map(|(name, leaf)| {
                let kept = leaf.kinds().get(&self.declared.gvr)?;
                Some((name.as_str().into(), kept.columns()))
            })
            .collect();
        leaves.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some((_, first)) = leaves.iter().find(|(_, c)| !c.is_empty()) {
            self.columns = first.clone();
        }
        self.leaf_columns = leaves;
        self
    }

    /// The Table's column definitions: the leaf's, then LEAF.
    fn definitions(&self) -> Vec<Value> {
        let mut out = (*self.columns).clone();
        let leaf = leaf_column("The leaf cluster the object is in (leafgate).", 0);
        out.push(serde_json::to_value(leaf).unwrap_or(Value::Null));
        out
    }

    /// The row of `copy`: its leaf's cells under the Table's columns, the ages printed
    /// now, then the leaf.
    fn cells(&self, copy: &Listed<Printed>, now: i64) -> Vec<Value> {
        let own = self
            .leaf_columns
            .iter()
            .find(|(leaf, _)| *leaf == copy.leaf)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        let name = |c: &Value| c["name"].as_str().unwrap_or("").to_string();
        let mut cells: Vec<Value> = if Arc::ptr_eq(&own, &self.columns) || *own == *self.columns {
            copy.object.cells.clone()
        } else {
            self.columns
                .iter()
                .map(|column| {
                    let at = own.iter().position(|c| name(c) == name(column));
                    at.and_then(|i| copy.object.cells.get(i).cloned())
                        .unwrap_or_else(|| json!(""))
                })
                .collect()
        };
        cells.resize(self.columns.len(), json!(""));
        let object = copy.object.object.json();
        for (column, pointer, unset) in self.declared.ages {
            if let Some(i) = self.columns.iter().position(|c| name(c) == *column) {
                cells[i] = match object.pointer(pointer) {
                    Some(Value::String(_)) => json!(object_table::age(object, pointer, now)),
                    _ => json!(unset),
                };
            }
        }
        cells.push(json!(&*copy.leaf));
        cells
    }

    /// The Table of `copies`.
    fn print(&self, copies: &[Listed<Printed>], wanted: Wanted, metadata: Value) -> Value {
        let now = now();
        let rows = copies
            .iter()
            .map(|c| (self.cells(c, now), c.object.object.json().clone()))
            .collect();
        object_table::table(wanted, &self.definitions(), rows, metadata)
    }
}

impl Resource for Filter {
    type Object = Printed;

    fn names(&self) -> Names {
        self.declared.names()
    }

    fn feed<'l>(&self, leaf: &'l Leaf) -> Option<&'l Arc<Feed<Printed>>> {
        Some(&leaf.kinds().get(&self.declared.gvr)?.feed)
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn selects(&self, printed: &Printed) -> bool {
        let object = &printed.object;
        self.namespace
            .as_deref()
            .is_none_or(|want| want == object.text("/metadata/namespace"))
            && self.labels.matches_with(|k| object.label(k))
            && self
                .fields
                .matches(|k| self.declared.field(object.json(), k))
    }

    fn write<'a>(
        &'a self,
        _caller: &'a Caller<'a>,
        kind: &'static str,
        leaf: &'a Arc<str>,
        printed: &'a Arc<Printed>,
        rv: &'a str,
        out: &'a mut Vec<u8>,
    ) -> Writing<'a> {
        let copy = Listed {
            leaf: leaf.clone(),
            object: printed.clone(),
        };
        let object = match self.wanted {
            Some(wanted) => self.print(
                std::slice::from_ref(&copy),
                wanted,
                json!({ "resourceVersion": rv }),
            ),
            None => {
                let mut v = printed.object.json().clone();
                v["metadata"]["resourceVersion"] = json!(rv);
                v
            }
        };
        resource::push_line(out, &json!({ "type": kind, "object": object }));
        Box::pin(std::future::ready(()))
    }
}

/// A collection path of `declared` (in `namespace`, or across the tenant's): a list, or
/// a watch with `watch=true` (`list::collection`).
pub async fn collection(
    req: &Request<InBody>,
    client: &Client,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    namespace: Option<&str>,
    declared: &'static Declared,
) -> Response<Body> {
    if let Some(refusal) = unserved(req, caller, declared, namespace, None) {
        return refusal;
    }
    if req.method() != Method::GET {
        return reply::status(&Status::method_not_allowed());
    }
    let parse = || {
        let mut filter = Filter::from_query(req.uri().query(), namespace, declared)
            .map_err(|e| Box::new(reply::status(&Status::new(400, e))))?;
        filter.wanted = table::requested(req).map_err(Box::new)?;
        if filter.wanted.is_some() {
            filter = filter.with_columns(snapshot, caller);
        }
        Ok(filter)
    };
    let answer = async |filter: Filter, listing| list_answer(&filter, listing);
    let names = (declared.names(), namespace);
    let res = list::collection(req, client, snapshot, caller, names, false, parse, answer).await;
    declared.warn(res)
}

/// kube-apiserver's RBAC 403 when `caller`'s tenant is not served `declared`, for the
/// verb its authorizer reads from `req` (on the object `raw_name`, or the collection).
fn unserved(
    req: &Request<InBody>,
    caller: &Caller<'_>,
    declared: &'static Declared,
    namespace: Option<&str>,
    raw_name: Option<&str>,
) -> Option<Response<Body>> {
    if caller.config.serves(&declared.gvr) {
        return None;
    }
    let name = raw_name.map(|n| names::decode_segment(n).unwrap_or_else(|| n.to_string()));
    let watching = matches!(
        query_value(req.uri().query(), "watch").as_deref(),
        Some("true" | "1")
    );
    let verb = match (req.method().as_str(), name.is_some()) {
        ("GET" | "HEAD", _) if watching => "watch".to_string(),
        ("GET" | "HEAD", true) => "get".to_string(),
        ("GET" | "HEAD", false) => "list".to_string(),
        ("POST", _) => "create".to_string(),
        ("PUT", _) => "update".to_string(),
        ("DELETE", false) => "deletecollection".to_string(),
        (other, _) => other.to_lowercase(),
    };
    let gvr = &declared.gvr;
    Some(caller.forbidden_in(gvr.group, &verb, gvr.resource, name.as_deref(), namespace))
}

/// A page of the kind as a Table or a `<Kind>List`.
fn list_answer(filter: &Filter, listing: Listing<Printed>) -> Response<Body> {
    let mut metadata = json!({ "resourceVersion": listing.token });
    if let Some((token, remaining)) = listing.next {
        metadata["continue"] = json!(token);
        metadata["remainingItemCount"] = json!(remaining);
    }
    let gvr = &filter.declared.gvr;
    let body = match filter.wanted {
        Some(wanted) => filter.print(&listing.items, wanted, metadata),
        None => json!({
            "kind": format!("{}List", gvr.kind),
            "apiVersion": gvr.api_version,
            "metadata": metadata,
            "items": listing.items.iter().map(|c| c.object.object.json()).collect::<Vec<_>>(),
        }),
    };
    reply::json(StatusCode::OK, &body)
}

/// `GET .../namespaces/{ns}/<resource>/{name}`: the object, from the first leaf (by name)
/// holding it.
pub fn one(
    req: &Request<InBody>,
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    path: (&str, &str),
    declared: &'static Declared,
) -> Response<Body> {
    declared.warn(get(req, snapshot, caller, path, declared))
}

fn get(
    req: &Request<InBody>,
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    (namespace, raw_name): (&str, &str),
    declared: &'static Declared,
) -> Response<Body> {
    if let Some(refusal) = unserved(req, caller, declared, Some(namespace), Some(raw_name)) {
        return refusal;
    }
    if req.method() != Method::GET {
        return reply::status(&Status::method_not_allowed());
    }
    let gvr = &declared.gvr;
    let name = match list::named(caller, declared.names(), namespace, raw_name) {
        Ok(name) => name,
        Err(res) => return res,
    };
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let feed = |l: &Leaf| Some(l.kinds().get(gvr)?.feed.clone());
    let Some(copy) = list::first_copy(snapshot, caller, feed, (namespace, &name)) else {
        return reply::status(&Status::not_found_in(gvr.group, gvr.resource, &name));
    };
    match wanted {
        Some(wanted) => {
            let filter =
                Filter::from_query(None, None, declared).map(|f| f.with_columns(snapshot, caller));
            match filter {
                Ok(filter) => {
                    let metadata = json!({ "resourceVersion": copy.version() });
                    reply::json(StatusCode::OK, &filter.print(&[copy], wanted, metadata))
                }
                Err(e) => reply::status(&Status::new(400, e)),
            }
        }
        None => reply::json(StatusCode::OK, copy.object.object.json()),
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::feed::RawObject;

    fn column(name: &str) -> Value {
        json!({ "name": name, "type": "string", "format": "", "description": "", "priority": 0 })
    }

    fn filter(declared: &'static Declared, leaves: &[(&str, Vec<Value>)]) -> Filter {
        let mut f = Filter::from_query(None, None, declared).unwrap();
        f.leaf_columns = leaves
            .iter()
            .map(|(l, c)| (Arc::from(*l), Arc::new(c.clone())))
            .collect();
        f.columns = f.leaf_columns[0].1.clone();
        f
    }

    fn copy(leaf: &str, json: Value, cells: Vec<Value>) -> Listed<Printed> {
        let object = RawObject::new(json, "batch/v1", "CronJob", leaf);
        Listed {
            leaf: leaf.into(),
            object: Arc::new(Printed { object, cells }),
        }
    }

    #[test]
    fn cells_are_laid_out_by_name_and_ages_printed_now() {
        let cronjobs = find("batch", "cronjobs").unwrap();
        let new = vec![
            column("Name"),
            column("Schedule"),
            column("Last Schedule"),
            column("Age"),
        ];
        // An older leaf without `Last Schedule`, its columns in another order.
        let old = vec![column("Age"), column("Name"), column("Schedule")];
        let f = filter(cronjobs, &[("leaf-a", new), ("leaf-b", old)]);
        let now = leafgate_k8s_print::parse_timestamp("2024-01-01T01:00:00Z").unwrap();
        let meta = json!({ "metadata": { "name": "n", "namespace": "apps",
            "creationTimestamp": "2024-01-01T00:00:00Z" } });
        let mut scheduled = meta.clone();
        scheduled["status"] = json!({ "lastScheduleTime": "2024-01-01T00:55:00Z" });
        let a = copy(
            "leaf-a",
            scheduled,
            vec![json!("n"), json!("* * * * *"), json!("1s"), json!("2s")],
        );
        assert_eq!(
            f.cells(&a, now),
            [
                json!("n"),
                json!("* * * * *"),
                json!("5m"),
                json!("60m"),
                json!("leaf-a")
            ]
        );
        let b = copy(
            "leaf-b",
            meta,
            vec![json!("9s"), json!("n"), json!("0 * * * *")],
        );
        assert_eq!(
            f.cells(&b, now),
            [
                json!("n"),
                json!("0 * * * *"),
                json!("<none>"),
                json!("60m"),
                json!("leaf-b")
            ]
        );
        assert_eq!(f.definitions().len(), 5);
    }

    #[test]
    fn fields_and_refusals_are_each_kinds_own() {
        let jobs = find("batch", "jobs").unwrap();
        let f =
            Filter::from_query(Some("fieldSelector=status.successful%3D0"), None, jobs).unwrap();
        // An unset count selects as 0, as the defaulted object has it.
        assert!(f.fields.matches(|k| jobs.field(&json!({}), k)));
        let refused = |d: &'static Declared, q: &str| Filter::from_query(Some(q), None, d).err();
        assert_eq!(
            refused(jobs, "fieldSelector=spec.x%3D1").as_deref(),
            Some("field label \"spec.x\" not supported for Job")
        );
        let deployments = find("apps", "deployments").unwrap();
        assert_eq!(
            refused(deployments, "fieldSelector=spec.replicas%3D1").as_deref(),
            Some(
                "\"spec.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            )
        );
        let services = find("", "services").unwrap();
        assert_eq!(
            refused(services, "fieldSelector=spec.ports%3D1").as_deref(),
            Some("field label not supported: spec.ports")
        );
        let secrets = find("", "secrets").unwrap();
        assert_eq!(
            refused(secrets, "fieldSelector=data.x%3D1").as_deref(),
            Some("field label not supported: data.x")
        );
        let f = Filter::from_query(Some("fieldSelector=type%3DOpaque"), None, secrets).unwrap();
        assert!(f.fields.matches(|k| secrets.field(&json!({}), k)));
    }
}
