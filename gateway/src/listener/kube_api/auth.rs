//! The review APIs `kubectl auth` asks: `SelfSubjectAccessReview` (`can-i`),
//! `SelfSubjectRulesReview` (`can-i --list`) and `SelfSubjectReview` (`whoami`), answered
//! from what this front serves a tenant, never from a leaf.
//!
//! A tenant may read (get, list, watch) pods and events (core/v1 and `events.k8s.io`) in
//! its namespaces, list and watch namespaces and get its own;
//! create (and, for WebSocket clients, get) `pods/exec`, `pods/attach`, `pods/portforward`
//! and get `pods/log` there; create the three reviews; and get the discovery, OpenAPI,
//! version and health paths. Everything else is no, with a reason saying what leafgate
//! serves (kube-apiserver's RBAC gives none on a deny; kubectl prints it after `no - `).
//! A review about a namespace is decided from the tenant's namespace globs alone, so the
//! answer for another tenant's namespace is the same whether it exists or not.
//!
//! Bodies come as JSON or, from client-go >= 1.32, as protobuf (`proto`); answers are JSON,
//! which client-go decodes whatever it sent.

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};

use super::caller::Caller;
use super::proto::{self, Message};
use crate::config::TenantConfig;
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::reply;
use crate::proxy::{Body, InBody};

/// The largest review body read: a review is a few hundred bytes.
const MAX_BODY: usize = 64 * 1024;

const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";

/// The reads a tenant has on its resources.
const READ: &[&str] = &["get", "list", "watch"];
/// Streams are created with POST (SPDY) or opened with GET (WebSocket): both are served.
const STREAM: &[&str] = &["create", "get"];

/// A rule as RBAC writes it (`rbacv1.PolicyRule`, resource form).
struct Rule {
    verbs: &'static [&'static str],
    group: &'static str,
    resources: &'static [&'static str],
}

/// What a tenant may do in each of its namespaces.
const NAMESPACED: &[Rule] = &[
    Rule {
        verbs: READ,
        group: "",
        resources: &["pods", "events"],
    },
    Rule {
        verbs: READ,
        group: "events.k8s.io",
        resources: &["events"],
    },
    Rule {
        verbs: STREAM,
        group: "",
        resources: &["pods/attach", "pods/exec", "pods/portforward"],
    },
    Rule {
        verbs: &["get"],
        group: "",
        resources: &["pods/log"],
    },
];

/// What a tenant may do whatever the namespace: list and watch the namespaces it may see
/// (they hold only its own) and ask the reviews.
const CLUSTER: &[Rule] = &[
    Rule {
        verbs: &["list", "watch"],
        group: "",
        resources: &["namespaces"],
    },
    Rule {
        verbs: &["create"],
        group: AUTHORIZATION,
        resources: &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    },
    Rule {
        verbs: &["create"],
        group: AUTHENTICATION,
        resources: &["selfsubjectreviews"],
    },
];

/// The non-resource paths every caller may get, as kube-apiserver's `system:discovery`
/// and `system:public-info-viewer` roles list them (a trailing `*` is a prefix).
const NON_RESOURCE: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];

/// What leafgate serves, for the reason of a denial.
const SERVED: &str = "leafgate serves get, list and watch on pods and events (core and events.k8s.io), get, list and watch on namespaces and on the read-only kinds of the tenant's resources, create on pods/exec, pods/attach and pods/portforward, and get on pods/log, in the tenant's namespaces";

/// `spec.resourceAttributes`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct ResourceAttributes {
    namespace: String,
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    name: String,
}

/// `spec.nonResourceAttributes`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct NonResourceAttributes {
    path: String,
    verb: String,
}

/// What a `SelfSubjectAccessReview` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    Resource(ResourceAttributes),
    NonResource(NonResourceAttributes),
}

/// `status` of an access review.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decision {
    allowed: bool,
    reason: String,
}

