//! Pod subresources: container defaulting as kube-apiserver does it, `log` with its options,
//! and the hand-off of `exec`/`attach`/`portforward` to `remote`. Does not speak the
//! streaming protocols itself.

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
    store: &Store,
    ns: &str,
    name: &str,
    kind: &str,
    q: &Query,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
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
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::bad(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let flag = |k: &str| q.flag(k).map_err(ApiError::bad);
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

pub(super) async fn logs(
    store: &Store,
    ns: &str,
    name: &str,
    q: &Query,
) -> Result<Response<Body>, ApiError> {
    let pods = resources::find("", "v1", "pods").expect("pods is served");
    let pod = store.get(pods, ns, name)?;
    let container = pick_container(&pod, q.get("container"))?;
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
