//! The read-only kinds leafgate serves without interpreting them (deployments,
//! replicasets, statefulsets, daemonsets, services, configmaps, jobs, cronjobs, secrets,
//! ...), each a [`Declared`]: its group, version, resource and kind (the config's
//! catalogue, `config::kinds`), its short names and categories (discovery), the fields
//! kube-apiserver selects it by and the words of its refusal, and which of its printed
//! cells are ages.
//!
//! Custom resources are declarations too, made at runtime ([`custom`]) from what a leaf's
//! discovery says of one a tenant's `resources` name (`<plural>.<group>`): its version
//! and kind; its Table is the leaf's print of its CRD's printer columns.
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

use http::{HeaderValue, Method, Request, Response, header};
use serde_json::{Value, json};

use super::caller::Caller;
use super::fields::Fields;
use super::json_out;
use super::list::{self, Listing};
use super::listed::Listed;
use super::object_table::{self, leaf_column};
use super::query::query_value;
use super::resource::{self, Names, Resource, Writing};
use super::select::LabelSelector;
use super::table::{self, Wanted};
use crate::k8s::feed::{self, Feed, Object, Printed};
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

/// The declaration of a custom resource at the version and kind a leaf's discovery gave
/// (`gvr`), made once per distinct `gvr`: fields `metadata.name` and `metadata.namespace`
/// (any other the apiextensions handler's `field label not supported`); `Age` printed
/// again at each read from `metadata.creationTimestamp`, the other cells the leaf's at the
/// object's last change; short names and categories the leaves' (read by discovery).
pub fn custom(gvr: &'static Gvr) -> &'static Declared {
    static MADE: std::sync::Mutex<Vec<&'static Declared>> = std::sync::Mutex::new(Vec::new());
    let mut made = MADE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(declared) = made.iter().find(|d| d.gvr == *gvr) {
        return declared;
    }
    let declared: &'static Declared = Box::leak(Box::new(Declared {
        refusal: core_refusal,
        ..declared(*gvr, &[], &[])
    }));
    made.push(declared);
    declared
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

/// Where a leaf's cells go under the Table's columns: for each column, the index of the
/// leaf's own cell printed under it (`None`: that leaf prints no such column).
type Layout = Vec<Option<usize>>;

