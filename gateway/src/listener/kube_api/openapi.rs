//! OpenAPI v3 (`/openapi/v3`, `/openapi/v3/<group-version>`): the documents kubectl reads
//! to validate what it sends (`apply`, `create`, `edit`, `replace`) and to `explain` a
//! kind, describing exactly what this front serves.
//!
//! - `/openapi/v3` lists each group-version with a `serverRelativeURL` carrying the
//!   document's hash (uppercase hex SHA-512, as kube-openapi's `handler3`); a request with
//!   that hash gets `Cache-Control: public, immutable`, one with a stale hash a 301 to the
//!   current URL, so kubectl's disk cache stays right across leafgate versions.
//! - `api/v1` holds the paths of pods (and their subresources), namespaces and events,
//!   and the schemas of their kinds, tagged with `x-kubernetes-group-version-kind` so
//!   `kubectl explain pod` finds them. The pod `patch` operation (answered 405: leafgate
//!   never writes to a leaf) declares `fieldValidation`: kubectl then leaves validation to
//!   the server instead of failing with "failed to download openapi", and the write ends in
//!   the front's clear 405.
//! - `apis/authorization.k8s.io/v1` and `apis/authentication.k8s.io/v1`: the reviews;
//!   `apis/events.k8s.io/v1`: its events (read only).
//! - The read-only kinds (`config::kinds::BUILTIN`), each in its group-version's document
//!   (core ones in `api/v1`; `apis/apps/v1`, `apis/batch/v1`, ...): the list across
//!   namespaces, the list in one and the object by name, each `get` only, and the kind's
//!   schema, so `kubectl explain deployment.spec.strategy` works. The documents are the
//!   same for every tenant; which kinds a tenant reaches is discovery's (kubectl resolves
//!   a kind there before it reads a schema).
//!
//! The schemas are generated from the `k8s-openapi` types leafgate decodes pods with (its
//! `schemars` feature, which carries the upstream field documentation), once, at first use:
//! nothing is maintained by hand and they cannot drift from the types.
//!
//! `/openapi/v2` is not served: kubectl asks it only in protobuf, and only when v3 fails.
//!
//! Long file: the documents are one generator. Every group-version's paths and schemas
//! are written with the same schema generator, operation and parameter builders and
//! tagging; split by group, each part would import those builders back from the other.

use std::sync::LazyLock;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, LimitRange, Namespace, PersistentVolumeClaim, Pod, ResourceQuota,
    Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::events::v1::Event as EventV1;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status as MetaStatus};
use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use super::query::query_value;
use crate::config::kinds::{self, Gvr};
use crate::k8s::status::Status;
use crate::listener::reply;
use crate::proxy::{Body, full};

/// One group-version's document, serialized once, with its hash.
struct Document {
    /// `api/v1`, `apis/<group>/<version>`.
    path: &'static str,
    bytes: Bytes,
    hash: String,
}

struct Documents {
    root: Bytes,
    each: Vec<Document>,
}

static DOCUMENTS: LazyLock<Documents> = LazyLock::new(build);

/// `GET /openapi/v3` and `/openapi/v3/<group-version>`: `rest` is the path after
/// `/openapi/v3` (empty for the root), `query` the request's query, `if_none_match` its
/// `If-None-Match`.
pub fn serve(
    rest: &str,
    query: Option<&str>,
    if_none_match: Option<&HeaderValue>,
) -> Response<Body> {
    let docs = &*DOCUMENTS;
    if rest.is_empty() {
        return json_bytes(docs.root.clone());
    }
    let Some(doc) = docs.each.iter().find(|d| d.path == rest) else {
        return reply::status(&Status::no_such_resource());
    };
    let etag = format!("\"{}\"", doc.hash);
    let asked = query_value(query, "hash");
    if asked.as_deref().is_some_and(|h| h != doc.hash) {
        // A stale (or made-up) hash: where the current document is, never its bytes
        // under the wrong hash (the client would cache them as immutable).
        let mut res = Response::new(full(Bytes::new()));
        *res.status_mut() = StatusCode::MOVED_PERMANENTLY;
        let location = format!("/openapi/v3/{}?hash={}", doc.path, doc.hash);
        if let Ok(v) = HeaderValue::from_str(&location) {
            res.headers_mut().insert(header::LOCATION, v);
        }
        return res;
    }
    if if_none_match.is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
        let mut res = Response::new(full(Bytes::new()));
        *res.status_mut() = StatusCode::NOT_MODIFIED;
        return res;
    }
    let mut res = json_bytes(doc.bytes.clone());
    let cache = if asked.is_some() {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    let headers = res.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    res
}

