//! The kubelet role: the node API of `pkg/kubelet/server/server.go` for the pods of this
//! simulator's own store, behind TLS that requires a client certificate from the configured
//! CA. Routes and methods as the kubelet registers them (404 for an unknown path, 405 for a
//! wrong method): `/exec` and `/attach` (with and without the pod uid), `/portForward`,
//! `/containerLogs` and `/healthz`. Not served: `/run`, `/pods`, `/stats`, `/logs`,
//! `/metrics` (404 here). The streams themselves run in `remote`, the logs in
//! `api::pod`; this module owns the kubelet's URL shapes, query names
//! (`input`/`output`/`error`/`tty` = `1`, `port`) and its plain-text errors.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::Value;

use crate::api::ApiError;
use crate::query::Query;
use crate::remote::{RemoteCall, RemoteKind};
use crate::server::{Body, Recorded, Shared};
use crate::store::meta;

/// A plain-text answer, as go-restful's `WriteError` and `http.Error` write them.
fn text(code: u16, msg: &str) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(msg.to_string())).boxed())
        .expect("static parts make a valid response")
}

/// Entry point for one request (the client certificate is already verified by TLS).
pub(crate) async fn handle(
    shared: Arc<Shared>,
    cert_user: Option<String>,
    req: Request<Incoming>,
) -> Response<Body> {
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
            user: cert_user,
            connected: req
                .extensions()
                .get::<crate::server::Connected>()
                .map(|c| c.0),
        });
    route(&shared, req).await
}

/// What a path names, before the method is checked.
enum Route {
    Healthz,
    Stream {
        kind: &'static str,
        ns: String,
        pod: String,
        uid: Option<String>,
        container: String,
    },
    PortForward {
        ns: String,
        pod: String,
        uid: Option<String>,
    },
    Logs {
        ns: String,
        pod: String,
        container: String,
    },
}

fn parse(path: &str) -> Option<Route> {
    let segs: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(str::to_string)
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let own = |v: &str| v.to_string();
    Some(match s.as_slice() {
        ["healthz"] | ["healthz", "ping" | "log" | "syncloop"] => Route::Healthz,
        [kind @ ("exec" | "attach"), ns, pod, container] => Route::Stream {
            kind: if *kind == "exec" { "exec" } else { "attach" },
            ns: own(ns),
            pod: own(pod),
            uid: None,
            container: own(container),
        },
        [kind @ ("exec" | "attach"), ns, pod, uid, container] => Route::Stream {
            kind: if *kind == "exec" { "exec" } else { "attach" },
            ns: own(ns),
            pod: own(pod),
            uid: Some(own(uid)),
            container: own(container),
        },
        ["portForward", ns, pod] => Route::PortForward {
            ns: own(ns),
            pod: own(pod),
            uid: None,
        },
        ["portForward", ns, pod, uid] => Route::PortForward {
            ns: own(ns),
            pod: own(pod),
            uid: Some(own(uid)),
        },
        ["containerLogs", ns, pod, container] => Route::Logs {
            ns: own(ns),
            pod: own(pod),
            container: own(container),
        },
        _ => return None,
    })
}

