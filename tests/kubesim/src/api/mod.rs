//! The API router: authentication decision, discovery, resource CRUD, list/watch (JSON and
//! Table), pod logs, and the hand-off of exec/attach/portforward to `remote` (or, for pods
//! on a node with a kubelet endpoint, of those and logs to `nodeproxy`). Owns the HTTP
//! shape of every answer; storage rules live in `store`. Custom resources are answered
//! as the apiextensions handler answers them: at the version asked for (`served_as`), no
//! strategic merge patch (415), server-side apply as a merge, a `Status` for a delete,
//! and a `status` subresource only where the CRD declares one.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::mpsc;

use crate::query::Query;
use crate::remote::{RemoteCall, RemoteKind};
use crate::resources::{self, Resource};
use crate::select::Selector;
use crate::server::{Body, Recorded, Shared};
use crate::status::failure;
use crate::store::{Store, StoreError, meta};
use crate::table::{self, Include};

/// An error answered as a `Status`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// The Status's `details`, when the error names what it is about.
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// Adds the Status's `details`.
    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }
    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let (code, reason) = e.code_reason();
        let err = ApiError::new(code, reason, e.to_string());
        match e.details() {
            Some(d) => err.with_details(d),
            None => err,
        }
    }
}

fn json_response(code: u16, v: &Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(v).unwrap_or_default())).boxed())
        .expect("static parts make a valid response")
}

fn error_response(e: &ApiError) -> Response<Body> {
    let mut status = failure(e.code, e.reason, &e.message);
    if let Some(d) = &e.details {
        status["details"] = d.clone();
    }
    json_response(e.code, &status)
}

/// A streamed body and the sender that feeds it.
pub(crate) fn channel_body(content_type: &str) -> (mpsc::Sender<Bytes>, Response<Body>) {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let resp = Response::builder()
        .status(200)
        .header("content-type", content_type)
        .header("cache-control", "no-cache, private")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .expect("static parts make a valid response");
    (tx, resp)
}

/// An object as `res` serves it. A custom resource's versions share one storage and, with
/// no conversion webhook (`conversion.strategy: None`), differ only in `apiVersion`.
pub(crate) fn served_as(res: &Resource, mut obj: Value) -> Value {
    if res.crd && !res.storage && obj.is_object() {
        obj["apiVersion"] = json!(res.api_version());
    }
    obj
}

/// The patch types the apiextensions handler accepts, as its 415 lists them.
const CRD_PATCH_TYPES: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The served resource of `apiVersion` + `kind`.
pub fn resource_of(api_version: &str, kind: &str) -> Result<&'static Resource, ApiError> {
    resources::by_kind(api_version, kind)
        .ok_or_else(|| ApiError::bad(format!("no resource for {api_version} {kind}")))
}

/// The resource, namespace (`default` when a namespaced object names none) and name of a
/// JSON object.
pub fn locate(obj: &Value) -> Result<(&'static Resource, String, String), ApiError> {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("v1");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let res = resource_of(api_version, kind)?;
    let ns = match meta(obj, "namespace") {
        "" if res.namespaced => "default".to_string(),
        ns => ns.to_string(),
    };
    Ok((res, ns, meta(obj, "name").to_string()))
}

pub(crate) mod pod;
mod watch;

/// Test object API: creates `obj`, creating its namespace first when missing.
pub fn create_object(store: &Store, obj: Value) -> Result<Value, ApiError> {
    let (res, ns, _) = locate(&obj)?;
    if res.namespaced {
        let nsr = resources::find("", "v1", "namespaces").expect("namespaces is served");
        if store.get(nsr, "", &ns).is_err() {
            store.create(
                nsr,
                "",
                json!({"metadata": {"name": ns}, "status": {"phase": "Active"}}),
            )?;
        }
    }
    Ok(store.create(res, &ns, obj)?)
}