fn json_bytes(bytes: Bytes) -> Response<Body> {
    let mut res = Response::new(full(bytes));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn build() -> Documents {
    let each: Vec<Document> = [
        ("api/v1", core_v1()),
        ("apis/authorization.k8s.io/v1", authorization_v1()),
        ("apis/authentication.k8s.io/v1", authentication_v1()),
        ("apis/events.k8s.io/v1", events_v1()),
        ("apis/apps/v1", apps_v1()),
        ("apis/batch/v1", batch_v1()),
        (
            "apis/discovery.k8s.io/v1",
            read_only_document("discovery.k8s.io/v1", |s| {
                read_only::<EndpointSlice>(&kinds::ENDPOINTSLICES, s)
            }),
        ),
        (
            "apis/networking.k8s.io/v1",
            read_only_document("networking.k8s.io/v1", |s| {
                [
                    read_only::<Ingress>(&kinds::INGRESSES, s),
                    read_only::<NetworkPolicy>(&kinds::NETWORKPOLICIES, s),
                ]
                .concat()
            }),
        ),
        (
            "apis/autoscaling/v2",
            read_only_document("autoscaling/v2", |s| {
                read_only::<HorizontalPodAutoscaler>(&kinds::HORIZONTALPODAUTOSCALERS, s)
            }),
        ),
        (
            "apis/policy/v1",
            read_only_document("policy/v1", |s| {
                read_only::<PodDisruptionBudget>(&kinds::PODDISRUPTIONBUDGETS, s)
            }),
        ),
    ]
    .into_iter()
    .map(|(path, doc)| {
        let bytes = Bytes::from(doc.to_string());
        let hash = Sha512::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        Document { path, bytes, hash }
    })
    .collect();
    let paths: Map<String, Value> = each
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                json!({ "serverRelativeURL": format!("/openapi/v3/{}?hash={}", d.path, d.hash) }),
            )
        })
        .collect();
    Documents {
        root: Bytes::from(json!({ "paths": paths }).to_string()),
        each,
    }
}

/// `x-kubernetes-group-version-kind` of one kind.
fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({ "group": group, "version": version, "kind": kind })
}

/// The schemas of a document: each type's and those it refers to, with the kinds tagged.
struct Schemas {
    generator: SchemaGenerator,
    kinds: Vec<(String, Value)>,
}

impl Schemas {
    fn new() -> Schemas {
        Schemas {
            generator: SchemaSettings::openapi3().into_generator(),
            kinds: Vec::new(),
        }
    }

    /// Adds `T`, tagged with `gvk` when it is a kind; returns its `$ref`.
    fn add<T: JsonSchema>(&mut self, gvk: Option<Value>) -> Value {
        let reference = self.generator.subschema_for::<T>().to_value();
        if let Some(gvk) = gvk {
            self.kinds.push((T::schema_name().into_owned(), gvk));
        }
        reference
    }

    /// Adds `<Kind>List` of `T` (`k8s-openapi` has one generic `List<T>`, without a
    /// schema): `items` of `T` and the list metadata, as kube-apiserver's documents write
    /// every list; returns its `$ref`.
    fn add_list<T: JsonSchema>(&mut self, group: &str, kind: &str) -> Value {
        self.add_list_at::<T>(group, "v1", kind)
    }

