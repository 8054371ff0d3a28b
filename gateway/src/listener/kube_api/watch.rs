//! Watches of any resource (pods, events, namespaces), from the leaves' change feeds
//! (`k8s::feed`): no polling, no re-listing. One implementation; a resource says what it
//! watches through [`Resource`] (its feed in a leaf, what the request selects, how one
//! object is written).
//!
//! A watch subscribes to the feed of every leaf its tenant may reach and reads, on each
//! wake, the changes after its cursor in the namespaces it may see (the tenant's, and the
//! request's one if any), in each leaf's order; its selectors then decide, as
//! kube-apiserver's watch cache does, whether a change is an `ADDED`, `MODIFIED` or
//! `DELETED` for it (an object relabelled into or out of a selector enters or leaves). A
//! pod's JSON was serialized once when its leaf sent it; a watcher only writes its own
//! token in.
//!
//! Where it starts:
//! - `sendInitialEvents=true` (kubectl 1.35+'s streamed list, `resourceVersionMatch=
//!   NotOlderThan`): one `ADDED` per selected pod now, then (with `allowWatchBookmarks`) a
//!   `BOOKMARK` annotated `k8s.io/initial-events-end: "true"` carrying the token, then
//!   changes;
//! - no `resourceVersion`, or `0`: the same initial `ADDED`s without the bookmark;
//! - a token (a list's `resourceVersion`, or an event's): exactly the changes after it,
//!   so a pod deleted between a list and its watch gets its `DELETED`; a token older than
//!   the feeds keep (or from an earlier feed) gets kube-apiserver's answer, HTTP 200 and one
//!   `ERROR` event with Status `Expired` `too old resource version: <rv> (<oldest>)`.
//!
//! The token ([`Token`]) is the gateway's own, opaque to clients: per leaf, the feed's
//! epoch and the position of the last change seen in the tenant's namespaces. It moves
//! only with the tenant's own pods. With `allowWatchBookmarks`, a `BOOKMARK` every
//! [`BOOKMARK_EVERY`] and one as `timeoutSeconds` ends the watch.
//!
//! Each watch is a session (`runtime::sessions`): counted against the tenant's watch caps
//! (429 past them), and ended with an `ERROR` event (401, or the RBAC denial) when a reload
//! takes the caller's credential or the namespace away from the tenant. This module reads
//! the feeds only; it never calls a leaf.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;

use super::caller::Caller;
use super::listed::{self, Listed};
use super::query::query_value;
use super::resource::{self, Resource};
use super::token::Token;
use crate::k8s::status::Status;
use crate::k8s::{Change, ChangeKind, Feed};
use crate::listener::client::Client;
use crate::listener::reply;
use crate::listener::sessions::{self, Reach};
use crate::proxy::{Body, InBody};
use crate::runtime::sessions::{Kind, Scope};
use crate::snapshot::Snapshot;

/// The longest a watch stays open without `timeoutSeconds`, as kube-apiserver's
/// `--min-request-timeout` default.
const WATCH_MAX: Duration = Duration::from_secs(1800);
/// How often a watch that allows bookmarks gets one (kube-apiserver's
/// `defaultBookmarkFrequency`).
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// Lines are written in frames of about this size, so a long initial list streams.
const FRAME: usize = 64 * 1024;

/// Where a watch starts.
enum Start {
    /// The selected objects now as `ADDED`, then (if `end_bookmark`) the initial-events-end
    /// bookmark.
    Initial { end_bookmark: bool },
    /// The changes after the position the request's token (as sent) names.
    Resume(Token, String),
    /// The changes from now on (`sendInitialEvents=false` without a token).
    Now,
    /// A `resourceVersion` this gateway never gave: the reason.
    Unknown(String),
}

fn flag(query: Option<&str>, key: &str) -> Result<Option<bool>, String> {
    match query_value(query, key).as_deref() {
        None => Ok(None),
        Some("true" | "1") => Ok(Some(true)),
        Some("false" | "0" | "") => Ok(Some(false)),
        Some(other) => Err(format!("{key}: Invalid value: {other:?}: not a boolean")),
    }
}

