//! A reflector keeping one kind of a leaf with the leaf's own printed rows: it lists the
//! kind across namespaces as kube-apiserver's `meta.k8s.io/v1` `Table` with
//! `includeObject=Object` (in pages), then watches it the same way from the list's
//! `resourceVersion` (each event's object is a one-row Table), folding each row into the
//! kind's feed as a [`Printed`] (the object without `managedFields`, stamped with the
//! leaf, and its cells).
//!
//! A watch that ends (its `timeoutSeconds`) is resumed from the last version seen; one
//! that fails, or whose version is too old (`410 Gone`), ends in a new list after a
//! backoff (none after a 410), which the feed turns into the differences.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::TryStreamExt;
use http::{Request, header};
use kube::core::WatchEvent;
use serde_json::Value;
use tracing::{debug, warn};

use crate::config::kinds::Gvr;
use crate::errors::{self, Causes};
use crate::k8s::feed::text;
use crate::k8s::feed::{Feed, Printed, RawObject};

/// One kind of one leaf: its objects and the leaf's column definitions for it.
pub struct Kept {
    pub gvr: &'static Gvr,
    pub feed: Arc<Feed<Printed>>,
    columns: Mutex<Arc<Vec<Value>>>,
}

impl Kept {
    pub(super) fn new(gvr: &'static Gvr) -> Kept {
        Kept {
            gvr,
            feed: Arc::new(Feed::default()),
            columns: Mutex::new(Arc::new(Vec::new())),
        }
    }

    /// The leaf's `columnDefinitions` for the kind (empty until it first listed).
    pub fn columns(&self) -> Arc<Vec<Value>> {
        self.columns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many objects it holds, and their size as JSON text (each object and the cells
    /// printed for it): what keeping the kind costs, for `/status` and the metrics.
    pub fn footprint(&self) -> (usize, usize) {
        let all = self.feed.list();
        let bytes = all.iter().map(|p| p.object.bytes() + p.cells_bytes()).sum();
        (all.len(), bytes)
    }

    /// Keeps the column definitions of the leaf's latest Table.
    fn set_columns(&self, columns: Vec<Value>) {
        let mut held = self.columns.lock().unwrap_or_else(PoisonError::into_inner);
        if **held != columns {
            *held = Arc::new(columns);
        }
    }
}

/// What the reflector accepts: a Table (kube-apiserver's print), else the object.
const ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
/// Objects per page of a list.
const PAGE: usize = 500;
/// How long one watch request lasts before it is resumed.
const WATCH_SECONDS: u32 = 290;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Why following the leaf stopped.
enum Stop {
    /// The version is too old: list again at once.
    Gone,
    Failed(kube::Error),
}

/// Lists and watches `kept`'s kind of `client`'s leaf, for ever.
pub async fn reflect(client: kube::Client, kept: Arc<Kept>, leaf: String) {
    let mut delay = Duration::from_secs(1);
    loop {
        let version = match list(&client, &kept, &leaf).await {
            Ok(version) => version,
            Err(e) => {
                failed(&leaf, &kept, &e);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        delay = Duration::from_secs(1);
        match follow(&client, &kept, &leaf, version).await {
            Stop::Gone => {
                debug!(leaf = %leaf, resource = kept.gvr.resource, "watch expired; listing again")
            }
            Stop::Failed(e) => {
                failed(&leaf, &kept, &e);
                tokio::time::sleep(delay).await;
            }
        }
    }
}

fn failed(leaf: &str, kept: &Kept, e: &kube::Error) {
    let reason = errors::describe(e, Causes::All);
    warn!(leaf = %leaf, resource = kept.gvr.resource, error = %reason,
        "leaf watch failed; retrying after backoff");
}

fn get(uri: &str) -> Result<Request<Vec<u8>>, kube::Error> {
    Request::get(uri)
        .header(header::ACCEPT, ACCEPT)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)
}

/// Lists the kind whole (page by page), makes it the feed's objects and the Table's
/// columns the kind's, and returns the list's `resourceVersion`.
async fn list(client: &kube::Client, kept: &Kept, leaf: &str) -> Result<String, kube::Error> {
    let path = kept.gvr.path();
    let mut all = Vec::new();
    let mut next = String::new();
    loop {
        let mut uri = format!("{path}?includeObject=Object&limit={PAGE}");
        if !next.is_empty() {
            uri.push_str("&continue=");
            uri.extend(form_urlencoded::byte_serialize(next.as_bytes()));
        }
        let table: Value = client.request(get(&uri)?).await?;
        kept.set_columns(columns(&table));
        all.extend(rows(&table, kept, leaf).map(Arc::new));
        next = text(&table, "/metadata/continue").to_string();
        if next.is_empty() {
            kept.feed.replace(all);
            return Ok(text(&table, "/metadata/resourceVersion").to_string());
        }
    }
}

/// Follows the kind's changes from `version` until a watch fails or expires.
async fn follow(client: &kube::Client, kept: &Kept, leaf: &str, mut version: String) -> Stop {
    let path = kept.gvr.path();
    loop {
        let uri = format!(
            "{path}?watch=1&includeObject=Object&timeoutSeconds={WATCH_SECONDS}&resourceVersion={}",
            form_urlencoded::byte_serialize(version.as_bytes()).collect::<String>()
        );
        let request = match get(&uri) {
            Ok(r) => r,
            Err(e) => return Stop::Failed(e),
        };
        let events = match client.request_events::<Value>(request).await {
            Ok(events) => events,
            Err(kube::Error::Api(s)) if s.code == 410 => return Stop::Gone,
            Err(e) => return Stop::Failed(e),
        };
        futures_util::pin_mut!(events);
        loop {
            let event = match events.try_next().await {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(e) => return Stop::Failed(e),
            };
            let (table, deleted) = match event {
                WatchEvent::Added(t) | WatchEvent::Modified(t) => (t, false),
                WatchEvent::Deleted(t) => (t, true),
                WatchEvent::Bookmark(b) => {
                    version = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(s) if s.code == 410 => return Stop::Gone,
                WatchEvent::Error(s) => return Stop::Failed(kube::Error::Api(s)),
            };
            if !table["columnDefinitions"]
                .as_array()
                .is_none_or(Vec::is_empty)
            {
                kept.set_columns(columns(&table));
            }
            for printed in rows(&table, kept, leaf) {
                version = printed.object.text("/metadata/resourceVersion").to_string();
                let printed = Arc::new(printed);
                if deleted {
                    kept.feed.delete(printed);
                } else {
                    kept.feed.apply(printed);
                }
            }
        }
        // The watch ended (its timeout): resume from the last version seen.
    }
}

fn columns(table: &Value) -> Vec<Value> {
    table["columnDefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The Table's rows as [`Printed`] objects of `kept`'s kind from `leaf` (a row without an
/// object is skipped: the leaf ignored `includeObject`).
fn rows<'t>(table: &'t Value, kept: &'t Kept, leaf: &'t str) -> impl Iterator<Item = Printed> + 't {
    let rows = table["rows"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    rows.iter().filter_map(move |row| {
        let mut object = row.get("object")?.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        let cells = row["cells"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let object = RawObject::new(object, kept.gvr.api_version, kept.gvr.kind, leaf);
        Some(Printed::new(object, cells))
    })
}