    /// [`Schemas::add_list`] for a kind of `group` at `version`.
    fn add_list_at<T: JsonSchema>(&mut self, group: &str, version: &str, kind: &str) -> Value {
        let item = self.add::<T>(Some(gvk(group, version, kind)));
        let meta = self.add::<ListMeta>(None);
        let name = format!("{}List", T::schema_name());
        let list_kind = format!("{kind}List");
        let schema = json!({
            "description": format!("{list_kind} is a list of {kind}s."),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": { "type": "string", "description": "APIVersion defines the versioned schema of this representation of an object." },
                "kind": { "type": "string", "description": "Kind is a string value representing the REST resource this object represents." },
                "items": { "type": "array", "items": item, "description": format!("List of {kind}s.") },
                "metadata": { "allOf": [meta], "description": "Standard list metadata." },
            },
        });
        self.generator
            .definitions_mut()
            .insert(name.clone(), schema);
        self.kinds
            .push((name.clone(), gvk(group, version, &list_kind)));
        json!({ "$ref": format!("#/components/schemas/{name}") })
    }

    fn finish(mut self) -> Value {
        let mut defs = self.generator.take_definitions(true);
        for (name, gvk) in self.kinds {
            if let Some(Value::Object(schema)) = defs.get_mut(&name) {
                schema.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
            }
        }
        // The patch body kube-apiserver's documents name.
        defs.insert(
            "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(),
            json!({
                "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
                "type": "object",
            }),
        );
        Value::Object(defs)
    }
}

fn path_param(name: &str, what: &str) -> Value {
    json!({
        "name": name, "in": "path", "required": true, "description": what,
        "schema": { "type": "string", "uniqueItems": true },
    })
}

fn query_param(name: &str, what: &str, kind: &str) -> Value {
    json!({
        "name": name, "in": "query", "description": what,
        "schema": { "type": kind, "uniqueItems": true },
    })
}

/// The list and watch parameters the front reads.
fn list_params() -> Vec<Value> {
    vec![
        query_param(
            "labelSelector",
            "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
            "string",
        ),
        query_param(
            "fieldSelector",
            "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
            "string",
        ),
        query_param(
            "resourceVersion",
            "resourceVersion sets a constraint on what resource versions a request may be served from.",
            "string",
        ),
        query_param(
            "watch",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
            "boolean",
        ),
        query_param(
            "allowWatchBookmarks",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
            "boolean",
        ),
        query_param(
            "timeoutSeconds",
            "Timeout for the list/watch call.",
            "integer",
        ),
    ]
}

fn ok(schema: &Value) -> Value {
    json!({ "200": { "description": "OK", "content": {
        "application/json": { "schema": schema },
        "application/yaml": { "schema": schema },
    }}})
}

/// An operation as kube-apiserver's documents write one.
fn op(
    id: &str,
    what: &str,
    action: &str,
    gvk: &Value,
    params: Vec<Value>,
    responses: Value,
) -> Value {
    json!({
        "tags": ["core_v1"],
        "description": what,
        "operationId": id,
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    })
}

