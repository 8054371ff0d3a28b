//! Leader election among leafgate replicas on a `coordination.k8s.io/v1` Lease, the way
//! client-go's `leaderelection` does it: every `retry_period` a follower tries to take the
//! lease once it has seen it unrenewed for `lease_duration` (by its own clock, so skew
//! between replicas does not matter), and the leader renews it. A leader that has not
//! renewed within `renew_deadline` steps down before anyone else may take over, so two
//! replicas never believe they lead at once; a leader that sees another holder steps down
//! at once.
//!
//! Who leads is published on a `watch` channel: writers start when it turns true and drop
//! whatever they have in flight the moment it turns false. This module writes only the
//! Lease; it decides nothing about what the leader writes.
//!
//! kube-runtime 5 has no leader election, and the crates that add one to kube-rs follow
//! older kube and k8s-openapi majors; the protocol is one read and one conditional write,
//! so it is written here against client-go's rules.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{PostParams, ResourceExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::ElectionTimings;

/// The Lease replicas compete for.
pub const LEASE_NAME: &str = "leafgate-leader";

/// Who leads, as this replica last saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leadership {
    /// This replica holds the lease and may write.
    pub leading: bool,
    /// The lease's holder when last read (this replica's identity while it leads).
    pub holder: Option<String>,
    /// The lease's `leaseTransitions` when last read: one more per change of leader.
    pub term: i32,
    /// The last failed call to the API server, until a call succeeds.
    pub error: Option<String>,
}

pub struct Elector {
    api: Api<Lease>,
    identity: String,
    timings: ElectionTimings,
    /// The lease record last read and when it was first seen (client-go's
    /// `observedRecord` / `observedTime`): expiry is judged by this clock, not the
    /// holder's `renewTime`.
    observed: Option<(String, Instant)>,
    state: watch::Sender<Leadership>,
}

impl Elector {
    pub fn new(
        client: kube::Client,
        namespace: &str,
        identity: &str,
        timings: ElectionTimings,
    ) -> (Elector, watch::Receiver<Leadership>) {
        let (state, rx) = watch::channel(Leadership::default());
        let elector = Elector {
            api: Api::namespaced(client, namespace),
            identity: identity.to_string(),
            timings,
            observed: None,
            state,
        };
        (elector, rx)
    }

    /// Campaigns and leads until `stop`; on stop a leader gives the lease up (empties the
    /// holder) so another replica takes over without waiting for it to expire.
    pub async fn run(mut self, stop: CancellationToken) {
        let mut last_renew: Option<Instant> = None;
        loop {
            let leading = last_renew.is_some();
            // A leader's attempt may not outlive its renew deadline: past it, it must
            // already have stopped writing.
            let budget = match last_renew {
                Some(at) => self
                    .timings
                    .renew_deadline
                    .saturating_sub(at.elapsed())
                    .max(Duration::from_millis(1)),
                None => self.timings.retry_period,
            };
            let attempt = tokio::select! {
                _ = stop.cancelled() => break,
                r = tokio::time::timeout(budget, self.try_acquire_or_renew()) => r,
            };
            match attempt {
                Ok(Ok(true)) => {
                    if !leading {
                        info!(identity = %self.identity, "became the leader: this replica writes Nodes and Leases");
                    }
                    last_renew = Some(Instant::now());
                }
                Ok(Ok(false)) => {
                    if leading {
                        warn!(identity = %self.identity, "another replica holds the lease: stepping down");
                    }
                    last_renew = None;
                    self.publish(false);
                }
                Ok(Err(e)) => {
                    let error = e.to_string();
                    self.state.send_modify(|s| s.error = Some(error));
                    warn!(identity = %self.identity, error = %e, "leader election: the API server did not answer");
                }
                Err(_) => {}
            }
            if let Some(at) = last_renew
                && at.elapsed() >= self.timings.renew_deadline
            {
                warn!(identity = %self.identity, "could not renew the lease within the renew deadline: stepping down");
                last_renew = None;
                self.publish(false);
            }
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(self.timings.retry_period) => {}
            }
        }
        if self.state.borrow().leading {
            self.publish(false);
            self.release().await;
        }
    }

    fn publish(&self, leading: bool) {
        self.state.send_if_modified(|s| {
            let changed = s.leading != leading;
            s.leading = leading;
            changed
        });
    }

    /// One round of client-go's `tryAcquireOrRenew`: Ok(true) when this replica holds the
    /// lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let duration = i32::try_from(self.timings.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let current = match self.api.get_opt(LEASE_NAME).await? {
            Some(lease) => lease,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(LEASE_NAME.into()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.identity.clone()),
                        lease_duration_seconds: Some(duration),
                        acquire_time: Some(now.clone()),
                        renew_time: Some(now),
                        lease_transitions: Some(0),
                        ..LeaseSpec::default()
                    }),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => {
                        self.record(Some(self.identity.clone()), 0, true);
                        Ok(true)
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                };
            }
        };
        let spec = current.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let term = spec.lease_transitions.unwrap_or(0);
        let record = current.resource_version().unwrap_or_default();
        let seen_at = match &self.observed {
            Some((rv, at)) if *rv == record => *at,
            _ => {
                let at = Instant::now();
                self.observed = Some((record, at));
                at
            }
        };
        let mine = holder.as_deref() == Some(self.identity.as_str());
        let held_for = spec
            .lease_duration_seconds
            .map_or(self.timings.lease_duration, |s| {
                Duration::from_secs(u64::try_from(s).unwrap_or(0))
            });
        if !mine && holder.is_some() && seen_at.elapsed() < held_for {
            self.record(holder, term, false);
            return Ok(false);
        }
        let mut lease = current;
        let mut next = spec;
        if !mine {
            next.acquire_time = Some(now.clone());
            next.lease_transitions = Some(term + 1);
        }
        next.holder_identity = Some(self.identity.clone());
        next.lease_duration_seconds = Some(duration);
        next.renew_time = Some(now);
        let next_term = next.lease_transitions.unwrap_or(0);
        lease.spec = Some(next);
        // `replace` carries the resourceVersion read above: a replica that raced us gets a
        // 409 and stays a follower.
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.observed = Some((
                    written.resource_version().unwrap_or_default(),
                    Instant::now(),
                ));
                self.record(Some(self.identity.clone()), next_term, true);
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn record(&self, holder: Option<String>, term: i32, leading: bool) {
        self.state.send_if_modified(|s| {
            let next = Leadership {
                leading,
                holder,
                term,
                error: None,
            };
            let changed = *s != next;
            *s = next;
            changed
        });
    }

    /// Empties the holder of a lease this replica holds, so a follower may take it at its
    /// next retry (client-go's `ReleaseOnCancel`).
    async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(LEASE_NAME).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => info!(identity = %self.identity, "released the leader lease"),
            Err(e) => {
                warn!(identity = %self.identity, error = %e, "could not release the leader lease; it expires on its own")
            }
        }
    }
}