/// What a list or watch of a kind selects, and the Table asked for.
struct Filter {
    declared: &'static Declared,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: Fields,
    wanted: Option<Wanted>,
    /// The Table's columns (the first leaf's, by name, that printed the kind), and each
    /// reachable leaf's layout of its cells under them (worked out once per request, so a
    /// row is bytes copied).
    columns: Arc<Vec<Value>>,
    layouts: Vec<(Arc<str>, Layout)>,
    /// The columns that are ages, printed again at each read: the column's index, the
    /// time it is the age of and the cell when that is unset.
    ages: Vec<(usize, &'static str, &'static str)>,
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
            layouts: Vec::new(),
            ages: Vec::new(),
        })
    }

    /// Reads the columns of the leaves `caller` may reach, for a Table.
    fn with_columns(self, snapshot: &Snapshot, caller: &Caller<'_>) -> Filter {
        let leaves: Vec<LeafColumns> = snapshot
            .leaves
            .iter()
            .filter(|(name, _)| caller.config.may_reach(name))
            .filter_map(|(name, leaf)| {
                let kept = leaf.kinds().get(&self.declared.gvr)?;
                Some((name.as_str().into(), kept.columns()))
            })
            .collect();
        self.laid_out(leaves)
    }

    /// The Table's columns from `leaves` (the first by name that has some), each leaf's
    /// cells laid out by column name under them (its own in order when its columns are
    /// the same), and which of them are ages.
    fn laid_out(mut self, mut leaves: Vec<LeafColumns>) -> Filter {
        leaves.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some((_, first)) = leaves.iter().find(|(_, c)| !c.is_empty()) {
            self.columns = first.clone();
        }
        let name = |c: &Value| c["name"].as_str().unwrap_or("").to_string();
        let names: Vec<String> = self.columns.iter().map(name).collect();
        self.layouts = leaves
            .into_iter()
            .map(|(leaf, own)| {
                let layout = if Arc::ptr_eq(&own, &self.columns) || *own == *self.columns {
                    (0..names.len()).map(Some).collect()
                } else {
                    let own: Vec<String> = own.iter().map(name).collect();
                    names
                        .iter()
                        .map(|n| own.iter().position(|o| o == n))
                        .collect()
                };
                (leaf, layout)
            })
            .collect();
        self.ages = self
            .declared
            .ages
            .iter()
            .filter_map(|(column, pointer, unset)| {
                let at = names.iter().position(|n| n == column)?;
                Some((at, *pointer, *unset))
            })
            .collect();
        self
    }

    /// The Table's column definitions: the leaf's, then LEAF.
    fn definitions(&self) -> Vec<Value> {
        let mut out = (*self.columns).clone();
        let leaf = leaf_column("The leaf cluster the object is in (leafgate).", 0);
        out.push(serde_json::to_value(leaf).unwrap_or(Value::Null));
        out
    }

    /// Writes the cells of `copy`'s row: its leaf's cells under the Table's columns, the
    /// ages printed now, then the leaf.
    fn write_cells(&self, out: &mut Vec<u8>, copy: &Listed<Printed>, now: i64) {
        let layout = self
            .layouts
            .iter()
            .find(|(leaf, _)| *leaf == copy.leaf)
            .map_or(&[][..], |(_, layout)| layout.as_slice());
        let object = copy.object.object.json();
        out.push(b'[');
        for i in 0..self.columns.len() {
            match self.ages.iter().find(|(at, ..)| *at == i) {
                Some((_, pointer, unset)) => match feed::at(object, pointer) {
                    Some(Value::String(_)) => {
                        json_out::push_str(out, &object_table::age(object, pointer, now));
                    }
                    _ => json_out::push_str(out, unset),
                },
                None => {
                    let own = layout.get(i).copied().flatten();
                    match own.and_then(|j| copy.object.cell_json(j)) {
                        Some(cell) => out.extend_from_slice(cell),
                        None => out.extend_from_slice(b"\"\""),
                    }
                }
            }
            out.push(b',');
        }
        json_out::push_str(out, &copy.leaf);
        out.push(b']');
    }

    /// The Table of `copies`, at list version `version` (and the continue token and the
    /// count after this page, when more follow).
    fn print(
        &self,
        copies: &[Listed<Printed>],
        wanted: Wanted,
        version: &str,
        next: Option<(&str, usize)>,
    ) -> Vec<u8> {
        let now = now();
        let mut out = Vec::with_capacity(1024 + copies.len() * 512);
        json_out::list_head(&mut out, "Table", wanted.api_version, version, next);
        out.extend_from_slice(br#","columnDefinitions":"#);
        json_out::push_json(&mut out, &self.definitions());
        out.extend_from_slice(br#","rows":["#);
        for (i, copy) in copies.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"cells":"#);
            self.write_cells(&mut out, copy, now);
            let object = &copy.object.object;
            let whole = |out: &mut Vec<u8>| out.extend_from_slice(object.wire());
            json_out::row_end(&mut out, wanted.include, object.metadata_json(), whole);
        }
        out.extend_from_slice(b"]}");
        out
    }
}

impl Resource for Filter {
    type Object = Printed;

    fn names(&self) -> Names {
        self.declared.names()
    }