fn core_v1() -> Value {
    let mut s = Schemas::new();
    let pod_gvk = gvk("", "v1", "Pod");
    let ns_gvk = gvk("", "v1", "Namespace");
    let event_gvk = gvk("", "v1", "Event");
    let pod = s.add::<Pod>(Some(pod_gvk.clone()));
    let pods = s.add_list::<Pod>("", "Pod");
    let namespace = s.add::<Namespace>(Some(ns_gvk.clone()));
    let namespaces = s.add_list::<Namespace>("", "Namespace");
    let event = s.add::<Event>(Some(event_gvk.clone()));
    let events = s.add_list::<Event>("", "Event");
    s.add::<MetaStatus>(Some(gvk("", "v1", "Status")));
    let ns_param = path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let name_param = |kind: &str| path_param("name", &format!("name of the {kind}"));
    let refused = json!({ "405": { "description": "leafgate does not write to leaf clusters: the method is not allowed" } });
    let patch_body =
        json!({ "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch" });
    let patch_types: Map<String, Value> = [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ]
    .into_iter()
    .map(|t| (t.to_string(), json!({ "schema": patch_body })))
    .collect();
    let mut pod_patch = op(
        "patchCoreV1NamespacedPod",
        "partially update the specified Pod (leafgate: refused with 405, it never writes to a leaf)",
        "patch",
        &pod_gvk,
        vec![
            query_param(
                "fieldValidation",
                "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.",
                "string",
            ),
            query_param(
                "fieldManager",
                "fieldManager is a name associated with the actor or entity that is making these changes.",
                "string",
            ),
            query_param(
                "dryRun",
                "When present, indicates that modifications should not be persisted.",
                "string",
            ),
            query_param(
                "force",
                "Force is going to \"force\" Apply requests.",
                "boolean",
            ),
        ],
        refused.clone(),
    );
    pod_patch["requestBody"] = json!({ "content": patch_types, "required": true });
    let mut pod_create = op(
        "createCoreV1NamespacedPod",
        "create a Pod (leafgate: refused with 405, it never writes to a leaf)",
        "post",
        &pod_gvk,
        vec![
            query_param(
                "fieldValidation",
                "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.",
                "string",
            ),
            query_param(
                "dryRun",
                "When present, indicates that modifications should not be persisted.",
                "string",
            ),
        ],
        refused,
    );
    pod_create["requestBody"] =
        json!({ "content": { "application/json": { "schema": pod } }, "required": true });
    let text = json!({ "200": { "description": "OK", "content": { "text/plain": { "schema": { "type": "string" } } } } });
    let stream = |sub: &str, kind: &str, what: &str, params: Vec<Value>| {
        let gvk = gvk("", "v1", kind);
        let id = |verb: &str| format!("{verb}CoreV1NamespacedPod{}", capitalized(sub));
        json!({
            "get": op(&id("connectGet"), what, "connect", &gvk, params.clone(), text.clone()),
            "post": op(&id("connectPost"), what, "connect", &gvk, params, text.clone()),
            "parameters": [name_param(kind), ns_param.clone()],
        })
    };
    let container = || {
        query_param(
            "container",
            "The container in which to execute the command. Defaults to only container if there is only one container in the pod.",
            "string",
        )
    };
    let io = |name: &str| {
        query_param(
            name,
            &format!("Redirect the {name} of the process."),
            "boolean",
        )
    };
    let paths = json!({
        "/api/v1/namespaces": {
            "get": op("listCoreV1Namespace", "list or watch objects of kind Namespace", "list", &ns_gvk, list_params(), ok(&namespaces)),
        },
        "/api/v1/namespaces/{name}": {
            "get": op("readCoreV1Namespace", "read the specified Namespace", "get", &ns_gvk, vec![], ok(&namespace)),
            "parameters": [name_param("Namespace")],
        },
        "/api/v1/pods": {
            "get": op("listCoreV1PodForAllNamespaces", "list or watch objects of kind Pod", "list", &pod_gvk, list_params(), ok(&pods)),
        },
        "/api/v1/namespaces/{namespace}/pods": {
            "get": op("listCoreV1NamespacedPod", "list or watch objects of kind Pod", "list", &pod_gvk, list_params(), ok(&pods)),
            "post": pod_create,
            "parameters": [ns_param.clone()],
        },
        "/api/v1/namespaces/{namespace}/pods/{name}": {
            "get": op("readCoreV1NamespacedPod", "read the specified Pod", "get", &pod_gvk, vec![], ok(&pod)),
            "patch": pod_patch,
            "parameters": [name_param("Pod"), ns_param.clone()],
        },
        "/api/v1/namespaces/{namespace}/pods/{name}/exec": stream("exec", "PodExecOptions", "connect GET or POST requests to exec of Pod", vec![
            query_param("command", "Command is the remote command to execute. argv array.", "string"),
            container(), io("stdin"), io("stdout"), io("stderr"),
            query_param("tty", "TTY if true indicates that a tty will be allocated for the exec call.", "boolean"),
        ]),
        "/api/v1/namespaces/{namespace}/pods/{name}/attach": stream("attach", "PodAttachOptions", "connect GET or POST requests to attach of Pod", vec![
            container(), io("stdin"), io("stdout"), io("stderr"),
            query_param("tty", "TTY if true indicates that a tty will be allocated for the attach call.", "boolean"),
        ]),
        "/api/v1/namespaces/{namespace}/pods/{name}/portforward": stream("portforward", "PodPortForwardOptions", "connect GET or POST requests to portforward of Pod", vec![
            query_param("ports", "List of ports to forward.", "integer"),
        ]),
        "/api/v1/namespaces/{namespace}/pods/{name}/log": {
            "get": op("readCoreV1NamespacedPodLog", "read log of the specified Pod", "get", &pod_gvk, vec![
                container(),
                query_param("follow", "Follow the log stream of the pod.", "boolean"),
                query_param("previous", "Return previous terminated container logs.", "boolean"),
                query_param("sinceSeconds", "A relative time in seconds before the current time from which to show logs.", "integer"),
                query_param("tailLines", "If set, the number of lines from the end of the logs to show.", "integer"),
                query_param("timestamps", "If true, add an RFC3339 timestamp at the beginning of every line of log output.", "boolean"),
                query_param("limitBytes", "If set, the number of bytes to read from the server before terminating the log output.", "integer"),
            ], text.clone()),
            "parameters": [name_param("Pod"), ns_param.clone()],
        },
        "/api/v1/events": {
            "get": op("listCoreV1EventForAllNamespaces", "list or watch objects of kind Event", "list", &event_gvk, list_params(), ok(&events)),
        },
        "/api/v1/namespaces/{namespace}/events": {
            "get": op("listCoreV1NamespacedEvent", "list or watch objects of kind Event", "list", &event_gvk, list_params(), ok(&events)),
            "parameters": [ns_param.clone()],
        },
        "/api/v1/namespaces/{namespace}/events/{name}": {
            "get": op("readCoreV1NamespacedEvent", "read the specified Event", "get", &event_gvk, vec![], ok(&event)),
            "parameters": [name_param("Event"), ns_param],
        },
    });
    let mut paths = paths;
    let core_kinds = [
        read_only::<Service>(&kinds::SERVICES, &mut s),
        read_only::<ConfigMap>(&kinds::CONFIGMAPS, &mut s),
        read_only::<Endpoints>(&kinds::ENDPOINTS, &mut s),
        read_only::<PersistentVolumeClaim>(&kinds::PERSISTENTVOLUMECLAIMS, &mut s),
        read_only::<ServiceAccount>(&kinds::SERVICEACCOUNTS, &mut s),
        read_only::<LimitRange>(&kinds::LIMITRANGES, &mut s),
        read_only::<ResourceQuota>(&kinds::RESOURCEQUOTAS, &mut s),
        read_only::<Secret>(&kinds::SECRETS, &mut s),
    ];
    for (path, item) in core_kinds.into_iter().flatten() {
        paths[path] = item;
    }
    document("v1", paths, s.finish())
}