/// One leaf the watch reads.
struct Source<T> {
    leaf: Arc<str>,
    feed: Arc<Feed<T>>,
    wake: tokio::sync::watch::Receiver<u64>,
    /// The feed position read up to.
    cursor: u64,
}

/// A watch: `ADDED`, `MODIFIED`, `DELETED` and `BOOKMARK` events, one JSON object a line,
/// each the object or (when the client asked for a Table) a one-row Table.
pub(super) fn watch<W: Resource>(
    req: &Request<InBody>,
    client: &Client,
    snapshot: Arc<Snapshot>,
    caller: &Caller<'_>,
    filter: W,
) -> Response<Body> {
    let query = req.uri().query();
    let (initial, bookmarks) = match (
        flag(query, "sendInitialEvents"),
        flag(query, "allowWatchBookmarks"),
    ) {
        (Ok(i), Ok(b)) => (i, b.unwrap_or(false)),
        (Err(e), _) | (_, Err(e)) => return reply::status(&Status::new(400, e)),
    };
    let rv = query_value(query, "resourceVersion").filter(|v| !v.is_empty() && v != "0");
    let start = match (initial, rv) {
        // A streamed list's initial state is newer than any token it names.
        (Some(true), _) => Start::Initial {
            end_bookmark: bookmarks,
        },
        (None, None) => Start::Initial {
            end_bookmark: false,
        },
        (Some(false), None) => Start::Now,
        (_, Some(rv)) => match Token::parse(&rv) {
            Some(t) => Start::Resume(t, rv),
            None => Start::Unknown(rv),
        },
    };
    let timeout = query_value(query, "timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(WATCH_MAX, |s| Duration::from_secs(s).min(WATCH_MAX));
    let scope = match filter.namespace() {
        Some(ns) => Scope::Namespace(ns.to_string()),
        None => Scope::Tenant(caller.config.namespaces.clone()),
    };
    let reach = Reach { scope, leaf: None };
    let opened = sessions::open(
        client,
        req.headers(),
        &snapshot.config,
        caller.config,
        reach,
        Kind::Watch,
    );
    let session = match opened {
        Ok(s) => s,
        Err(res) => return res,
    };
    let mut sources: Vec<Source<W::Object>> = snapshot
        .leaves
        .iter()
        // A leaf whose `stale = "hide"` hides it while out of sync, as lists do.
        .filter(|(name, leaf)| {
            caller.config.may_reach(name) && !super::stale::hidden(&snapshot, name, leaf)
        })
        .filter_map(|(name, leaf)| {
            let feed = filter.feed(leaf)?;
            Some(Source {
                leaf: name.as_str().into(),
                wake: feed.subscribe(),
                feed,
                cursor: 0,
            })
        })
        .collect();
    let tenant_config = caller.config.clone();
    let tenant = caller.tenant.clone();
    let user = caller.user.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        // The snapshot stays loaded for the watch's life, as for any request.
        let _snapshot = snapshot;
        let caller = Caller {
            user,
            config: &tenant_config,
            tenant,
        };
        let mut w = Watcher {
            caller: &caller,
            filter: &filter,
            token: Token::default(),
            out: Vec::new(),
            tx: &tx,
        };
        let deadline = tokio::time::Instant::now() + timeout;
        if w.start(&mut sources, start).await.is_err() {
            return;
        }
        let mut bookmark =
            tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
        loop {
            tokio::select! {
                _ = woken(&mut sources) => {
                    if w.follow(&mut sources).await.is_err() {
                        return;
                    }
                }
                _ = bookmark.tick(), if bookmarks => {
                    w.bookmark(false);
                    if w.flush().await.is_err() {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    // A clean end; a client that allowed bookmarks learns where it was.
                    if bookmarks {
                        w.bookmark(false);
                        let _ = w.flush().await;
                    }
                    return;
                }
                _ = tx.closed() => return,
                _ = session.token().cancelled() => {
                    // Revoked: the reason as kube-apiserver's ERROR event, then the end.
                    // Shutdown's kill just ends it.
                    if let Some(why) = session.revoked() {
                        let names = filter.names();
                        let status = sessions::revoked_watch(
                            why,
                            &caller.user,
                            (names.group, names.resource),
                            filter.namespace(),
                        );
                        w.error(&status);
                        // A client that reads nothing does not hold the watch open.
                        let _ = tokio::time::timeout(Duration::from_secs(1), w.flush()).await;
                    }
                    return;
                }
            }
        }
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, crate::proxy::BoxError>(Frame::data(b)), rx))
    });
    let mut res = Response::new(StreamBody::new(frames).boxed_unsync());
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Until any source's feed has news (never, without sources).
async fn woken<T>(sources: &mut [Source<T>]) {
    if sources.is_empty() {
        return std::future::pending().await;
    }
    let waits = sources.iter_mut().map(|s| Box::pin(s.wake.changed()));
    // A feed outlives its receivers here (the source holds it): `changed` cannot fail.
    let _ = futures_util::future::select_all(waits).await;
}

