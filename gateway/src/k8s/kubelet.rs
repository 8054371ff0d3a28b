//! The kubelet's node API as the root cluster's API server calls it, and its translation to
//! the leaf cluster's pod subresources.
//!
//! This module owns the routes and their methods exactly as the kubelet serves them
//! (`pkg/kubelet/server/server.go`), the kubelet's query names (`input`, `output`, `error`,
//! `tty` = `"1"`; `port=80,443`; `v1.PodLogOptions`) and the leaf API's
//! (`stdin=true`...; repeated `ports`), so the node-api listener can answer 404, 405 and
//! 400 the way a kubelet does and forward everything else to
//! `/api/v1/namespaces/{ns}/pods/{pod}/{subresource}`. A route's namespace, pod and container
//! are valid Kubernetes names (`super::names`) or the route is the kubelet's 404, so no
//! other name reaches a leaf path. It does no I/O and knows nothing of tenants, leaves or
//! plugins.

use std::fmt;

use http::Method;

use super::names;
use crate::plugins::Verb;

/// A streaming or log call on one pod's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTarget {
    pub namespace: String,
    pub pod: String,
    /// The pod uid when the path carried one; it must match the pod's.
    pub uid: Option<String>,
}

/// One route of the node API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeletRoute {
    Exec {
        target: PodTarget,
        container: String,
    },
    Attach {
        target: PodTarget,
        container: String,
    },
    PortForward {
        target: PodTarget,
    },
    ContainerLogs {
        target: PodTarget,
        container: String,
    },
    Run {
        target: PodTarget,
        container: String,
    },
    /// `GET /pods`: the pods this node runs.
    Pods,
    /// `/healthz` and its `ping`, `log`, `syncloop` checks.
    Healthz,
}

/// Why a request has no route: the kubelet's 404 and 405, and its 404s for a pod or
/// container that cannot exist (a name no Kubernetes object can have), worded as the
/// kubelet words a pod or container it does not run (`pkg/kubelet/server/server.go`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("404 page not found")]
    NotFound,
    /// `containerLogs` words it with the pod's name and a line end; the streaming routes
    /// without either.
    #[error("{}", match logs {
        true => format!("pod {pod:?} does not exist\n"),
        false => "pod does not exist".to_string(),
    })]
    NoSuchPod { pod: String, logs: bool },
    #[error("container {container:?} not found in pod {pod:?}\n")]
    NoSuchContainer { container: String, pod: String },
    #[error("{method} is not allowed on {path}; allowed: {allowed}")]
    MethodNotAllowed {
        method: Method,
        path: String,
        allowed: &'static str,
    },
}

const GET_POST: &[Method] = &[Method::GET, Method::POST];
const GET: &[Method] = &[Method::GET];
const POST: &[Method] = &[Method::POST];