fn apps_v1() -> Value {
    read_only_document("apps/v1", |s| {
        [
            read_only::<Deployment>(&kinds::DEPLOYMENTS, s),
            read_only::<ReplicaSet>(&kinds::REPLICASETS, s),
            read_only::<StatefulSet>(&kinds::STATEFULSETS, s),
            read_only::<DaemonSet>(&kinds::DAEMONSETS, s),
            read_only::<ControllerRevision>(&kinds::CONTROLLERREVISIONS, s),
        ]
        .concat()
    })
}

fn batch_v1() -> Value {
    read_only_document("batch/v1", |s| {
        [
            read_only::<Job>(&kinds::JOBS, s),
            read_only::<CronJob>(&kinds::CRONJOBS, s),
        ]
        .concat()
    })
}

/// The paths of read-only kind `gvr` (of type `T`) as kube-apiserver's documents write
/// them: the list across namespaces, the list in one, and the object by name (get, list
/// and watch: all the front serves of it), with `T`'s schema and its list's in `s`.
fn read_only<T: JsonSchema>(gvr: &Gvr, s: &mut Schemas) -> Vec<(String, Value)> {
    let version = gvr.version();
    let kind_gvk = gvk(gvr.group, version, gvr.kind);
    let one = s.add::<T>(Some(kind_gvk.clone()));
    let list = s.add_list_at::<T>(gvr.group, version, gvr.kind);
    let id = |verb: &str, rest: &str| format!("{verb}{}{rest}", operation_prefix(gvr));
    let tag = json!([format!(
        "{}_{version}",
        gvr.group
            .split('.')
            .next()
            .filter(|g| !g.is_empty())
            .unwrap_or("core")
    )]);
    let tagged = |mut o: Value| {
        o["tags"] = tag.clone();
        o
    };
    let ns_param = path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let listed = format!("list or watch objects of kind {}", gvr.kind);
    let root = gvr.path();
    let (prefix, resource) = root.rsplit_once('/').unwrap_or((&root, gvr.resource));
    vec![
        (
            root.clone(),
            json!({ "get": tagged(op(&id("list", &format!("{}ForAllNamespaces", gvr.kind)), &listed, "list", &kind_gvk, list_params(), ok(&list))) }),
        ),
        (
            format!("{prefix}/namespaces/{{namespace}}/{resource}"),
            json!({
                "get": tagged(op(&id("list", &format!("Namespaced{}", gvr.kind)), &listed, "list", &kind_gvk, list_params(), ok(&list))),
                "parameters": [ns_param.clone()],
            }),
        ),
        (
            format!("{prefix}/namespaces/{{namespace}}/{resource}/{{name}}"),
            json!({
                "get": tagged(op(&id("read", &format!("Namespaced{}", gvr.kind)), &format!("read the specified {}", gvr.kind), "get", &kind_gvk, vec![], ok(&one))),
                "parameters": [path_param("name", &format!("name of the {}", gvr.kind)), ns_param],
            }),
        ),
    ]
}

