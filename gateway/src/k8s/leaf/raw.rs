//! A reflector that keeps a leaf's objects as the leaf sent them: kube-runtime's
//! `watcher(..).default_backoff()` over `DynamicObject`s (everything but `metadata` stays
//! raw JSON, so no field of any Kubernetes version is lost), each object turned into a
//! [`RawObject`] once (`managedFields` stripped, stamped with the leaf), and folded into a
//! [`Sink`] that owns the store (a [`Feed`](crate::k8s::feed::Feed)).
//!
//! The event and namespace reflectors (`events`, `namespaces`) run on it. It
//! must not decide what is kept: bounds and lookups are the sink's; it only calls
//! [`Sink::tick`] every [`TICK`], for bounds that run out with time.

use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tracing::{debug, warn};

use crate::errors::{self, Causes};
use crate::k8s::feed::RawObject;

/// How often a sink's [`Sink::tick`] runs.
pub const TICK: Duration = Duration::from_secs(5);

/// Where a raw reflector's objects go. Calls come from one task, in the watcher's order.
pub trait Sink: Send + 'static {
    /// A full list begins (first start or relist after a failure): the objects follow
    /// through [`Sink::listed`], then [`Sink::relisted`] replaces what was held.
    fn relist_begin(&mut self);
    fn listed(&mut self, object: RawObject);
    fn relisted(&mut self);
    /// An object was added or changed.
    fn applied(&mut self, object: RawObject);
    /// An object was deleted (its last state).
    fn deleted(&mut self, object: RawObject);
    /// Time went by ([`TICK`]): a sink whose objects expire drops them here.
    fn tick(&mut self) {}
}

/// Starts the reflector of `resource` in every namespace of `client`'s cluster on
/// `runtime`; the returned handle stops it.
pub fn start<S: Sink>(
    client: kube::Client,
    resource: ApiResource,
    leaf: &str,
    mut sink: S,
    runtime: &tokio::runtime::Handle,
) -> tokio::task::AbortHandle {
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let leaf = leaf.to_string();
    let task = runtime.spawn(async move {
        futures_util::pin_mut!(stream);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let event = tokio::select! {
                event = stream.next() => match event {
                    Some(event) => event,
                    None => break,
                },
                _ = tick.tick() => {
                    sink.tick();
                    continue;
                }
            };
            let raw = |o: DynamicObject| raw(o, &resource, &leaf);
            match event {
                Ok(Event::Init) => sink.relist_begin(),
                Ok(Event::InitApply(o)) => sink.listed(raw(o)),
                Ok(Event::InitDone) => {
                    sink.relisted();
                    debug!(leaf = %leaf, resource = %resource.plural, "leaf objects listed");
                }
                Ok(Event::Apply(o)) => sink.applied(raw(o)),
                Ok(Event::Delete(o)) => sink.deleted(raw(o)),
                Err(e) => {
                    let reason = errors::describe(&e, Causes::All);
                    warn!(leaf = %leaf, resource = %resource.plural, error = %reason,
                        "leaf watch failed; retrying after backoff");
                }
            }
        }
    });
    task.abort_handle()
}

/// The object as served from `leaf`, `apiVersion` and `kind` set (list items may lack
/// them), without `managedFields` (server-side apply's bookkeeping: bulk nobody reading
/// through leafgate needs).
fn raw(mut object: DynamicObject, resource: &ApiResource, leaf: &str) -> RawObject {
    object.metadata.managed_fields = None;
    let v = serde_json::to_value(&object).unwrap_or(Value::Null);
    RawObject::new(v, &resource.api_version, &resource.kind, leaf)
}