impl KubeletRoute {
    /// The route `path` names, if `method` is one the kubelet serves it with.
    ///
    /// Path segments are taken as they come (the kubelet's router does not decode `%2F`
    /// into a separator either); empty segments never match. Then the names: a namespace
    /// or container that is not a DNS-1123 label, or a pod name that is not a DNS-1123
    /// subdomain (any `%`, `/` or dot segment among them), is [`RouteError::NoSuchPod`] or
    /// [`RouteError::NoSuchContainer`], after the method is checked as the kubelet checks it.
    pub fn parse(method: &Method, path: &str) -> Result<KubeletRoute, RouteError> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(RouteError::NotFound);
        }
        let target = |ns: &str, pod: &str, uid: Option<&str>| PodTarget {
            namespace: ns.to_string(),
            pod: pod.to_string(),
            uid: uid.map(str::to_string),
        };
        let (route, allowed) = match segments.as_slice() {
            ["exec", ns, pod, container] => (
                KubeletRoute::Exec {
                    target: target(ns, pod, None),
                    container: container.to_string(),
                },
                GET_POST,
            ),
            ["exec", ns, pod, uid, container] => (
                KubeletRoute::Exec {
                    target: target(ns, pod, Some(uid)),
                    container: container.to_string(),
                },
                GET_POST,
            ),
            ["attach", ns, pod, container] => (
                KubeletRoute::Attach {
                    target: target(ns, pod, None),
                    container: container.to_string(),
                },
                GET_POST,
            ),
            ["attach", ns, pod, uid, container] => (
                KubeletRoute::Attach {
                    target: target(ns, pod, Some(uid)),
                    container: container.to_string(),
                },
                GET_POST,
            ),
            ["portForward", ns, pod] => (
                KubeletRoute::PortForward {
                    target: target(ns, pod, None),
                },
                GET_POST,
            ),
            ["portForward", ns, pod, uid] => (
                KubeletRoute::PortForward {
                    target: target(ns, pod, Some(uid)),
                },
                GET_POST,
            ),
            ["containerLogs", ns, pod, container] => (
                KubeletRoute::ContainerLogs {
                    target: target(ns, pod, None),
                    container: container.to_string(),
                },
                GET,
            ),
            ["run", ns, pod, container] => (
                KubeletRoute::Run {
                    target: target(ns, pod, None),
                    container: container.to_string(),
                },
                POST,
            ),
            ["run", ns, pod, uid, container] => (
                KubeletRoute::Run {
                    target: target(ns, pod, Some(uid)),
                    container: container.to_string(),
                },
                POST,
            ),
            ["pods"] => (KubeletRoute::Pods, GET),
            ["healthz"] | ["healthz", "ping" | "log" | "syncloop"] => {
                (KubeletRoute::Healthz, GET_POST)
            }
            _ => return Err(RouteError::NotFound),
        };
        if !allowed.contains(method) {
            return Err(RouteError::MethodNotAllowed {
                method: method.clone(),
                path: path.to_string(),
                allowed: allowed_text(allowed),
            });
        }
        route.check_names()?;
        Ok(route)
    }

    /// The route's names as the API validates them; the kubelet's 404 for one that no
    /// pod or container can have.
    fn check_names(&self) -> Result<(), RouteError> {
        let Some(target) = self.target() else {
            return Ok(());
        };
        let container = self.container();
        match names::check_pod_call(&target.namespace, &target.pod, container) {
            Ok(()) => Ok(()),
            Err(e) if e.part == names::Part::Container => Err(RouteError::NoSuchContainer {
                container: e.name,
                pod: target.pod.clone(),
            }),
            Err(_) => Err(RouteError::NoSuchPod {
                pod: target.pod.clone(),
                logs: matches!(self, KubeletRoute::ContainerLogs { .. }),
            }),
        }
    }

    /// The pod this route acts on, if any.
    pub fn target(&self) -> Option<&PodTarget> {
        match self {
            KubeletRoute::Exec { target, .. }
            | KubeletRoute::Attach { target, .. }
            | KubeletRoute::PortForward { target }
            | KubeletRoute::ContainerLogs { target, .. }
            | KubeletRoute::Run { target, .. } => Some(target),
            KubeletRoute::Pods | KubeletRoute::Healthz => None,
        }
    }

    /// What the call does to its pod: what a `pod-router` plugin is told and what the
    /// request metrics count.
    pub fn verb(&self) -> Verb {
        match self {
            KubeletRoute::Exec { .. } | KubeletRoute::Run { .. } => Verb::Exec,
            KubeletRoute::Attach { .. } => Verb::Attach,
            KubeletRoute::PortForward { .. } => Verb::PortForward,
            KubeletRoute::ContainerLogs { .. } => Verb::Logs,
            KubeletRoute::Pods | KubeletRoute::Healthz => Verb::Get,
        }
    }

    /// The container the path names (exec, attach, logs, run).
    pub fn container(&self) -> Option<&str> {
        match self {
            KubeletRoute::Exec { container, .. }
            | KubeletRoute::Attach { container, .. }
            | KubeletRoute::ContainerLogs { container, .. }
            | KubeletRoute::Run { container, .. } => Some(container),
            KubeletRoute::PortForward { .. } | KubeletRoute::Pods | KubeletRoute::Healthz => None,
        }
    }
}

