//! Watches: initial state or history from a resourceVersion, live events filtered by scope
//! and selectors (entering/leaving as ADDED/DELETED), bookmarks, timeouts, 410 as an ERROR
//! event, and Table-shaped events. Owns the event stream only; storage lives in `store`.

use super::*;

pub(super) fn watch(
    store: &Store,
    t: &Target,
    q: &Query,
    accept: &str,
) -> Result<Response<Body>, ApiError> {
    let filter = Filter::parse(q, t.res)?;
    let table_version = table::wants_table(accept);
    let include = Include::parse(q.get("includeObject")).map_err(ApiError::bad)?;
    let bookmarks = q.flag("allowWatchBookmarks").map_err(ApiError::bad)?;
    // Watch-list: the initial state ends with a BOOKMARK annotated `initial-events-end`.
    let initial_end = q.flag("sendInitialEvents").map_err(ApiError::bad)? && bookmarks;
    let timeout = q
        .int("timeoutSeconds")
        .map_err(ApiError::bad)?
        .filter(|t| *t > 0);
    let rv_param = q.get("resourceVersion").unwrap_or("");
    let res = t.res;
    let ns = t.ns.clone();
    let in_scope = move |o: &Value| ns.is_empty() || meta(o, "namespace") == ns;
    // The initial events: synthetic ADDED for "" and "0", history after a given version.
    // The version the initial events bring the watcher to.
    let start_rv;
    #[allow(clippy::type_complexity)]
    let (initial, live, gone): (
        Vec<(&'static str, Value, Option<Value>)>,
        _,
        Option<StoreError>,
    ) = if rv_param.is_empty() || rv_param == "0" {
        let (items, rv, rx) = store.snapshot(res, &t.ns);
        start_rv = rv;
        (
            items.into_iter().map(|o| ("ADDED", o, None)).collect(),
            Some(rx),
            None,
        )
    } else {
        let rv: u64 = rv_param
            .parse()
            .map_err(|_| ApiError::bad(format!("resourceVersion: Invalid value: {rv_param:?}")))?;
        start_rv = rv;
        match store.watch_from(res.plural, rv) {
            Ok((past, rx)) => (
                past.into_iter()
                    .map(|e| (e.kind, e.object, e.prev))
                    .collect(),
                Some(rx),
                None,
            ),
            Err(e) => (Vec::new(), None, Some(e)),
        }
    };
    let matches = move |o: &Value| in_scope(o) && filter.matches(o);
    let (tx, resp) = channel_body("application/json");
    let store = store.clone();
    tokio::spawn(async move {
        let mut first = true;
        let encode = |kind: &str, obj: &Value, first: &mut bool| -> Bytes {
            let served;
            // A custom resource watched at a version other than its stored one.
            let obj = if res.crd && !res.storage && kind != "ERROR" && kind != "BOOKMARK" {
                served = served_as(res, obj.clone());
                &served
            } else {
                obj
            };
            let object = match table_version {
                Some(v) if kind != "ERROR" && kind != "BOOKMARK" => {
                    let mut t = table::table(
                        res,
                        v,
                        std::slice::from_ref(obj),
                        meta(obj, "resourceVersion"),
                        None,
                        include,
                    );
                    if !*first {
                        t["columnDefinitions"] = json!([]);
                    }
                    *first = false;
                    t
                }
                _ => obj.clone(),
            };
            let mut line =
                serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
            line.push(b'\n');
            Bytes::from(line)
        };
        if let Some(e) = gone {
            let (code, reason) = e.code_reason();
            let _ = tx
                .send(encode(
                    "ERROR",
                    &failure(code, reason, &e.to_string()),
                    &mut first,
                ))
                .await;
            return;
        }
        let mut last_rv = start_rv;
        for (kind, obj, prev) in initial {
            if let Ok(rv) = meta(&obj, "resourceVersion").parse::<u64>() {
                last_rv = last_rv.max(rv);
            }
            let Some(kind) = seen_as(kind, &obj, prev.as_ref(), &matches) else {
                continue;
            };
            if tx.send(encode(kind, &obj, &mut first)).await.is_err() {
                return;
            }
        }
        let Some(mut rx) = live else { return };
        if initial_end {
            let bm = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": {
                "resourceVersion": last_rv.to_string(),
                "annotations": {"k8s.io/initial-events-end": "true"}}});
            if tx.send(encode("BOOKMARK", &bm, &mut first)).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|s| tokio::time::Instant::now() + Duration::from_secs(s as u64));
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            let ev = tokio::select! {
                ev = rx.recv() => ev,
                _ = tx.closed() => return,
                _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => return,
                _ = tick.tick(), if bookmarks => {
                    let rv = store.resource_version();
                    if rv != last_rv {
                        last_rv = rv;
                        let bm = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": {"resourceVersion": rv.to_string()}});
                        if tx.send(encode("BOOKMARK", &bm, &mut first)).await.is_err() {
                            return;
                        }
                    }
                    continue;
                }
            };
            match ev {
                Ok(ev) => {
                    if ev.resource != res.plural {
                        continue;
                    }
                    let Some(kind) = seen_as(ev.kind, &ev.object, ev.prev.as_ref(), &matches)
                    else {
                        continue;
                    };
                    last_rv = ev.rv;
                    if tx.send(encode(kind, &ev.object, &mut first)).await.is_err() {
                        return;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    let e = StoreError::Gone(last_rv, store.compacted());
                    let _ = tx
                        .send(encode(
                            "ERROR",
                            &failure(410, "Expired", &e.to_string()),
                            &mut first,
                        ))
                        .await;
                    return;
                }
                Err(_) => return,
            }
        }
    });
    Ok(resp)
}

/// How a watcher with a selector sees an event: a MODIFIED object that starts matching is
/// ADDED, one that stops matching is DELETED (as kube-apiserver's watch cache does).
fn seen_as(
    kind: &'static str,
    obj: &Value,
    prev: Option<&Value>,
    matches: &impl Fn(&Value) -> bool,
) -> Option<&'static str> {
    let now = matches(obj);
    match (kind, prev.map(matches)) {
        ("MODIFIED", Some(before)) => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
        (kind, _) => now.then_some(kind),
    }
}