/// kube-apiserver's operation id infix of `gvr`'s group-version: `CoreV1`, `AppsV1`,
/// `NetworkingV1`, `AutoscalingV2`.
fn operation_prefix(gvr: &Gvr) -> String {
    let group = gvr
        .group
        .split('.')
        .next()
        .filter(|g| !g.is_empty())
        .unwrap_or("core");
    format!("{}{}", capitalized(group), capitalized(gvr.version()))
}

/// A group-version's document of read-only kinds: the paths `kinds` give.
fn read_only_document(
    group_version: &str,
    kinds: impl FnOnce(&mut Schemas) -> Vec<(String, Value)>,
) -> Value {
    let mut s = Schemas::new();
    let paths: Map<String, Value> = kinds(&mut s).into_iter().collect();
    document(group_version, Value::Object(paths), s.finish())
}

/// A review group's document: one `create` (POST) per review.
fn review_document<T: JsonSchema>(
    group: &str,
    resource: &str,
    kind: &str,
    id: &str,
    s: &mut Schemas,
) -> (String, Value) {
    let gvk = gvk(group, "v1", kind);
    let schema = s.add::<T>(Some(gvk.clone()));
    let mut create = op(
        id,
        &format!("create a {kind}"),
        "post",
        &gvk,
        vec![],
        json!({
            "201": { "description": "Created", "content": { "application/json": { "schema": schema } } },
        }),
    );
    create["requestBody"] =
        json!({ "content": { "application/json": { "schema": schema } }, "required": true });
    (
        format!("/apis/{group}/v1/{resource}"),
        json!({ "post": create }),
    )
}