    fn feed(&self, leaf: &Leaf) -> Option<Arc<Feed<Printed>>> {
        Some(leaf.kinds().get(&self.declared.gvr)?.feed.clone())
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn selects(&self, printed: &Printed) -> bool {
        let object = &printed.object;
        self.namespace
            .as_deref()
            .is_none_or(|want| want == object.namespace())
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
        match self.wanted {
            Some(wanted) => {
                out.extend_from_slice(br#"{"type":"#);
                json_out::push_str(out, kind);
                out.extend_from_slice(br#","object":"#);
                out.extend(self.print(std::slice::from_ref(&copy), wanted, rv, None));
                out.extend_from_slice(b"}\n");
            }
            None => {
                let mut v = printed.object.json().clone();
                v["metadata"]["resourceVersion"] = json!(rv);
                resource::push_line(out, &json!({ "type": kind, "object": v }));
            }
        }
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
    let next = listing.next.as_ref().map(|(token, n)| (token.as_str(), *n));
    let gvr = &filter.declared.gvr;
    let body = match filter.wanted {
        Some(wanted) => filter.print(&listing.items, wanted, &listing.token, next),
        None => {
            let wire: usize = listing
                .items
                .iter()
                .map(|c| c.object.object.bytes() + 1)
                .sum();
            let mut out = Vec::with_capacity(256 + wire);
            let kind = format!("{}List", gvr.kind);
            json_out::list_head(&mut out, &kind, gvr.api_version, &listing.token, next);
            out.extend_from_slice(br#","items":["#);
            for (i, copy) in listing.items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(copy.object.object.wire());
            }
            out.extend_from_slice(b"]}");
            out
        }
    };
    table::json_response(body)
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
                    let version = copy.version().to_string();
                    table::json_response(filter.print(&[copy], wanted, &version, None))
                }
                Err(e) => reply::status(&Status::new(400, e)),
            }
        }
        None => table::json_response(copy.object.object.wire().to_vec()),
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
    use crate::listener::kube_api::json_out::Include;

    fn column(name: &str) -> Value {
        json!({ "name": name, "type": "string", "format": "", "description": "", "priority": 0 })
    }

    fn filter(declared: &'static Declared, leaves: &[(&str, Vec<Value>)]) -> Filter {
        let f = Filter::from_query(None, None, declared).unwrap();
        let leaves = leaves
            .iter()
            .map(|(l, c)| (Arc::from(*l), Arc::new(c.clone())))
            .collect();
        f.laid_out(leaves)
    }

    impl Filter {
        /// The cells of `copy`'s row, as [`Filter::write_cells`] writes them.
        fn cells(&self, copy: &Listed<Printed>, now: i64) -> Vec<Value> {
            let mut out = Vec::new();
            self.write_cells(&mut out, copy, now);
            serde_json::from_slice(&out).unwrap()
        }
    }

    fn copy(leaf: &str, json: Value, cells: Vec<Value>) -> Listed<Printed> {
        let object = RawObject::new(json, "batch/v1", "CronJob", leaf);
        Listed {
            leaf: leaf.into(),
            object: Arc::new(Printed::new(object, &cells)),
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

    /// The Table and the list are written as bytes from what the feed keeps: the same
    /// JSON a client reads from kube-apiserver's (the head, the page's `continue`, each
    /// row's cells and `object` as `includeObject` asks; the list's items whole).
    #[tokio::test]
    async fn tables_and_lists_are_written_whole_from_the_kept_json() {
        let cronjobs = find("batch", "cronjobs").unwrap();
        let f = filter(cronjobs, &[("leaf-a", vec![column("Name"), column("Age")])]);
        let json = json!({ "metadata": { "name": "n\"1", "namespace": "apps",
            "resourceVersion": "7", "creationTimestamp": "2024-01-01T00:00:00Z" },
            "spec": { "schedule": "* * * * *" } });
        let copies = [copy("leaf-a", json, vec![json!("n\"1"), json!("9s")])];
        let object = copies[0].object.object.json().clone();
        let table = |include| {
            let wanted = Wanted {
                api_version: "meta.k8s.io/v1",
                include,
            };
            let out = f.print(&copies, wanted, "42", Some(("tok", 3)));
            serde_json::from_slice::<Value>(&out).unwrap()
        };
        let whole = table(Include::Object);
        assert_eq!(whole["kind"], "Table");
        assert_eq!(whole["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            whole["metadata"],
            json!({ "resourceVersion": "42", "continue": "tok", "remainingItemCount": 3 })
        );
        assert_eq!(whole["columnDefinitions"].as_array().unwrap().len(), 3);
        assert_eq!(whole["rows"][0]["cells"][0], "n\"1");
        assert_eq!(whole["rows"][0]["cells"][2], "leaf-a");
        assert_eq!(whole["rows"][0]["object"], object);
        let meta = table(Include::Metadata);
        assert_eq!(
            meta["rows"][0]["object"],
            json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": object["metadata"] })
        );
        assert!(table(Include::None)["rows"][0].get("object").is_none());
        let listing = Listing {
            items: copies.to_vec(),
            token: "42".into(),
            next: None,
        };
        let list = Filter::from_query(None, None, cronjobs).unwrap();
        let res = list_answer(&list, listing);
        let body = http_body_util::BodyExt::collect(res.into_body()).await;
        let list: Value = serde_json::from_slice(&body.unwrap().to_bytes()).unwrap();
        assert_eq!(
            list,
            json!({ "kind": "CronJobList", "apiVersion": "batch/v1",
                "metadata": { "resourceVersion": "42" }, "items": [object] })
        );
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