/// Entry point for one request.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    cert_user: Option<String>,
    req: Request<Incoming>,
) -> Response<Body> {
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let user = match bearer {
        Some(t) => shared.tokens.get(t).cloned(),
        None => cert_user,
    };
    shared
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Recorded {
            method: req.method().to_string(),
            path: req.uri().path().to_string(),
            query: req.uri().query().unwrap_or("").to_string(),
            headers: req
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            user: user.clone(),
            connected: req
                .extensions()
                .get::<crate::server::Connected>()
                .map(|c| c.0),
        });
    let Some(user) = user else {
        return error_response(&ApiError::new(401, "Unauthorized", "Unauthorized"));
    };
    tracing::debug!(%user, method = %req.method(), uri = %req.uri(), "request");
    match route(&shared, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

/// A parsed resource path.
struct Target {
    res: &'static Resource,
    ns: String,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_path(path: &str) -> Result<Option<Target>, ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => ("", *v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return Ok(None),
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (ns.to_string(), rest),
        _ => (String::new(), rest),
    };
    let res = resources::find(group, version, rest[0]).ok_or_else(no_such_resource)?;
    if rest.len() > 3 || (!ns.is_empty() && !res.namespaced) {
        return Err(no_such_resource());
    }
    Ok(Some(Target {
        res,
        ns,
        name: rest.get(1).map(|s| s.to_string()),
        sub: rest.get(2).map(|s| s.to_string()),
    }))
}

async fn route(shared: &Shared, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let path = req.uri().path().to_string();
    let get = req.method() == Method::GET;
    match path.trim_end_matches('/') {
        "/version" if get => {
            return Ok(json_response(
                200,
                &crate::discovery::version_for(&shared.git_version),
            ));
        }
        "/api" if get => {
            let host = req
                .headers()
                .get("host")
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            return Ok(json_response(200, &crate::discovery::api(host)));
        }
        "/apis" if get => {
            return Ok(json_response(200, &crate::discovery::apis(&shared.hidden)));
        }
        "/healthz" | "/readyz" | "/livez" if get => {
            return Ok(Response::new(Full::new(Bytes::from_static(b"ok")).boxed()));
        }
        _ => {}
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", v] if get => {
            return crate::discovery::resources("", v, &shared.hidden)
                .map(|d| json_response(200, &d))
                .ok_or_else(no_such_resource);
        }
        ["apis", g] if get => {
            return crate::discovery::group(g, &shared.hidden)
                .map(|d| json_response(200, &d))
                .ok_or_else(no_such_resource);
        }
        ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"] => {
            if req.method() != Method::POST {
                return Err(method_not_allowed());
            }
            let review = shared.access.review(read_json(req).await?)?;
            return Ok(json_response(201, &review));
        }
        ["apis", g, v] if get => {
            return crate::discovery::resources(g, v, &shared.hidden)
                .map(|d| json_response(200, &d))
                .ok_or_else(no_such_resource);
        }
        _ => {}
    }
    let Some(t) = parse_path(&path)? else {
        return Err(no_such_resource());
    };
    if shared.hidden.contains(&t.res.api_version()) {
        return Err(no_such_resource());
    }
    if t.res.plural == "endpoints" && deprecates_endpoints(&shared.git_version) {
        // kube-apiserver 1.33 and later warn on every use of v1 Endpoints; kubectl prints
        // the warning to stderr (`Warning: v1 Endpoints is deprecated ...`).
        let mut resp = match routed(shared, t, req).await {
            Ok(r) => r,
            Err(e) => error_response(&e),
        };
        resp.headers_mut()
            .insert("warning", http::HeaderValue::from_static(ENDPOINTS_WARNING));
        return Ok(resp);
    }
    routed(shared, t, req).await
}

/// The warning kube-apiserver 1.33+ sends with every v1 Endpoints response.
const ENDPOINTS_WARNING: &str =
    "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"";

/// Whether a server of `git_version` (`v1.37.1-kubesim`) is 1.33 or later.
fn deprecates_endpoints(git_version: &str) -> bool {
    let mut n = git_version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (n.next().unwrap_or(0), n.next().unwrap_or(0)) >= (1, 33)
}