/// A pod subresource of the Kubernetes API (`pods/{name}/{sub}`) the gateway forwards: what
/// it does and the methods it takes (GET for WebSocket, POST for SPDY; logs GET only).
pub fn subresource(sub: &str) -> Option<(Verb, &'static [Method])> {
    const STREAM: &[Method] = &[Method::GET, Method::POST];
    match sub {
        "exec" => Some((Verb::Exec, STREAM)),
        "attach" => Some((Verb::Attach, STREAM)),
        "portforward" => Some((Verb::PortForward, STREAM)),
        "log" => Some((Verb::Logs, &[Method::GET])),
        _ => None,
    }
}

/// A verb as metrics and plugins spell it (`exec`, `attach`, `port-forward`, `logs`, `get`).
pub fn verb_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Exec => "exec",
        Verb::Attach => "attach",
        Verb::PortForward => "port-forward",
        Verb::Logs => "logs",
        Verb::Get => "get",
    }
}

fn allowed_text(methods: &[Method]) -> &'static str {
    match methods {
        [m] if *m == Method::GET => "GET",
        [m] if *m == Method::POST => "POST",
        _ => "GET, POST",
    }
}

/// Why a query cannot be translated: the kubelet's 400 and 422 answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// 400, as `NewOptions` answers.
    #[error("you must specify at least 1 of stdin, stdout, stderr")]
    NoStreams,
    /// 400: a value that does not decode into `v1.PodLogOptions`.
    #[error("Unable to decode query.")]
    Undecodable { param: &'static str, value: String },
    /// 422: decodes, but is not a valid `v1.PodLogOptions`.
    #[error("{0}")]
    Invalid(String),
    /// 400: a port that is not a number in 1..=65535.
    #[error("invalid port {0:?}")]
    Port(String),
}

impl QueryError {
    /// The status a kubelet answers with.
    pub fn status(&self) -> http::StatusCode {
        match self {
            QueryError::Invalid(_) => http::StatusCode::UNPROCESSABLE_ENTITY,
            _ => http::StatusCode::BAD_REQUEST,
        }
    }
}

/// The leaf API's query for one pod subresource, built in the order the parameters came.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LeafQuery(Vec<(&'static str, String)>);

impl LeafQuery {
    fn push(&mut self, key: &'static str, value: impl Into<String>) {
        self.0.push((key, value.into()));
    }