impl Decision {
    fn yes(reason: String) -> Decision {
        Decision {
            allowed: true,
            reason,
        }
    }
    fn no(reason: String) -> Decision {
        Decision {
            allowed: false,
            reason,
        }
    }
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
pub async fn access_review(req: Request<InBody>, caller: &Caller<'_>) -> Response<Body> {
    const KIND: &str = "SelfSubjectAccessReview";
    let body = match read(req, AUTHORIZATION, KIND).await {
        Ok(body) => body,
        Err(refusal) => return reply::status(&refusal),
    };
    let asked = match &body {
        Review::Json(v) => from_json(&v["spec"]),
        Review::Protobuf(raw) => Message::parse(raw)
            .map_err(|e| e.to_string())
            .and_then(|m| from_protobuf(&m)),
    };
    let asked = match asked {
        Ok(Some(asked)) => asked,
        Ok(None) => {
            return reply::status(&Status::new(
                422,
                format!(
                    "{KIND}.{AUTHORIZATION} \"\" is invalid: spec.resourceAttributes: Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified"
                ),
            ));
        }
        Err(why) => return reply::status(&bad_object(KIND, &why)),
    };
    let decision = decide(caller.config, &asked);
    let spec = match &asked {
        Asked::Resource(a) => json!({ "resourceAttributes": {
            "namespace": a.namespace, "verb": a.verb, "group": a.group, "version": a.version,
            "resource": a.resource, "subresource": a.subresource, "name": a.name,
        }}),
        Asked::NonResource(a) => {
            json!({ "nonResourceAttributes": { "path": a.path, "verb": a.verb } })
        }
    };
    created(&json!({
        "kind": KIND,
        "apiVersion": format!("{AUTHORIZATION}/v1"),
        "metadata": { "creationTimestamp": null },
        "spec": spec,
        "status": { "allowed": decision.allowed, "reason": decision.reason },
    }))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`: the rules in
/// `spec.namespace`, as `kubectl auth can-i --list` prints them.
pub async fn rules_review(req: Request<InBody>, caller: &Caller<'_>) -> Response<Body> {
    const KIND: &str = "SelfSubjectRulesReview";
    let namespace = match read(req, AUTHORIZATION, KIND).await {
        Ok(Review::Json(v)) => v["spec"]["namespace"].as_str().unwrap_or("").to_string(),
        // `spec` = 2; in it `namespace` = 1.
        Ok(Review::Protobuf(raw)) => match Message::parse(&raw).and_then(|m| {
            m.message(2)?
                .map_or(Ok(String::new()), |spec| spec.string(1))
        }) {
            Ok(ns) => ns,
            Err(why) => return reply::status(&bad_object(KIND, &why.to_string())),
        },
        Err(refusal) => return reply::status(&refusal),
    };
    let (resource_rules, non_resource_rules) = rules(caller.config, &namespace);
    created(&json!({
        "kind": KIND,
        "apiVersion": format!("{AUTHORIZATION}/v1"),
        "metadata": { "creationTimestamp": null },
        "spec": { "namespace": namespace },
        "status": {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": false,
        },
    }))
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`: who the caller is. The user
/// as the other answers name it (`caller`), the groups kube-apiserver would give it (a
/// client certificate's organizations, and `system:authenticated`), and the tenant as
/// an extra.
pub async fn self_review(
    req: Request<InBody>,
    client: &Client,
    caller: &Caller<'_>,
) -> Response<Body> {
    if let Err(refusal) = read(req, AUTHENTICATION, "SelfSubjectReview").await {
        return reply::status(&refusal);
    }
    // The certificate's organizations when the certificate is what authenticated (the
    // rule `authenticate` applies first), else none.
    let mut groups: Vec<String> = client
        .identity
        .as_ref()
        .filter(|id| {
            !caller.config.client_names.is_empty() && id.is_any_of(&caller.config.client_names)
        })
        .map(|id| id.organizations.clone())
        .unwrap_or_default();
    groups.push("system:authenticated".to_string());
    created(&json!({
        "kind": "SelfSubjectReview",
        "apiVersion": format!("{AUTHENTICATION}/v1"),
        "metadata": { "creationTimestamp": null },
        "status": { "userInfo": {
            "username": caller.user,
            "groups": groups,
            "extra": { "leafgate.io/tenant": [caller.config.name] },
        }},
    }))
}

/// A review's body, decoded as its `Content-Type` says: a JSON value, or the encoded
/// protobuf message (the `raw` of its envelope, parsed where it is used, as its fields
/// borrow these bytes).
enum Review {
    Json(Value),
    Protobuf(Bytes),
}

/// Reads a review's body (POST only), checking it is a `kind` of `group`/v1.
async fn read(req: Request<InBody>, group: &str, kind: &str) -> Result<Review, Status> {
    if req.method() != Method::POST {
        return Err(Status::method_not_allowed());
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let protobuf = match content_type.as_str() {
        JSON | "" => false,
        PROTOBUF => true,
        _ => {
            return Err(Status::with_reason(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format - accepted media types include: {JSON}, {PROTOBUF}"
                ),
            ));
        }
    };
    let bytes = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(Status::with_reason(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {MAX_BODY}"),
            ));
        }
        Err(e) => return Err(Status::new(400, format!("reading the body: {e}"))),
    };
    let want = format!("{group}/v1");
    if !protobuf {
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| bad_object(kind, &format!("the body is not JSON: {e}")))?;
        let api_version = value["apiVersion"].as_str().unwrap_or("");
        let got = value["kind"].as_str().unwrap_or("");
        check_type(api_version, got, &want, kind)?;
        return Ok(Review::Json(value));
    }
    let unknown = proto::unwrap(&bytes).map_err(|e| bad_object(kind, &e.to_string()))?;
    check_type(&unknown.api_version, &unknown.kind, &want, kind)?;
    Ok(Review::Protobuf(bytes.slice_ref(unknown.raw)))
}