fn authorization_v1() -> Value {
    let mut s = Schemas::new();
    let group = "authorization.k8s.io";
    let paths: Map<String, Value> = [
        review_document::<SelfSubjectAccessReview>(
            group,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            "createAuthorizationV1SelfSubjectAccessReview",
            &mut s,
        ),
        review_document::<SelfSubjectRulesReview>(
            group,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            "createAuthorizationV1SelfSubjectRulesReview",
            &mut s,
        ),
    ]
    .into_iter()
    .collect();
    document(&format!("{group}/v1"), Value::Object(paths), s.finish())
}

fn authentication_v1() -> Value {
    let mut s = Schemas::new();
    let group = "authentication.k8s.io";
    let paths: Map<String, Value> = [review_document::<SelfSubjectReview>(
        group,
        "selfsubjectreviews",
        "SelfSubjectReview",
        "createAuthenticationV1SelfSubjectReview",
        &mut s,
    )]
    .into_iter()
    .collect();
    document(&format!("{group}/v1"), Value::Object(paths), s.finish())
}

/// `events.k8s.io/v1`: its `Event`, read only, as core/v1's events.
fn events_v1() -> Value {
    let mut s = Schemas::new();
    let group = "events.k8s.io";
    let event_gvk = gvk(group, "v1", "Event");
    let event = s.add::<EventV1>(Some(event_gvk.clone()));
    let events = s.add_list::<EventV1>(group, "Event");
    let ns_param = path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let paths = json!({
        "/apis/events.k8s.io/v1/events": {
            "get": op("listEventsV1EventForAllNamespaces", "list or watch objects of kind Event", "list", &event_gvk, list_params(), ok(&events)),
        },
        "/apis/events.k8s.io/v1/namespaces/{namespace}/events": {
            "get": op("listEventsV1NamespacedEvent", "list or watch objects of kind Event", "list", &event_gvk, list_params(), ok(&events)),
            "parameters": [ns_param.clone()],
        },
        "/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}": {
            "get": op("readEventsV1NamespacedEvent", "read the specified Event", "get", &event_gvk, vec![], ok(&event)),
            "parameters": [path_param("name", "name of the Event"), ns_param],
        },
    });
    document(&format!("{group}/v1"), paths, s.finish())
}