async fn routed(
    shared: &Shared,
    t: Target,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let store = &shared.store;
    let q = Query::parse(req.uri().query());
    let accept = req
        .headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let method = req.method().clone();
    match (t.name.as_deref(), t.sub.as_deref()) {
        (None, _) => match method {
            Method::GET if q.flag("watch").map_err(ApiError::bad)? => {
                let resp = watch::watch(store, &t, &q, &accept)?;
                let path = req.uri().path().to_string();
                shared.watches.send_modify(|started| started.push(path));
                Ok(resp)
            }
            Method::GET => list(store, &t, &q, &accept),
            Method::POST => {
                let body = read_json(req).await?;
                let ns_in_body = meta(&body, "namespace");
                if t.res.namespaced && !ns_in_body.is_empty() && ns_in_body != t.ns {
                    return Err(ApiError::bad(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                let obj = store.create(t.res, &t.ns, body)?;
                Ok(json_response(201, &served_as(t.res, obj)))
            }
            _ => Err(method_not_allowed()),
        },
        (Some(name), sub) => {
            let name = name.to_string();
            match sub {
                Some("status") if t.res.crd && !t.res.subresources.contains(&"status") => {
                    Err(no_such_resource())
                }
                None | Some("status") => {
                    let status_only = sub == Some("status");
                    object(store, &t, &name, status_only, &q, &accept, req).await
                }
                Some("log") if t.res.plural == "pods" && method == Method::GET => {
                    pod::logs(shared, &t.ns, &name, &q).await
                }
                Some(kind @ ("exec" | "attach" | "portforward"))
                    if t.res.plural == "pods"
                        && (method == Method::GET || method == Method::POST) =>
                {
                    let kind = kind.to_string();
                    pod::remote(shared, &t.ns, &name, &kind, &q, req).await
                }
                Some(_) => Err(no_such_resource()),
            }
        }
    }
}

fn no_such_resource() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn method_not_allowed() -> ApiError {
    ApiError::new(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )
}

/// kube-apiserver's `--max-request-body-bytes` default (`MaxRequestBodyBytes`, 3 MiB).
const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The request body as JSON. Past `MAX_REQUEST_BODY_BYTES` it is refused as
/// `limitedReadBody` refuses it (413 RequestEntityTooLarge); nesting deeper than serde's
/// 128 levels is a 400, one of the two answers kube-apiserver's `TestMaxResourceSize`
/// allows for deep nesting under the limit.
async fn read_json(req: Request<Incoming>) -> Result<Value, ApiError> {
    let body = http_body_util::Limited::new(req.into_body(), MAX_REQUEST_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                ApiError::new(
                    413,
                    "RequestEntityTooLarge",
                    format!("Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"),
                )
            } else {
                ApiError::bad(format!("reading the body: {e}"))
            }
        })?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| ApiError::bad(format!("the body is not JSON: {e}")))
}

async fn object(
    store: &Store,
    t: &Target,
    name: &str,
    status_only: bool,
    q: &Query,
    accept: &str,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let ns = t.ns.as_str();
    match req.method().clone() {
        Method::GET => {
            let obj = served_as(t.res, store.get(t.res, ns, name)?);
            match table::wants_table(accept) {
                Some(v) => {
                    let include = Include::parse(q.get("includeObject")).map_err(ApiError::bad)?;
                    let rv = meta(&obj, "resourceVersion").to_string();
                    Ok(json_response(
                        200,
                        &table::table(t.res, v, &[obj], &rv, None, include),
                    ))
                }
                None => Ok(json_response(200, &obj)),
            }
        }
        Method::PUT => {
            let body = read_json(req).await?;
            if meta(&body, "name") != name {
                return Err(ApiError::bad(format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    meta(&body, "name")
                )));
            }
            Ok(json_response(
                200,
                &served_as(t.res, store.update(t.res, ns, name, body, status_only)?),
            ))
        }
        Method::PATCH => {
            let ct = req
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let strategic = match ct.as_str() {
                "application/merge-patch+json" => false,
                "application/strategic-merge-patch+json" if !t.res.crd => true,
                "application/json-patch+json" => {
                    let ops = read_json(req).await?;
                    let obj = store.json_patch(t.res, ns, name, &ops, status_only)?;
                    return Ok(json_response(200, &served_as(t.res, obj)));
                }
                "application/apply-patch+yaml" => {
                    return apply(store, t, name, status_only, q, req).await;
                }
                _ if t.res.crd => {
                    return Err(ApiError::new(
                        415,
                        "UnsupportedMediaType",
                        format!(
                            "the body of the request was in an unknown format - accepted media types include: {CRD_PATCH_TYPES}"
                        ),
                    ));
                }
                other => {
                    return Err(ApiError::new(
                        415,
                        "UnsupportedMediaType",
                        format!(
                            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"
                        ),
                    ));
                }
            };
            let body = read_json(req).await?;
            Ok(json_response(
                200,
                &served_as(
                    t.res,
                    store.patch(t.res, ns, name, &body, strategic, status_only)?,
                ),
            ))
        }
        Method::DELETE if !status_only && t.res.crd => {
            // The apiextensions store does not return the deleted object: a Status names it.
            let gone = store.delete(t.res, ns, name)?;
            Ok(json_response(
                200,
                &crate::status::success(json!({
                    "name": name, "group": t.res.group, "kind": t.res.plural,
                    "uid": gone["metadata"]["uid"],
                })),
            ))
        }
        Method::DELETE if !status_only => Ok(json_response(200, &store.delete(t.res, ns, name)?)),
        _ => Err(method_not_allowed()),
    }
}

