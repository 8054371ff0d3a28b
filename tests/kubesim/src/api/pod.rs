//! Pod subresources: container defaulting as kube-apiserver does it, `log` with its options,
//! and the hand-off of `exec`/`attach`/`portforward` to `remote`. A pod whose node has a
//! kubelet endpoint goes to `nodeproxy` instead, with the kubelet's URL and query built
//! here as `strategy.go` builds them. Does not speak the streaming protocols itself.

use super::*;

fn containers(pod: &Value, field: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| c["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The container a pod subresource addresses, defaulted as kube-apiserver does.
fn pick_container(pod: &Value, asked: Option<&str>) -> Result<String, ApiError> {
    let name = meta(pod, "name");
    let main = containers(pod, "containers");
    let init = containers(pod, "initContainers");
    match asked.filter(|c| !c.is_empty()) {
        Some(c) => {
            if main.iter().chain(&init).any(|m| m == c)
                || containers(pod, "ephemeralContainers")
                    .iter()
                    .any(|m| m == c)
            {
                Ok(c.to_string())
            } else {
                Err(ApiError::bad(format!(
                    "container {c} is not valid for pod {name}"
                )))
            }
        }
        None if main.len() == 1 => Ok(main[0].clone()),
        None => {
            let mut msg = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                main.join(" ")
            );
            if !init.is_empty() {
                msg.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            Err(ApiError::bad(msg))
        }
    }
}

pub(super) async fn remote(
    shared: &Shared,
    ns: &str,
    name: &str,
    kind: &str,
    q: &Query,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let store = &shared.store;
    let pods = resources::find("", "v1", "pods").expect("pods is served");
    let pod = store.get(pods, ns, name)?;
    let (container, kind) = match kind {
        "portforward" => {
            let mut ports = Vec::new();
            for p in q
                .all("ports")
                .iter()
                .flat_map(|p| p.split(',').map(str::to_string).collect::<Vec<_>>())
            {
                let p = p.trim();
                if p.is_empty() {
                    continue;
                }
                ports.push(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                    ApiError::bad(format!("invalid port {p:?}: must be an integer in 1-65535"))
                })?);
            }
            (String::new(), RemoteKind::PortForward { ports })
        }
        k => {
            let container = pick_container(&pod, q.get("container"))?;
            if k == "exec" {
                let command = q.all("command");
                if command.is_empty() {
                    return Err(ApiError::bad("you must specify at least 1 command"));
                }
                (container, RemoteKind::Exec { command })
            } else {
                (container, RemoteKind::Attach)
            }
        }
    };
    // kube-apiserver checks the container first, then that there is a node to stream from.
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(ApiError::bad(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let flag = |k: &str| q.flag(k).map_err(ApiError::bad);
    if let Some(ep) = crate::nodeproxy::endpoint(store, &shared.kubelet, node) {
        let ep = ep?;
        // `streamLocation` / `PortForwardLocation` and `streamParams`.
        let mut params: Vec<(&str, String)> = Vec::new();
        let path = match &kind {
            RemoteKind::PortForward { ports } => {
                if !ports.is_empty() {
                    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                    params.push(("port", ports.join(",")));
                }
                format!("/portForward/{ns}/{name}")
            }
            RemoteKind::Exec { .. } | RemoteKind::Attach => {
                for (ours, theirs) in [
                    ("stdin", "input"),
                    ("stdout", "output"),
                    ("stderr", "error"),
                    ("tty", "tty"),
                ] {
                    if flag(ours)? {
                        params.push((theirs, "1".to_string()));
                    }
                }
                let verb = match &kind {
                    RemoteKind::Exec { command } => {
                        params.extend(command.iter().map(|c| ("command", c.clone())));
                        "exec"
                    }
                    _ => "attach",
                };
                format!("/{verb}/{ns}/{name}/{container}")
            }
        };
        let query = crate::http1::encode_query(&params);
        let path_and_query = if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        };
        return crate::nodeproxy::upgrade::proxy(&shared.kubelet, &ep, &path_and_query, req).await;
    }
    let call = RemoteCall {
        kind,
        namespace: ns.to_string(),
        pod: name.to_string(),
        container,
        stdin: flag("stdin")?,
        stdout: flag("stdout")?,
        stderr: flag("stderr")?,
        tty: flag("tty")?,
        pod_object: pod,
    };
    Ok(crate::remote::serve(req, call).await.map(|b| b.boxed()))
}

fn format_line(line: &crate::store::LogLine, timestamps: bool) -> Bytes {
    let mut out = String::new();
    if timestamps {
        out.push_str(&line.at.format(&Rfc3339).unwrap_or_default());
        out.push(' ');
    }
    out.push_str(&line.text);
    out.push('\n');
    Bytes::from(out)
}

/// Validated `PodLogOptions`.
pub(crate) struct LogOptions {
    follow: bool,
    previous: bool,
    timestamps: bool,
    tail: Option<i64>,
    limit: Option<i64>,
    since_secs: Option<i64>,
    since_time: Option<String>,
    since: Option<OffsetDateTime>,
    stream: Option<String>,
}

impl LogOptions {
    /// The query `LogLocation` sends the kubelet for these options (`url.Values.Encode`).
    fn kubelet_query(&self) -> String {
        let mut p: Vec<(&str, String)> = Vec::new();
        for (k, on) in [
            ("follow", self.follow),
            ("previous", self.previous),
            ("timestamps", self.timestamps),
        ] {
            if on {
                p.push((k, "true".to_string()));
            }
        }
        let ints = [
            ("sinceSeconds", self.since_secs),
            ("tailLines", self.tail),
            ("limitBytes", self.limit),
        ];
        p.extend(
            ints.iter()
                .filter_map(|(k, v)| v.map(|v| (*k, v.to_string()))),
        );
        if let Some(t) = &self.since_time {
            p.push(("sinceTime", t.clone()));
        }
        if let Some(s) = &self.stream {
            p.push(("stream", s.clone()));
        }
        crate::http1::encode_query(&p)
    }
}

pub(super) async fn logs(
    shared: &Shared,
    ns: &str,
    name: &str,
    q: &Query,
) -> Result<Response<Body>, ApiError> {
    let store = &shared.store;
    let pods = resources::find("", "v1", "pods").expect("pods is served");
    let pod = store.get(pods, ns, name)?;
    let container = pick_container(&pod, q.get("container"))?;
    let opts = log_options(q)?;
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !node.is_empty()
        && let Some(ep) = crate::nodeproxy::endpoint(store, &shared.kubelet, node)
    {
        let ep = ep?;
        let query = opts.kubelet_query();
        let mut path = format!("/containerLogs/{ns}/{name}/{container}");
        if !query.is_empty() {
            path = format!("{path}?{query}");
        }
        return crate::nodeproxy::logs::proxy(&shared.kubelet, &ep, &path, name).await;
    }
    stream_logs(store, ns, name, &container, opts)
}

/// Reads and validates the log options of a query (400 for what does not parse, 422 for
/// what `ValidatePodLogOptions` refuses).
pub(crate) fn log_options(q: &Query) -> Result<LogOptions, ApiError> {
    let follow = q.flag("follow").map_err(ApiError::bad)?;
    let previous = q.flag("previous").map_err(ApiError::bad)?;
    let timestamps = q.flag("timestamps").map_err(ApiError::bad)?;
    let tail = q.int("tailLines").map_err(ApiError::bad)?;
    let limit = q.int("limitBytes").map_err(ApiError::bad)?;
    let since_secs = q.int("sinceSeconds").map_err(ApiError::bad)?;
    let since_time = q.get("sinceTime").filter(|s| !s.is_empty());
    if since_secs.is_some() && since_time.is_some() {
        return Err(ApiError::new(
            422,
            "Invalid",
            "PodLogOptions \"\" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    }
    for (k, v) in [("tailLines", tail), ("limitBytes", limit)] {
        if v.is_some_and(|v| v < 0 || (k == "limitBytes" && v == 0)) {
            return Err(ApiError::new(
                422,
                "Invalid",
                format!(
                    "PodLogOptions \"\" is invalid: {k}: Invalid value: {}: must be greater than 0",
                    v.unwrap_or(0)
                ),
            ));
        }
    }
    let since = match (since_secs, since_time) {
        (Some(s), _) if s < 1 => {
            return Err(ApiError::new(
                422,
                "Invalid",
                "PodLogOptions \"\" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0",
            ));
        }
        (Some(s), _) => Some(OffsetDateTime::now_utc() - time::Duration::seconds(s)),
        (None, Some(t)) => Some(OffsetDateTime::parse(t, &Rfc3339).map_err(|_| {
            ApiError::bad(format!(
                "sinceTime: Invalid value: {t:?}: parsing time {t:?} as RFC3339"
            ))
        })?),
        (None, None) => None,
    };
    Ok(LogOptions {
        follow,
        previous,
        timestamps,
        tail,
        limit,
        since_secs,
        since_time: since_time.map(str::to_string),
        since,
        stream: q
            .get("stream")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    })
}

/// Streams a container's log from `store` (the container is already checked).
pub(crate) fn stream_logs(
    store: &Store,
    ns: &str,
    name: &str,
    container: &str,
    opts: LogOptions,
) -> Result<Response<Body>, ApiError> {
    let container = container.to_string();
    let LogOptions {
        follow,
        previous,
        timestamps,
        tail,
        limit,
        since,
        ..
    } = opts;
    let Some((lines, mut rx)) = store.logs(ns, name, &container, previous) else {
        return Err(ApiError::bad(format!(
            "previous terminated container \"{container}\" in pod \"{name}\" not found"
        )));
    };
    let mut lines: Vec<_> = lines
        .into_iter()
        .filter(|l| since.is_none_or(|s| l.at >= s))
        .collect();
    if let Some(t) = tail {
        let skip = lines.len().saturating_sub(t as usize);
        lines.drain(..skip);
    }
    let (tx, resp) = channel_body("text/plain");
    let key = (ns.to_string(), name.to_string(), container);
    tokio::spawn(async move {
        let mut left = limit.map(|l| l as usize);
        let send = |b: Bytes, left: &mut Option<usize>| -> Option<Bytes> {
            match left {
                None => Some(b),
                Some(0) => None,
                Some(n) => {
                    let take = b.len().min(*n);
                    *n -= take;
                    Some(b.slice(..take))
                }
            }
        };
        for l in &lines {
            let Some(b) = send(format_line(l, timestamps), &mut left) else {
                return;
            };
            if tx.send(b).await.is_err() {
                return;
            }
        }
        if !follow || previous {
            return;
        }
        loop {
            let item = tokio::select! {
                r = rx.recv() => r,
                _ = tx.closed() => return,
            };
            match item {
                Ok(item) if item.0 == key => {
                    let Some(b) = send(format_line(&item.1, timestamps), &mut left) else {
                        return;
                    };
                    if tx.send(b).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return,
            }
        }
    });
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_defaulting() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}});
        let e = pick_container(&pod, None).unwrap_err();
        assert_eq!(
            e.message,
            "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
        );
        assert_eq!(pick_container(&pod, Some("b")).unwrap(), "b");
        assert_eq!(
            pick_container(&pod, Some("z")).unwrap_err().message,
            "container z is not valid for pod p"
        );
        let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        assert_eq!(pick_container(&one, None).unwrap(), "a");
    }
}