/// kube-apiserver's 400 for a body of another type (empty type fields default to the
/// endpoint's, as its decoder does).
fn check_type(
    api_version: &str,
    kind: &str,
    want_version: &str,
    want_kind: &str,
) -> Result<(), Status> {
    if !api_version.is_empty() && api_version != want_version {
        return Err(Status::new(
            400,
            format!(
                "the API version in the data ({api_version}) does not match the expected API version ({want_version})"
            ),
        ));
    }
    if !kind.is_empty() && kind != want_kind {
        return Err(bad_object(want_kind, &format!("got kind {kind:?}")));
    }
    Ok(())
}

fn bad_object(kind: &str, why: &str) -> Status {
    Status::new(
        400,
        format!("the object provided is unrecognized (must be of type {kind}): {why}"),
    )
}

/// The attributes of a JSON `spec`; `None` when it asks neither kind.
fn from_json(spec: &Value) -> Result<Option<Asked>, String> {
    let text = |v: &Value, key: &str| -> Result<String, String> {
        match &v[key] {
            Value::Null => Ok(String::new()),
            Value::String(s) => Ok(s.clone()),
            other => Err(format!("{key}: expected a string, got {other}")),
        }
    };
    let resource = &spec["resourceAttributes"];
    let non_resource = &spec["nonResourceAttributes"];
    match (resource.is_object(), non_resource.is_object()) {
        (true, false) => Ok(Some(Asked::Resource(ResourceAttributes {
            namespace: text(resource, "namespace")?,
            verb: text(resource, "verb")?,
            group: text(resource, "group")?,
            version: text(resource, "version")?,
            resource: text(resource, "resource")?,
            subresource: text(resource, "subresource")?,
            name: text(resource, "name")?,
        }))),
        (false, true) => Ok(Some(Asked::NonResource(NonResourceAttributes {
            path: text(non_resource, "path")?,
            verb: text(non_resource, "verb")?,
        }))),
        _ => Ok(None),
    }
}

/// The attributes of a protobuf `SelfSubjectAccessReview` (`spec` = 2; in it
/// `resourceAttributes` = 1, `nonResourceAttributes` = 2; field numbers from
/// `k8s.io/api/authorization/v1/types.go`).
fn from_protobuf(review: &Message<'_>) -> Result<Option<Asked>, String> {
    let inner = || -> Result<Option<Asked>, proto::ProtoError> {
        let Some(spec) = review.message(2)? else {
            return Ok(None);
        };
        match (spec.message(1)?, spec.message(2)?) {
            (Some(r), None) => Ok(Some(Asked::Resource(ResourceAttributes {
                namespace: r.string(1)?,
                verb: r.string(2)?,
                group: r.string(3)?,
                version: r.string(4)?,
                resource: r.string(5)?,
                subresource: r.string(6)?,
                name: r.string(7)?,
            }))),
            (None, Some(n)) => Ok(Some(Asked::NonResource(NonResourceAttributes {
                path: n.string(1)?,
                verb: n.string(2)?,
            }))),
            _ => Ok(None),
        }
    };
    inner().map_err(|e| e.to_string())
}