async fn route(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let Some(route) = parse(req.uri().path()) else {
        return text(404, "404 page not found\n");
    };
    let method = req.method().clone();
    let allowed = match route {
        // healthz is a plain mux handler: any method.
        Route::Healthz => true,
        Route::Logs { .. } => method == Method::GET,
        Route::Stream { .. } | Route::PortForward { .. } => {
            method == Method::GET || method == Method::POST
        }
    };
    if !allowed {
        return text(405, "405: Method Not Allowed");
    }
    let q = Query::parse(req.uri().query());
    let pods = crate::resources::find("", "v1", "pods").expect("pods is served");
    match route {
        Route::Healthz => text(200, "ok"),
        Route::Logs { ns, pod, container } => {
            let mut q = q;
            // The legacy `tail` parameter; `tail=all` is no limit.
            if let Some(tail) = q.get("tail").map(str::to_string) {
                q.0.retain(|(k, _)| k != "tailLines" && k != "tail");
                if tail != "all" {
                    q.0.push(("tailLines".into(), tail));
                }
            }
            let opts = match crate::api::pod::log_options(&q) {
                Ok(o) => o,
                Err(e) if e.code == 422 => {
                    return text(422, r#"{"message": "Invalid request."}"#);
                }
                Err(_) => return text(400, r#"{"message": "Unable to decode query."}"#),
            };
            let Ok(obj) = shared.store.get(pods, &ns, &pod) else {
                return text(404, &format!("pod {pod:?} does not exist"));
            };
            if !has_container(&obj, &container) {
                return text(
                    404,
                    &format!("container {container:?} not found in pod {pod:?}"),
                );
            }
            match crate::api::pod::stream_logs(&shared.store, &ns, &pod, &container, opts) {
                Ok(r) => r,
                Err(e) => text(400, &e.message),
            }
        }
        Route::Stream {
            kind,
            ns,
            pod,
            uid,
            container,
        } => {
            let Ok(obj) = shared.store.get(pods, &ns, &pod) else {
                return text(404, "pod does not exist");
            };
            if uid.as_deref().is_some_and(|u| u != meta(&obj, "uid"))
                || !has_container(&obj, &container)
            {
                return text(404, &format!("container not found ({container:?})"));
            }
            // `remotecommand.NewOptions`: only the value "1" turns a stream on.
            let on = |k: &str| q.get(k) == Some("1");
            let kind = if kind == "exec" {
                RemoteKind::Exec {
                    command: q.all("command"),
                }
            } else {
                RemoteKind::Attach
            };
            let call = RemoteCall {
                kind,
                namespace: ns,
                pod,
                container,
                stdin: on("input"),
                stdout: on("output"),
                stderr: on("error"),
                tty: on("tty"),
                pod_object: obj,
            };
            crate::remote::serve(req, call).await.map(|b| b.boxed())
        }
        Route::PortForward { ns, pod, uid } => {
            let obj = match shared.store.get(pods, &ns, &pod) {
                Ok(o) if uid.as_deref().is_none_or(|u| u == meta(&o, "uid")) => o,
                _ => return text(404, "pod not found"),
            };
            let ports = match ports(&q) {
                Ok(p) => p,
                Err(e) => return text(400, &e.message),
            };
            let call = RemoteCall {
                kind: RemoteKind::PortForward { ports },
                namespace: ns,
                pod,
                container: String::new(),
                stdin: false,
                stdout: false,
                stderr: false,
                tty: false,
                pod_object: obj,
            };
            crate::remote::serve(req, call).await.map(|b| b.boxed())
        }
    }
}

/// The `port` query parameter (comma-separated; the WebSocket protocol needs it, SPDY
/// carries ports per stream and ignores it).
fn ports(q: &Query) -> Result<Vec<u16>, ApiError> {
    let mut out = Vec::new();
    for p in q.all("port").iter().flat_map(|p| {
        p.split(',')
            .map(|s| s.trim().to_string())
            .collect::<Vec<_>>()
    }) {
        if p.is_empty() {
            continue;
        }
        out.push(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
            ApiError::new(
                400,
                "BadRequest",
                format!("unable to parse \"{p}\" as a port: invalid port"),
            )
        })?);
    }
    Ok(out)
}

fn has_container(pod: &Value, name: &str) -> bool {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_array))
        .flatten()
        .any(|c| c["name"].as_str() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_as_the_kubelet_registers_them() {
        assert!(matches!(parse("/healthz"), Some(Route::Healthz)));
        assert!(matches!(
            parse("/exec/ns/p/c"),
            Some(Route::Stream {
                kind: "exec",
                uid: None,
                ..
            })
        ));
        assert!(matches!(
            parse("/attach/ns/p/u/c"),
            Some(Route::Stream {
                kind: "attach",
                uid: Some(_),
                ..
            })
        ));
        assert!(matches!(
            parse("/portForward/ns/p"),
            Some(Route::PortForward { uid: None, .. })
        ));
        assert!(matches!(
            parse("/containerLogs/ns/p/c"),
            Some(Route::Logs { .. })
        ));
        assert!(parse("/exec/ns/p").is_none());
        assert!(parse("/containerLogs/ns/p/c/x").is_none());
        assert!(parse("/api/v1/pods").is_none());
    }
}