    #[cfg(test)]
    pub fn pairs(&self) -> &[(&'static str, String)] {
        &self.0
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for LeafQuery {
    /// `application/x-www-form-urlencoded`, as the leaf API server reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.0 {
            out.append_pair(k, v);
        }
        f.write_str(&out.finish())
    }
}

fn decode(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Only `"1"` switches a stream on, as the kubelet's `NewOptions` reads its query.
fn flag(params: &[(String, String)], name: &str) -> bool {
    params.iter().any(|(k, v)| k == name && v == "1")
}

/// `exec` and `attach`: `input/output/error/tty=1` become `stdin/stdout/stderr/tty=true`,
/// the container goes into the query, and `command` (exec only) stays repeated in order.
///
/// `tty=1` with `error=1` is accepted as the kubelet accepts it; the leaf's kubelet drops
/// stderr for a terminal the same way ours would have.
pub fn stream_query(
    query: Option<&str>,
    container: &str,
    with_command: bool,
) -> Result<LeafQuery, QueryError> {
    let params = decode(query);
    let (stdin, stdout, stderr, tty) = (
        flag(&params, "input"),
        flag(&params, "output"),
        flag(&params, "error"),
        flag(&params, "tty"),
    );
    if !(stdin || stdout || stderr) {
        return Err(QueryError::NoStreams);
    }
    let mut out = LeafQuery::default();
    out.push("container", container);
    for (on, name) in [
        (stdin, "stdin"),
        (stdout, "stdout"),
        (stderr, "stderr"),
        (tty, "tty"),
    ] {
        if on {
            out.push(name, "true");
        }
    }
    if with_command {
        for (_, command) in params.iter().filter(|(k, _)| k == "command") {
            out.push("command", command.clone());
        }
    }
    Ok(out)
}

/// `portForward`: the kubelet's one comma-joined `port` (or repeated ones) become repeated
/// `ports`. Over SPDY the ports travel per stream and the query may carry none.
pub fn port_forward_query(query: Option<&str>) -> Result<LeafQuery, QueryError> {
    let mut out = LeafQuery::default();
    for (k, v) in decode(query) {
        if k != "port" && k != "ports" {
            continue;
        }
        for port in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match port.parse::<u16>() {
                Ok(p) if p > 0 => out.push("ports", p.to_string()),
                _ => return Err(QueryError::Port(port.to_string())),
            }
        }
    }
    Ok(out)
}

/// `containerLogs`: decoded and checked as the kubelet decodes `v1.PodLogOptions`, then
/// passed on under the same names with the container added.
pub fn logs_query(query: Option<&str>, container: &str) -> Result<LeafQuery, QueryError> {
    let params = decode(query);
    let mut out = LeafQuery::default();
    out.push("container", container);
    let mut since_seconds = None;
    let mut since_time = false;
    for (k, v) in &params {
        match k.as_str() {
            "follow" | "previous" | "timestamps" | "insecureSkipTLSVerifyBackend" => {
                let key = known(k);
                if parse_bool(v).ok_or_else(|| undecodable(key, v))? {
                    out.push(key, "true");
                }
            }
            "sinceSeconds" => {
                let n: i64 = v.parse().map_err(|_| undecodable("sinceSeconds", v))?;
                if n < 1 {
                    return Err(QueryError::Invalid(
                        "sinceSeconds: Invalid value: must be greater than 0".into(),
                    ));
                }
                since_seconds = Some(n);
                out.push("sinceSeconds", n.to_string());
            }
            "sinceTime" => {
                humantime::parse_rfc3339_weak(v).map_err(|_| undecodable("sinceTime", v))?;
                since_time = true;
                out.push("sinceTime", v.clone());
            }
            "tailLines" | "tail" => {
                if k == "tail" && v == "all" {
                    continue;
                }
                let n: i64 = v.parse().map_err(|_| undecodable("tailLines", v))?;
                if n < 0 {
                    return Err(QueryError::Invalid(
                        "tailLines: Invalid value: must be greater than or equal to 0".into(),
                    ));
                }
                out.push("tailLines", n.to_string());
            }
            "limitBytes" => {
                let n: i64 = v.parse().map_err(|_| undecodable("limitBytes", v))?;
                if n < 1 {
                    return Err(QueryError::Invalid(
                        "limitBytes: Invalid value: must be greater than 0".into(),
                    ));
                }
                out.push("limitBytes", n.to_string());
            }
            "stream" => match v.as_str() {
                "All" | "Stdout" | "Stderr" => out.push("stream", v.clone()),
                _ => {
                    return Err(QueryError::Invalid(format!(
                        "stream: Unsupported value: {v:?}: supported values: \"All\", \"Stderr\", \"Stdout\""
                    )));
                }
            },
            _ => {}
        }
    }
    if since_seconds.is_some() && since_time {
        return Err(QueryError::Invalid(
            "sinceTime: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
                .into(),
        ));
    }
    Ok(out)
}

/// `/run`'s `cmd`, split on spaces as the kubelet splits it.
pub fn run_command(query: Option<&str>) -> Vec<String> {
    decode(query)
        .into_iter()
        .find(|(k, _)| k == "cmd")
        .map(|(_, v)| {
            v.split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The leaf API path of a pod subresource, built from the target's names, which both
/// fronts validated before the target was made (a `%`, `/` or dot segment never gets this
/// far: see `super::names`); `debug_assert`ed here.
pub fn leaf_path(target: &PodTarget, subresource: &str) -> String {
    debug_assert!(names::check_pod_call(&target.namespace, &target.pod, None).is_ok());
    format!(
        "/api/v1/namespaces/{}/pods/{}/{subresource}",
        target.namespace, target.pod
    )
}

fn known(k: &str) -> &'static str {
    match k {
        "follow" => "follow",
        "previous" => "previous",
        "timestamps" => "timestamps",
        _ => "insecureSkipTLSVerifyBackend",
    }
}

/// Booleans as Go's `strconv.ParseBool` reads them (the query decoder's rules).
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn undecodable(param: &'static str, value: &str) -> QueryError {
    QueryError::Undecodable {
        param,
        value: value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: Method, path: &str) -> Result<KubeletRoute, RouteError> {
        KubeletRoute::parse(&method, path)
    }

    #[test]
    fn routes_and_methods_are_the_kubelets() {
        let exec = route(Method::POST, "/exec/ns/p/c").unwrap();
        assert_eq!(
            exec,
            KubeletRoute::Exec {
                target: PodTarget {
                    namespace: "ns".into(),
                    pod: "p".into(),
                    uid: None
                },
                container: "c".into()
            }
        );
        let with_uid = route(Method::GET, "/attach/ns/p/u-1/c").unwrap();
        assert_eq!(with_uid.target().unwrap().uid.as_deref(), Some("u-1"));
        assert!(route(Method::GET, "/portForward/ns/p").is_ok());
        assert!(route(Method::POST, "/portForward/ns/p/uid").is_ok());
        assert!(route(Method::GET, "/containerLogs/ns/p/c").is_ok());
        assert!(route(Method::POST, "/run/ns/p/c").is_ok());
        assert!(route(Method::POST, "/run/ns/p/uid/c").is_ok());
        assert_eq!(route(Method::GET, "/pods").unwrap(), KubeletRoute::Pods);
        assert_eq!(
            route(Method::GET, "/healthz/syncloop").unwrap(),
            KubeletRoute::Healthz
        );

        for (method, path) in [
            (Method::POST, "/containerLogs/ns/p/c"),
            (Method::GET, "/run/ns/p/c"),
            (Method::DELETE, "/exec/ns/p/c"),
            (Method::POST, "/pods"),
        ] {
            assert!(
                matches!(
                    route(method.clone(), path),
                    Err(RouteError::MethodNotAllowed { .. })
                ),
                "{method} {path}"
            );
        }
        for path in [
            "/exec/ns/p",
            "/exec/ns//c",
            "/containerLogs/ns/p/uid/c",
            "/stats/summary/x",
            "/",
            "/logs/",
        ] {
            assert_eq!(
                route(Method::GET, path),
                Err(RouteError::NotFound),
                "{path}"
            );
        }
    }

    #[test]
    fn names_no_pod_can_have_are_the_kubelets_404() {
        let no_pod = |path: &str| route(Method::GET, path).unwrap_err();
        assert_eq!(
            no_pod("/containerLogs/team-a/x%2F..%2F..%2Fteam-b%2Fpods%2Fdb-0/app"),
            RouteError::NoSuchPod {
                pod: "x%2F..%2F..%2Fteam-b%2Fpods%2Fdb-0".into(),
                logs: true
            }
        );
        assert_eq!(
            no_pod("/containerLogs/team-a/../app").to_string(),
            "pod \"..\" does not exist\n"
        );
        for path in [
            "/exec/team-a-x%2F../db-0/app",
            "/exec/Team-a/db-0/app",
            "/attach/team-a/./app",
            "/portForward/team-a/web-0%2F..",
            "/portForward/team.a/web-0",
        ] {
            let e = no_pod(path);
            assert!(
                matches!(e, RouteError::NoSuchPod { logs: false, .. }),
                "{path}"
            );
            assert_eq!(e.to_string(), "pod does not exist");
        }
        assert_eq!(
            no_pod("/exec/team-a/web-0/app%2F..").to_string(),
            "container \"app%2F..\" not found in pod \"web-0\"\n"
        );
        // The method is checked first, as the kubelet's router does.
        assert!(matches!(
            route(Method::DELETE, "/exec/team-a/../app"),
            Err(RouteError::MethodNotAllowed { .. })
        ));
        // Dotted pod names are subdomains, and valid.
        assert!(route(Method::GET, "/containerLogs/team-a/web.0/app").is_ok());
    }

    #[test]
    fn exec_query_translates_stream_flags_and_keeps_commands_in_order() {
        let q = stream_query(
            Some("command=sh&command=-c&command=echo+a%26b&input=1&output=1&error=1&tty=1"),
            "app",
            true,
        )
        .unwrap();
        assert_eq!(
            q.to_string(),
            "container=app&stdin=true&stdout=true&stderr=true&tty=true&command=sh&command=-c&command=echo+a%26b"
        );
        // `attach` carries no command even if one is sent.
        let attach = stream_query(Some("output=1&command=x"), "app", false).unwrap();
        assert_eq!(attach.to_string(), "container=app&stdout=true");
    }

    #[test]
    fn only_1_switches_a_stream_on() {
        assert_eq!(
            stream_query(Some("input=true&output=0"), "c", true),
            Err(QueryError::NoStreams)
        );
        assert_eq!(
            stream_query(None, "c", true).unwrap_err().status(),
            http::StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn port_forward_ports_become_repeated() {
        let q = port_forward_query(Some("port=80,443")).unwrap();
        assert_eq!(q.to_string(), "ports=80&ports=443");
        assert_eq!(port_forward_query(None).unwrap().pairs().len(), 0);
        assert_eq!(
            port_forward_query(Some("port=80,http")),
            Err(QueryError::Port("http".into()))
        );
        assert!(port_forward_query(Some("port=0")).is_err());
    }

    #[test]
    fn log_options_decode_as_the_kubelet_decodes_them() {
        let q = logs_query(
            Some("follow=true&timestamps=true&tailLines=3&limitBytes=100&sinceSeconds=60&previous=false"),
            "app",
        )
        .unwrap();
        assert_eq!(
            q.to_string(),
            "container=app&follow=true&timestamps=true&tailLines=3&limitBytes=100&sinceSeconds=60"
        );
        let since = logs_query(Some("sinceTime=2026-11-23T05%3A00%3A00Z"), "c").unwrap();
        assert_eq!(since.get("sinceTime"), Some("2026-11-23T05:00:00Z"));
        assert_eq!(
            logs_query(Some("tail=all"), "c").unwrap().get("tailLines"),
            None
        );
        assert_eq!(
            logs_query(Some("tail=5"), "c").unwrap().get("tailLines"),
            Some("5")
        );

        let bad = logs_query(Some("tailLines=many"), "c").unwrap_err();
        assert_eq!(bad.status(), http::StatusCode::BAD_REQUEST);
        assert_eq!(bad.to_string(), "Unable to decode query.");
        assert!(logs_query(Some("sinceTime=yesterday"), "c").is_err());
        let both =
            logs_query(Some("sinceSeconds=5&sinceTime=2026-11-23T05:00:00Z"), "c").unwrap_err();
        assert_eq!(both.status(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            logs_query(Some("sinceSeconds=0"), "c")
                .unwrap_err()
                .status(),
            http::StatusCode::UNPROCESSABLE_ENTITY
        );
    }

    #[test]
    fn run_splits_cmd_on_spaces() {
        assert_eq!(
            run_command(Some("cmd=ls+-l++%2Ftmp")),
            vec!["ls", "-l", "/tmp"]
        );
        assert!(run_command(None).is_empty());
    }

    #[test]
    fn leaf_paths_name_the_pod_subresource() {
        let t = PodTarget {
            namespace: "team-a".into(),
            pod: "web-0".into(),
            uid: None,
        };
        assert_eq!(
            leaf_path(&t, "exec"),
            "/api/v1/namespaces/team-a/pods/web-0/exec"
        );
    }
}