/// Server-side apply, approximated: the object is created when missing, otherwise the
/// applied configuration is merged in strategically (as a JSON merge for custom resources,
/// which have no strategic merge). Field ownership is not tracked, so fields dropped from
/// a later apply are kept rather than removed.
async fn apply(
    store: &Store,
    t: &Target,
    name: &str,
    status_only: bool,
    q: &Query,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    if q.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::new(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    let body = read_json(req)
        .await
        .map_err(|e| ApiError::bad(format!("{e} (kubesim reads apply patches written as JSON)")))?;
    let strategic = !t.res.crd;
    match store.get(t.res, &t.ns, name) {
        Ok(_) => Ok(json_response(
            200,
            &served_as(
                t.res,
                store.patch(t.res, &t.ns, name, &body, strategic, status_only)?,
            ),
        )),
        Err(StoreError::NotFound(..)) if !status_only => {
            let mut obj = body;
            obj["metadata"]["name"] = json!(name);
            Ok(json_response(
                201,
                &served_as(t.res, store.create(t.res, &t.ns, obj)?),
            ))
        }
        Err(e) => Err(e.into()),
    }
}

struct Filter {
    labels: Selector,
    fields: Selector,
    plural: &'static str,
}

impl Filter {
    fn parse(q: &Query, res: &Resource) -> Result<Filter, ApiError> {
        let labels = Selector::parse(q.get("labelSelector").unwrap_or(""), false)
            .map_err(|e| ApiError::bad(e.to_string()))?;
        let fields = Selector::parse(q.get("fieldSelector").unwrap_or(""), true)
            .map_err(|e| ApiError::bad(e.to_string()))?;
        for k in fields.keys() {
            if crate::select::field_pointer(res.plural, k).is_none() {
                let message = if res.crd {
                    format!("field label not supported: {k}")
                } else {
                    crate::select::unsupported_field(res.plural, k)
                };
                return Err(ApiError::bad(message));
            }
        }
        Ok(Filter {
            labels,
            fields,
            plural: res.plural,
        })
    }
    fn matches(&self, obj: &Value) -> bool {
        self.labels.matches_labels(obj) && self.fields.matches_fields(self.plural, obj)
    }
}

fn list(store: &Store, t: &Target, q: &Query, accept: &str) -> Result<Response<Body>, ApiError> {
    let filter = Filter::parse(q, t.res)?;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let after = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => {
            let start = b64
                .decode(c)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .ok_or_else(|| ApiError::bad("continue key is not valid: illegal base64 data"))?;
            let crv = start["rv"].as_u64().unwrap_or(0);
            if crv < store.compacted() {
                return Err(ApiError::new(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            let after = start["start"].as_str().unwrap_or("");
            let (ns, name) = after.split_once('/').unwrap_or(("", after));
            Some((ns.to_string(), name.to_string()))
        }
        None => None,
    };
    let limit = q.int("limit").map_err(ApiError::bad)?.filter(|l| *l > 0);
    let (items, more, rv) = store.page(
        t.res,
        &t.ns,
        after
            .as_ref()
            .map(|(ns, name)| (ns.as_str(), name.as_str())),
        limit.map(|l| l as usize),
        |o| filter.matches(o),
    );
    let cont = match items.last() {
        Some(last) if more => {
            let key = json!({"rv": rv, "start": format!("{}/{}", meta(last, "namespace"), meta(last, "name"))});
            Some(b64.encode(key.to_string()))
        }
        _ => None,
    };
    let rv = rv.to_string();
    let items: Vec<Value> = items.into_iter().map(|o| served_as(t.res, o)).collect();
    if let Some(v) = table::wants_table(accept) {
        let include = Include::parse(q.get("includeObject")).map_err(ApiError::bad)?;
        return Ok(json_response(
            200,
            &table::table(t.res, v, &items, &rv, cont.as_deref(), include),
        ));
    }
    let mut metadata = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        metadata["continue"] = json!(c);
    }
    Ok(json_response(
        200,
        &json!({
            "kind": format!("{}List", t.res.kind),
            "apiVersion": t.res.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    ))
}