/// A review's answer: kube-apiserver answers a create with 201.
fn created(body: &Value) -> Response<Body> {
    reply::json(StatusCode::CREATED, body)
}

/// Whether `rule` grants `verb` on `group`/`resource`.
fn grants(rule: &Rule, verb: &str, group: &str, resource: &str) -> bool {
    rule.group == group && rule.verbs.contains(&verb) && rule.resources.contains(&resource)
}

/// The answer to one access review for `tenant`.
fn decide(tenant: &TenantConfig, asked: &Asked) -> Decision {
    let a = match asked {
        Asked::NonResource(n) => {
            let path = n.path.as_str();
            let listed = NON_RESOURCE.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == *p,
            });
            return if n.verb == "get" && listed {
                Decision::yes(
                    "leafgate serves discovery, OpenAPI, version and health to every tenant".into(),
                )
            } else {
                Decision::no(format!(
                    "leafgate serves only get on the non-resource paths {}",
                    NON_RESOURCE.join(", ")
                ))
            };
        }
        Asked::Resource(a) => a,
    };
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let (verb, group) = (a.verb.as_str(), a.group.as_str());
    if CLUSTER.iter().any(|r| grants(r, verb, group, &resource)) {
        return Decision::yes(format!("leafgate lets every tenant {verb} {resource}"));
    }
    // A namespace by name: the tenant's own, by its globs alone.
    if group.is_empty() && resource == "namespaces" && verb == "get" && !a.name.is_empty() {
        return if tenant.owns(&a.name) {
            Decision::yes(format!(
                "namespace {:?} is tenant {:?}'s",
                a.name, tenant.name
            ))
        } else {
            Decision::no(format!(
                "namespace {:?} is not one of tenant {:?}'s namespaces",
                a.name, tenant.name
            ))
        };
    }
    // A read-only kind the tenant's `resources` name: read, in its namespaces.
    let kind_served = a.subresource.is_empty()
        && READ.contains(&verb)
        && (tenant
            .resources
            .iter()
            .any(|g| g.group == group && g.resource == a.resource)
            || tenant
                .custom
                .iter()
                .any(|c| c.group == group && c.resource == a.resource));
    if !kind_served && !NAMESPACED.iter().any(|r| grants(r, verb, group, &resource)) {
        return Decision::no(format!("{SERVED}; nothing else"));
    }
    if a.namespace.is_empty() {
        // Lists and watches across namespaces are served, holding the tenant's alone.
        return if matches!(verb, "list" | "watch") && a.subresource.is_empty() {
            Decision::yes(format!(
                "leafgate lists {resource} of all of tenant {:?}'s namespaces",
                tenant.name
            ))
        } else {
            Decision::no(format!("{SERVED}: name a namespace"))
        };
    }
    if tenant.owns(&a.namespace) {
        Decision::yes(format!(
            "namespace {:?} is tenant {:?}'s",
            a.namespace, tenant.name
        ))
    } else {
        Decision::no(format!(
            "namespace {:?} is not one of tenant {:?}'s namespaces",
            a.namespace, tenant.name
        ))
    }
}