fn document(group_version: &str, paths: Value, schemas: Value) -> Value {
    json!({
        "openapi": "3.0.0",
        "info": {
            "title": format!("Kubernetes {group_version} as leafgate serves it"),
            "version": env!("CARGO_PKG_VERSION"),
        },
        "paths": paths,
        "components": { "schemas": schemas },
    })
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |c| {
        let mut word = c.to_ascii_uppercase().to_string();
        word.push_str(chars.as_str());
        word
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body(res: Response<Body>) -> Value {
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn the_root_names_each_document_by_its_sha512() {
        let root = body(serve("", None, None)).await;
        let url = root["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let hash = url.strip_prefix("/openapi/v3/api/v1?hash=").unwrap();
        assert_eq!(hash.len(), 128);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        );
        let doc = DOCUMENTS.each.iter().find(|d| d.path == "api/v1").unwrap();
        let digest: String = Sha512::digest(&doc.bytes)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        assert_eq!(hash, digest);
        assert!(root["paths"]["apis/authorization.k8s.io/v1"].is_object());
        assert!(root["paths"]["apis/authentication.k8s.io/v1"].is_object());
        assert!(root["paths"]["apis/events.k8s.io/v1"].is_object());
    }

    #[tokio::test]
    async fn the_current_hash_is_immutable_and_a_stale_one_moves() {
        let hash = DOCUMENTS.each[0].hash.clone();
        let current = serve("api/v1", Some(&format!("hash={hash}")), None);
        assert_eq!(current.status(), 200);
        assert_eq!(
            current.headers()[header::CACHE_CONTROL],
            "public, immutable"
        );
        let stale = serve("api/v1", Some("hash=ABC"), None);
        assert_eq!(stale.status(), 301);
        assert_eq!(
            stale.headers()[header::LOCATION],
            format!("/openapi/v3/api/v1?hash={hash}").as_str()
        );
        let etag = HeaderValue::from_str(&format!("\"{hash}\"")).unwrap();
        assert_eq!(serve("api/v1", None, Some(&etag)).status(), 304);
        assert_eq!(serve("apis/storage.k8s.io/v1", None, None).status(), 404);
    }

    #[tokio::test]
    async fn every_read_only_kind_has_its_paths_and_a_tagged_schema() {
        let root = body(serve("", None, None)).await;
        for gvr in kinds::BUILTIN {
            let at = gvr.path();
            let (prefix, resource) = at.rsplit_once('/').unwrap();
            let document = prefix.trim_start_matches('/');
            let url = root["paths"][document]["serverRelativeURL"]
                .as_str()
                .unwrap_or_else(|| panic!("{document} in {root}"));
            let (path, query) = url
                .trim_start_matches("/openapi/v3/")
                .split_once('?')
                .unwrap();
            let doc = body(serve(path, Some(query), None)).await;
            let paths = &doc["paths"];
            let want = json!({"group": gvr.group, "version": gvr.version(), "kind": gvr.kind});
            for (path, verb) in [
                (at.clone(), "list"),
                (
                    format!("{prefix}/namespaces/{{namespace}}/{resource}"),
                    "list",
                ),
                (
                    format!("{prefix}/namespaces/{{namespace}}/{resource}/{{name}}"),
                    "get",
                ),
            ] {
                let get = &paths[&path]["get"];
                assert_eq!(get["x-kubernetes-action"], verb, "{path}");
                assert_eq!(get["x-kubernetes-group-version-kind"], want, "{path}");
                // Read only: no write is declared.
                for write in ["post", "put", "patch", "delete"] {
                    assert!(paths[&path][write].is_null(), "{path} {write}");
                }
            }
            let tagged = doc["components"]["schemas"]
                .as_object()
                .unwrap()
                .values()
                .filter(|s| s["x-kubernetes-group-version-kind"] == json!([want.clone()]))
                .count();
            assert_eq!(tagged, 1, "{}", gvr.kind);
        }
        let apps = body(serve("apis/apps/v1", None, None)).await;
        let read = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["get"];
        assert_eq!(read["operationId"], "readAppsV1NamespacedDeployment");
        let strategy = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentStrategy"];
        assert!(
            strategy["properties"]["rollingUpdate"]["description"]
                .as_str()
                .unwrap()
                .contains("Rolling update config params"),
            "{strategy}"
        );
    }

    #[tokio::test]
    async fn the_pod_patch_takes_field_validation_and_the_pod_schema_is_tagged() {
        let doc = body(serve("api/v1", None, None)).await;
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        let schemas = &doc["components"]["schemas"];
        let pod = &schemas["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "Pod"}])
        );
        // Real field docs, and every reference resolves inside the document.
        let spec = &schemas["io.k8s.api.core.v1.PodSpec"];
        assert!(
            spec["properties"]["containers"]["description"]
                .as_str()
                .unwrap()
                .contains("containers")
        );
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &r[..r.find('"').unwrap()];
            assert!(schemas[name].is_object(), "unresolved {name}");
        }
        assert!(
            schemas["io.k8s.api.core.v1.Namespace"]["x-kubernetes-group-version-kind"].is_array()
        );
        assert!(schemas["io.k8s.api.core.v1.Event"]["x-kubernetes-group-version-kind"].is_array());
    }

    #[tokio::test]
    async fn the_events_k8s_io_event_is_tagged_and_reads_in_its_own_shape() {
        let doc = body(serve("apis/events.k8s.io/v1", None, None)).await;
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let (name, event) = schemas
            .iter()
            .find(|(_, s)| {
                s["x-kubernetes-group-version-kind"]
                    == json!([{"group": "events.k8s.io", "version": "v1", "kind": "Event"}])
            })
            .unwrap_or_else(|| panic!("no tagged Event among {:?}", schemas.keys()));
        for field in [
            "note",
            "regarding",
            "reportingController",
            "deprecatedCount",
        ] {
            assert!(event["properties"][field].is_object(), "{name}: {field}");
        }
    }
}