/// The client went away.
struct Closed;

/// One watch's writing side.
struct Watcher<'a, W> {
    caller: &'a Caller<'a>,
    filter: &'a W,
    token: Token,
    /// Lines not yet sent.
    out: Vec<u8>,
    tx: &'a tokio::sync::mpsc::Sender<Bytes>,
}

impl<W: Resource> Watcher<'_, W> {
    async fn start(
        &mut self,
        sources: &mut [Source<W::Object>],
        start: Start,
    ) -> Result<(), Closed> {
        let (caller, filter) = (self.caller, self.filter);
        let sees = |ns: &str| resource::sees(caller, filter, ns);
        match start {
            Start::Initial { end_bookmark } => {
                let mut objects = Vec::new();
                for s in sources.iter_mut() {
                    s.wake.mark_unchanged();
                    let view = s.feed.view(sees);
                    s.cursor = view.seq;
                    self.token.set(&s.leaf, view.epoch, view.last);
                    objects.extend(view.objects.into_iter().filter(|o| filter.selects(o)).map(
                        |object| Listed {
                            leaf: s.leaf.clone(),
                            object,
                        },
                    ));
                }
                listed::sort(&mut objects);
                if filter.merges_copies() {
                    objects.dedup_by(|b, a| (a.namespace(), a.name()) == (b.namespace(), b.name()));
                }
                for listed in objects {
                    self.event("ADDED", &listed.leaf, &listed.object).await;
                    if self.out.len() >= FRAME {
                        self.flush().await?;
                    }
                }
                if end_bookmark {
                    self.bookmark(true);
                }
                self.flush().await
            }
            Start::Now => {
                for s in sources.iter_mut() {
                    s.wake.mark_unchanged();
                    let view = s.feed.view(sees);
                    s.cursor = view.seq;
                    self.token.set(&s.leaf, view.epoch, view.last);
                }
                Ok(())
            }
            Start::Resume(from, rv) => {
                let mut gone = false;
                let mut oldest = Token::default();
                for s in sources.iter_mut() {
                    let epoch = s.feed.epoch();
                    let after = match from.get(&s.leaf) {
                        Some((e, seq)) if e == epoch => Some(seq),
                        // A leaf the token does not name: from the feed's beginning.
                        None => Some(0),
                        // Another feed's position (a rebuilt leaf, a restarted gateway).
                        Some(_) => None,
                    };
                    let reachable = s.feed.since(after.unwrap_or(0), sees).map(|_| 0);
                    let held = match (after, reachable) {
                        (Some(_), Ok(_)) => 0,
                        (None, Ok(_)) => {
                            gone = true;
                            0
                        }
                        (_, Err(g)) => {
                            gone = true;
                            g.oldest
                        }
                    };
                    oldest.set(&s.leaf, epoch, held);
                    self.token.set(&s.leaf, epoch, after.unwrap_or(0));
                    s.cursor = after.unwrap_or(0);
                }
                if gone {
                    self.expired(&format!(
                        "too old resource version: {rv} ({})",
                        oldest.encode()
                    ));
                    let _ = self.flush().await;
                    return Err(Closed);
                }
                self.follow(sources).await
            }
            Start::Unknown(rv) => {
                self.expired(&format!(
                    "resourceVersion {rv:?} is not one this gateway gave; list again"
                ));
                let _ = self.flush().await;
                Err(Closed)
            }
        }
    }

    /// Sends every source's changes after its cursor.
    async fn follow(&mut self, sources: &mut [Source<W::Object>]) -> Result<(), Closed> {
        let (caller, filter) = (self.caller, self.filter);
        let sees = |ns: &str| resource::sees(caller, filter, ns);
        for s in sources.iter_mut() {
            // Marked before reading: a change published after the read wakes us again.
            s.wake.mark_unchanged();
            let changes = match s.feed.since(s.cursor, sees) {
                Ok((changes, seq)) => {
                    s.cursor = seq;
                    changes
                }
                Err(gone) => {
                    // Fallen behind what the feed keeps: the client lists again.
                    let rv = self.token.encode();
                    let mut oldest = self.token.clone();
                    oldest.set(&s.leaf, s.feed.epoch(), gone.oldest);
                    self.expired(&format!(
                        "too old resource version: {rv} ({})",
                        oldest.encode()
                    ));
                    let _ = self.flush().await;
                    return Err(Closed);
                }
            };
            let epoch = s.feed.epoch();
            for c in changes {
                self.token.set(&s.leaf, epoch, c.seq);
                if let Some(kind) = seen_as(&c, filter) {
                    // An object modified out of the selection leaves as it was, as
                    // kube-apiserver's watch cache sends it (with the change's version).
                    let object = match (&c.prev, c.kind, kind) {
                        (Some(prev), ChangeKind::Modified, "DELETED") => prev,
                        _ => &c.object,
                    };
                    self.event(kind, &s.leaf, object).await;
                    if self.out.len() >= FRAME {
                        self.flush().await?;
                    }
                }
            }
        }
        self.flush().await
    }

    /// Queues one event for `object` of `leaf`, carrying the current token.
    async fn event(&mut self, kind: &'static str, leaf: &Arc<str>, object: &Arc<W::Object>) {
        let rv = self.token.encode();
        let mut out = std::mem::take(&mut self.out);
        self.filter
            .write(self.caller, kind, leaf, object, &rv, &mut out)
            .await;
        self.out = out;
    }

    /// A `BOOKMARK` at the current token (the streamed list's end when `initial_end`).
    fn bookmark(&mut self, initial_end: bool) {
        let mut metadata = json!({ "resourceVersion": self.token.encode() });
        if initial_end {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let names = self.filter.names();
        let object =
            json!({ "kind": names.kind, "apiVersion": names.api_version, "metadata": metadata });
        self.line(&json!({ "type": "BOOKMARK", "object": object }));
    }

    /// kube-apiserver's `410 Expired` as an `ERROR` event.
    fn expired(&mut self, message: &str) {
        self.error(&Status::with_reason(410, "Expired", message.to_string()));
    }

    fn error(&mut self, status: &Status) {
        self.line(&json!({ "type": "ERROR", "object": status.to_json() }));
    }

    fn line(&mut self, line: &serde_json::Value) {
        resource::push_line(&mut self.out, line);
    }

    async fn flush(&mut self) -> Result<(), Closed> {
        if self.out.is_empty() {
            return Ok(());
        }
        let frame = Bytes::from(std::mem::take(&mut self.out));
        self.tx.send(frame).await.map_err(|_| Closed)
    }
}

/// How a watch with `filter` sees `change`: a modified object that starts matching is
/// `ADDED`, one that stops matching is `DELETED` (as kube-apiserver's watch cache does).
fn seen_as<W: Resource>(change: &Change<W::Object>, filter: &W) -> Option<&'static str> {
    let now = filter.selects(&change.object);
    match (
        change.kind,
        change.prev.as_deref().map(|p| filter.selects(p)),
    ) {
        (ChangeKind::Modified, Some(before)) => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
        (kind, _) => now.then_some(kind.event_type()),
    }
}