/// `status.resourceRules` and `status.nonResourceRules` in `namespace`.
fn rules(tenant: &TenantConfig, namespace: &str) -> (Vec<Value>, Vec<Value>) {
    let rule =
        |r: &Rule| json!({ "verbs": r.verbs, "apiGroups": [r.group], "resources": r.resources });
    let mut resource_rules: Vec<Value> = CLUSTER.iter().map(rule).collect();
    if !namespace.is_empty() && tenant.owns(namespace) {
        resource_rules.extend(NAMESPACED.iter().map(rule));
        // The read-only kinds it is served, one rule per group, as RBAC writes a role.
        let mut groups: Vec<&str> = tenant.resources.iter().map(|g| g.group).collect();
        groups.dedup();
        for group in groups {
            let resources: Vec<&str> = tenant
                .resources
                .iter()
                .filter(|g| g.group == group)
                .map(|g| g.resource)
                .collect();
            resource_rules
                .push(json!({ "verbs": READ, "apiGroups": [group], "resources": resources }));
        }
        // And the custom resources, one rule each (at any version their leaves define).
        for c in &tenant.custom {
            resource_rules
                .push(json!({ "verbs": READ, "apiGroups": [c.group], "resources": [c.resource] }));
        }
        resource_rules.push(json!({
            "verbs": ["get"], "apiGroups": [""], "resources": ["namespaces"],
            "resourceNames": [namespace],
        }));
    }
    let non_resource = vec![json!({ "verbs": ["get"], "nonResourceURLs": NON_RESOURCE })];
    (resource_rules, non_resource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listener::kube_api::proto::tests::{envelope, field};

    fn tenant() -> TenantConfig {
        TenantConfig {
            name: "acme".into(),
            namespaces: vec!["apps".into(), "apps-*".into()],
            bandwidth: Default::default(),
            plugins: Default::default(),
            leaves: None,
            tokens: Default::default(),
            client_names: Vec::new(),
            concurrent: Default::default(),
            hosts: None,
            resources: crate::config::kinds::DEFAULT.iter().collect(),
            custom: Vec::new(),
        }
    }

    fn can(ns: &str, verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Decision {
        decide(
            &tenant(),
            &Asked::Resource(ResourceAttributes {
                namespace: ns.into(),
                verb: verb.into(),
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                name: name.into(),
                ..ResourceAttributes::default()
            }),
        )
    }

    #[test]
    fn reads_and_streams_in_the_tenants_namespaces_are_allowed() {
        for (verb, resource, sub) in [
            ("get", "pods", ""),
            ("list", "pods", ""),
            ("watch", "pods", ""),
            ("list", "events", ""),
            ("create", "pods", "exec"),
            ("create", "pods", "attach"),
            ("create", "pods", "portforward"),
            ("get", "pods", "log"),
        ] {
            assert!(
                can("apps-7", verb, "", resource, sub, "").allowed,
                "{verb} {resource}/{sub}"
            );
        }
        assert!(can("apps", "watch", "", "events", "", "").allowed);
        assert!(can("apps", "watch", "events.k8s.io", "events", "", "").allowed);
        assert!(
            !can("other", "list", "events.k8s.io", "events", "", "").allowed,
            "another tenant's namespace"
        );
        assert!(
            can("", "watch", "", "namespaces", "", "").allowed,
            "its own, filtered"
        );
        assert!(
            can("", "list", "", "pods", "", "").allowed,
            "all namespaces, filtered"
        );
        assert!(can("", "list", "", "namespaces", "", "").allowed);
        assert!(can("", "get", "", "namespaces", "", "apps-2").allowed);
        assert!(
            can(
                "",
                "create",
                AUTHORIZATION,
                "selfsubjectaccessreviews",
                "",
                ""
            )
            .allowed
        );
    }

    #[test]
    fn writes_other_resources_and_wildcards_are_denied_with_what_is_served() {
        for (verb, group, resource, sub) in [
            ("delete", "", "pods", ""),
            ("create", "", "pods", ""),
            ("patch", "", "pods", ""),
            ("get", "", "secrets", ""),
            ("delete", "apps", "deployments", ""),
            ("get", "storage.k8s.io", "storageclasses", ""),
            ("*", "", "pods", ""),
            ("get", "*", "*", ""),
            ("create", "", "pods", "eviction"),
            ("get", "", "pods", "status"),
        ] {
            let d = can("apps", verb, group, resource, sub, "");
            assert!(!d.allowed, "{verb} {group}/{resource}/{sub}");
            assert!(
                d.reason.starts_with("leafgate serves get, list and watch"),
                "{}",
                d.reason
            );
        }
        let d = can("", "get", "", "pods", "", "");
        assert!(!d.allowed && d.reason.ends_with("name a namespace"));
        assert!(!can("", "create", "", "pods", "exec", "").allowed);
    }

    #[test]
    fn another_tenants_namespace_is_no_whether_or_not_it_exists() {
        let exists = can("other", "get", "", "pods", "", "");
        let imaginary = can("no-such-ns", "get", "", "pods", "", "");
        assert!(!exists.allowed && !imaginary.allowed);
        assert_eq!(
            exists.reason.replace("other", "X"),
            imaginary.reason.replace("no-such-ns", "X"),
            "the same words either way"
        );
        assert!(!can("", "get", "", "namespaces", "", "other").allowed);
        assert!(!can("other", "create", "", "pods", "exec", "").allowed);
    }

    #[test]
    fn the_read_only_kinds_are_readable_as_the_tenants_resources_say() {
        assert!(can("apps", "list", "apps", "deployments", "", "").allowed);
        assert!(can("", "watch", "apps", "deployments", "", "").allowed);
        assert!(can("apps", "get", "", "services", "", "web").allowed);
        assert!(!can("apps", "delete", "apps", "deployments", "", "web").allowed);
        assert!(!can("apps", "get", "apps", "deployments", "scale", "web").allowed);
        assert!(!can("other", "list", "apps", "deployments", "", "").allowed);
        // Secrets: only named in `resources`.
        assert!(!can("apps", "list", "", "secrets", "", "").allowed);
        let mut opted = tenant();
        opted.resources.push(&crate::config::kinds::SECRETS);
        let asked = Asked::Resource(ResourceAttributes {
            namespace: "apps".into(),
            verb: "list".into(),
            resource: "secrets".into(),
            ..ResourceAttributes::default()
        });
        assert!(decide(&opted, &asked).allowed);
    }

    #[test]
    fn non_resource_paths_follow_the_discovery_roles() {
        let get = |path: &str, verb: &str| {
            decide(
                &tenant(),
                &Asked::NonResource(NonResourceAttributes {
                    path: path.into(),
                    verb: verb.into(),
                }),
            )
            .allowed
        };
        for path in [
            "/version",
            "/healthz",
            "/readyz",
            "/api",
            "/apis/x/v1",
            "/openapi/v3",
        ] {
            assert!(get(path, "get"), "{path}");
        }
        assert!(!get("/metrics", "get"));
        assert!(!get("/version", "post"));
        assert!(!get("/healthzx", "get"));
    }

    #[test]
    fn rules_list_namespaced_grants_only_in_an_owned_namespace() {
        let (owned, non) = rules(&tenant(), "apps");
        let (foreign, _) = rules(&tenant(), "other");
        assert_eq!(foreign.len(), CLUSTER.len());
        // The default kinds' groups: core, apps, batch, discovery.k8s.io,
        // networking.k8s.io, autoscaling, policy.
        assert_eq!(owned.len(), CLUSTER.len() + NAMESPACED.len() + 1 + 7);
        let apps = owned
            .iter()
            .find(|r| r["apiGroups"] == json!(["apps"]))
            .unwrap();
        assert!(
            apps["resources"]
                .as_array()
                .unwrap()
                .contains(&json!("deployments"))
        );
        assert!(!owned.iter().any(|r| {
            r["resources"]
                .as_array()
                .unwrap()
                .contains(&json!("secrets"))
        }));
        assert!(owned.iter().any(|r| r["resourceNames"] == json!(["apps"])));
        assert_eq!(non[0]["nonResourceURLs"][0], "/api");
    }

    #[test]
    fn json_and_protobuf_specs_read_the_same() {
        let spec = json!({"resourceAttributes": {"namespace": "apps", "verb": "get",
                          "resource": "pods", "name": "web"}});
        let from_j = from_json(&spec).unwrap().unwrap();
        let attrs = [
            field(1, b"apps"),
            field(2, b"get"),
            field(5, b"pods"),
            field(7, b"web"),
        ]
        .concat();
        let raw = [field(1, b""), field(2, &field(1, &attrs))].concat();
        let body = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", &raw);
        let unknown = proto::unwrap(&body).unwrap();
        let from_p = from_protobuf(&Message::parse(unknown.raw).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(from_j, from_p);
        assert_eq!(from_json(&json!({})).unwrap(), None);
        assert!(from_json(&json!({"resourceAttributes": {"verb": 3}})).is_err());
        let both = json!({"resourceAttributes": {}, "nonResourceAttributes": {}});
        assert_eq!(from_json(&both).unwrap(), None);
    }
}
