//! The open long-lived calls of every tenant (kube-api watches, exec/attach/port-forward
//! streams, log follows), so that revocation reaches them and caps count them.
//!
//! A call [`Sessions::open`]s a [`Session`] before it starts: that counts it against its
//! tenant's `[tenant.concurrent]` caps (refused past one) and records who it is for (the
//! tenant, how the caller authenticated, the namespace and leaf it reaches) next to a
//! cancellation token of its own, a child of the gateway's `kill`. Dropping the session
//! takes it out. After each reload's snapshot swap the gateway calls [`Sessions::revoke`]:
//! every session the new config no longer allows (its token or client name gone or moved
//! to another tenant, its namespace or leaf out of the tenant's) is cancelled with the
//! reason, and the call ends itself (a watch with an `ERROR` event, a stream or follow by
//! closing).
//!
//! It only decides and signals; it writes nothing to any connection. Tokens are kept as
//! digests, never in clear.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::config::{Cap, Concurrency, Config, ListenerKind, TenantConfig, TokenDigest};
use crate::metrics::{Metrics, SessionCapLabels, SessionLabels};

/// What kind of long-lived call a session is; each has its own cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A kube-api pod watch.
    Watch,
    /// exec, attach or port-forward, spliced.
    Stream,
    /// A log call with `follow`.
    LogFollow,
}

impl Kind {
    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            Kind::Watch => "watch",
            Kind::Stream => "stream",
            Kind::LogFollow => "log_follow",
        }
    }

    /// What kubectl users call it, for the 429's message.
    pub const fn plural(self) -> &'static str {
        match self {
            Kind::Watch => "watches",
            Kind::Stream => "exec, attach and port-forward streams",
            Kind::LogFollow => "log follows",
        }
    }

    /// Its place in a per-kind count.
    const fn index(self) -> usize {
        match self {
            Kind::Watch => 0,
            Kind::Stream => 1,
            Kind::LogFollow => 2,
        }
    }

    fn cap(self, caps: &Concurrency) -> Cap {
        match self {
            Kind::Watch => caps.watches,
            Kind::Stream => caps.streams,
            Kind::LogFollow => caps.log_follows,
        }
    }
}

/// How the caller was let in, as a reload re-checks it.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// kube-api: a bearer token from the tenant's `tokens_file` (its SHA-256).
    Token(TokenDigest),
    /// kube-api: a client certificate, by the tenant's `client_names` entry it matched.
    ClientName(String),
    /// node-api: the caller is the root cluster (or whoever its certificate names), and
    /// the tenant is whoever owns the pod's namespace.
    NodeApi(NodeCaller),
}

/// A node-api caller as its listener let it in: its certificate's subject, and whether
/// an `allowed_clients` entry named it (else a SubjectAccessReview at the root allowed it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCaller {
    pub common_name: Option<String>,
    pub organizations: Vec<String>,
    pub by_name: bool,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Token(_) => f.write_str("Token(<digest>)"),
            Credential::ClientName(n) => write!(f, "ClientName({n:?})"),
            Credential::NodeApi(caller) => write!(f, "NodeApi({caller:?})"),
        }
    }
}

/// What a session reaches: one namespace, or (a watch of every namespace) all of the
/// tenant's; and the leaf, when it goes to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One namespace.
    Namespace(String),
    /// Every namespace the tenant's `namespaces` patterns (as they were) cover.
    Tenant(Vec<String>),
}

/// One long-lived call about to start.
#[derive(Debug, Clone)]
pub struct Opening {
    pub tenant: String,
    pub credential: Credential,
    pub scope: Scope,
    /// The leaf it goes to; `None` for a watch, which reads the stores of every leaf the
    /// tenant may reach (`leaves` keeps what those were).
    pub leaf: Option<String>,
    /// The tenant's `leaves` when the call started (what a watch reads).
    pub leaves: Option<Vec<String>>,
    /// The connection it came on: listener and peer.
    pub connection: (Arc<str>, SocketAddr),
    pub kind: Kind,
}

/// Why a session was ended by a reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// The token or client name no longer authenticates as the tenant (or the tenant is
    /// gone), or the node-api listener no longer lets the certificate in: a 401.
    Unauthenticated,
    /// The tenant no longer owns the namespace (`None`: one of the namespaces a
    /// cluster-wide watch covered) or may no longer reach the leaf: a 403.
    Forbidden {
        namespace: Option<String>,
        leaf: Option<String>,
    },
}

/// A cap reached: which one, for the 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capped {
    pub kind: Kind,
    /// `true`: the connection's cap; `false`: the tenant's.
    pub per_connection: bool,
    pub limit: u32,
}

struct Entry {
    opening: Opening,
    state: Arc<State>,
}

/// What a session and its registry entry share.
struct State {
    cancel: CancellationToken,
    why: OnceLock<Revoked>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: HashMap<u64, Entry>,
    /// What is open, counted per tenant and per its connections, so a cap is checked
    /// without reading every open session: one tenant holding thousands must not slow
    /// another's next exec, under the registry's one lock.
    counts: HashMap<String, TenantCounts>,
}

/// One tenant's open sessions, by kind (`Kind::index`).
#[derive(Default)]
struct TenantCounts {
    all: [u32; 3],
    by_connection: HashMap<(Arc<str>, SocketAddr), [u32; 3]>,
}

impl Inner {
    /// How many sessions like `o` its tenant has open, in all and on `o`'s connection.
    fn open_like(&self, o: &Opening) -> (u32, u32) {
        let Some(tenant) = self.counts.get(&o.tenant) else {
            return (0, 0);
        };
        let kind = o.kind.index();
        let on_connection = tenant
            .by_connection
            .get(&o.connection)
            .map_or(0, |c| c[kind]);
        (tenant.all[kind], on_connection)
    }

    fn add(&mut self, id: u64, entry: Entry) {
        let o = &entry.opening;
        let tenant = match self.counts.get_mut(&o.tenant) {
            Some(t) => t,
            None => self.counts.entry(o.tenant.clone()).or_default(),
        };
        let kind = o.kind.index();
        tenant.all[kind] += 1;
        tenant
            .by_connection
            .entry(o.connection.clone())
            .or_default()[kind] += 1;
        self.open.insert(id, entry);
    }

    fn remove(&mut self, id: u64) {
        let Some(entry) = self.open.remove(&id) else {
            return;
        };
        let o = &entry.opening;
        let Some(tenant) = self.counts.get_mut(&o.tenant) else {
            return;
        };
        let kind = o.kind.index();
        tenant.all[kind] -= 1;
        if let Some(c) = tenant.by_connection.get_mut(&o.connection) {
            c[kind] -= 1;
            if *c == [0; 3] {
                tenant.by_connection.remove(&o.connection);
            }
        }
        if tenant.all == [0; 3] {
            self.counts.remove(&o.tenant);
        }
    }
}

/// The registry of open sessions; one per gateway, in `Shared`.
#[derive(Default)]
pub struct Sessions {
    inner: Arc<Mutex<Inner>>,
}

/// An open long-lived call: its cancellation token, cancelled when a reload revokes it
/// or when the gateway's `kill` fires. Dropping it takes it out of the registry.
pub struct Session {
    id: u64,
    state: Arc<State>,
    registry: Arc<Mutex<Inner>>,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // The registry stays consistent under a panic elsewhere: every change is one insert
    // or remove.
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sessions {
    /// Registers `opening` under `caps` (its tenant's): the session, or the cap it would
    /// pass (counted in `leafgate_sessions_capped_total`). Its token is a child of `kill`.
    pub fn open(
        &self,
        opening: Opening,
        caps: &Concurrency,
        kill: &CancellationToken,
        metrics: &Metrics,
    ) -> Result<Session, Capped> {
        let cap = opening.kind.cap(caps);
        let mut inner = lock(&self.inner);
        let (tenant_open, connection_open) = inner.open_like(&opening);
        let capped = if connection_open >= cap.per_connection {
            Some(Capped {
                kind: opening.kind,
                per_connection: true,
                limit: cap.per_connection,
            })
        } else if tenant_open >= cap.total {
            Some(Capped {
                kind: opening.kind,
                per_connection: false,
                limit: cap.total,
            })
        } else {
            None
        };
        if let Some(capped) = capped {
            drop(inner);
            metrics
                .sessions
                .capped
                .get_or_create(&SessionCapLabels {
                    tenant: opening.tenant.clone(),
                    kind: opening.kind.label(),
                    cap: if capped.per_connection {
                        "connection"
                    } else {
                        "tenant"
                    },
                })
                .inc();
            return Err(capped);
        }
        let id = inner.next;
        inner.next += 1;
        let state = Arc::new(State {
            cancel: kill.child_token(),
            why: OnceLock::new(),
        });
        inner.add(
            id,
            Entry {
                opening,
                state: state.clone(),
            },
        );
        Ok(Session {
            id,
            state,
            registry: self.inner.clone(),
        })
    }

    /// After a snapshot swap: cancels every session `config` no longer allows, counting
    /// each in `leafgate_revoked_total`. Returns how many.
    pub fn revoke(&self, config: &Config, metrics: &Metrics) -> usize {
        let inner = lock(&self.inner);
        // Every token hashed once, not once per session.
        let mut by_digest: HashMap<TokenDigest, &TenantConfig> = HashMap::new();
        if inner
            .open
            .values()
            .any(|e| matches!(e.opening.credential, Credential::Token(_)))
        {
            // The first tenant holding a token wins, as the kube-api front finds it.
            for t in config.tenants.iter().rev() {
                by_digest.extend(t.tokens.digests().map(|d| (d, t)));
            }
        }
        let mut ended = 0;
        for e in inner.open.values() {
            if e.state.cancel.is_cancelled() {
                continue;
            }
            let Some(why) = verdict(&e.opening, config, &by_digest) else {
                continue;
            };
            tracing::info!(
                tenant = %e.opening.tenant,
                kind = e.opening.kind.label(),
                reason = ?why,
                "reload revoked an open session"
            );
            let _ = e.state.why.set(why);
            e.state.cancel.cancel();
            metrics
                .sessions
                .revoked
                .get_or_create(&SessionLabels {
                    tenant: e.opening.tenant.clone(),
                    kind: e.opening.kind.label(),
                })
                .inc();
            ended += 1;
        }
        ended
    }

    /// How many sessions are open now.
    pub fn len(&self) -> usize {
        lock(&self.inner).open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why `config` no longer allows `o`, if it does not; `by_digest` maps every token's
/// digest to the tenant that holds it.
fn verdict(
    o: &Opening,
    config: &Config,
    by_digest: &HashMap<TokenDigest, &TenantConfig>,
) -> Option<Revoked> {
    let tenants = &config.tenants;
    let now: Option<&TenantConfig> = match &o.credential {
        // As the kube-api front authenticates: the first tenant that holds it.
        Credential::Token(digest) => by_digest.get(digest).copied(),
        Credential::ClientName(name) => tenants.iter().find(|t| t.client_names.contains(name)),
        // As the node-api front lets the caller in, then picks the tenant: the first that
        // owns the namespace.
        Credential::NodeApi(caller) => {
            if let Some(why) = node_caller_verdict(caller, &o.connection.0, config) {
                return Some(why);
            }
            match &o.scope {
                Scope::Namespace(ns) => tenants.iter().find(|t| t.owns(ns)),
                Scope::Tenant(_) => tenants.iter().find(|t| t.name == o.tenant),
            }
        }
    };
    let forbidden = |namespace: Option<&str>| Revoked::Forbidden {
        namespace: namespace.map(str::to_string),
        leaf: o.leaf.clone(),
    };
    let Some(t) = now.filter(|t| t.name == o.tenant) else {
        return Some(match (&o.credential, &o.scope) {
            (Credential::NodeApi(_), Scope::Namespace(ns)) => forbidden(Some(ns)),
            _ => Revoked::Unauthenticated,
        });
    };
    match &o.scope {
        Scope::Namespace(ns) if !t.owns(ns) => return Some(forbidden(Some(ns))),
        // A cluster-wide watch lists what the patterns it started with covered: any
        // pattern taken away may have taken a namespace with it.
        Scope::Tenant(patterns) if patterns.iter().any(|p| !t.namespaces.contains(p)) => {
            return Some(forbidden(None));
        }
        _ => {}
    }
    if let Some(leaf) = &o.leaf
        && !t.may_reach(leaf)
    {
        return Some(forbidden(None));
    }
    // A watch reads every leaf the tenant could reach when it started.
    if o.leaf.is_none()
        && let Some(was) = &o.leaves
        && let Some(lost) = was.iter().find(|l| !t.may_reach(l))
    {
        return Some(Revoked::Forbidden {
            namespace: None,
            leaf: Some(lost.clone()),
        });
    }
    if o.leaf.is_none() && o.leaves.is_none() && t.leaves.is_some() {
        return Some(forbidden(None));
    }
    None
}

/// Whether `config`'s node-api listener `listener` still lets `caller` in: by name when
/// it has `allowed_clients`. A caller the old list named must be asked again when the
/// listener moved to SubjectAccessReviews (which a reload cannot ask on its behalf), so it
/// is ended and its client reconnects; one the root allowed stays while the listener still
/// asks the root (the review's answer is cached for minutes anyway, as the kubelet's).
/// A listener gone, or no longer a node API, lets nobody in.
fn node_caller_verdict(caller: &NodeCaller, listener: &str, config: &Config) -> Option<Revoked> {
    let Some(l) = config
        .listeners
        .iter()
        .find(|l| l.name == listener && l.kind == ListenerKind::NodeApi)
    else {
        return Some(Revoked::Unauthenticated);
    };
    let allowed = match l.allowed_clients.as_slice() {
        [] => !caller.by_name,
        entries => caller
            .common_name
            .as_deref()
            .is_some_and(|cn| entries.iter().any(|a| a.admits(cn, &caller.organizations))),
    };
    (!allowed).then_some(Revoked::Unauthenticated)
}

impl Session {
    /// Cancelled when a reload revokes the session or the gateway's grace period ends.
    pub fn token(&self) -> &CancellationToken {
        &self.state.cancel
    }

    /// Why a reload ended it; `None` while open, or when shutdown ended it.
    pub fn revoked(&self) -> Option<&Revoked> {
        self.state.why.get()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("revoked", &self.revoked())
            .finish()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        lock(&self.registry).remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(toml: &str) -> Config {
        Config::parse(Path::new("t.toml"), toml).unwrap()
    }

    const TWO: &str = "[[tenant]]\nname = \"a\"\nnamespaces = [\"a\", \"a-*\"]\nclient_names = [\"ci-a\"]\n\
                       [[tenant]]\nname = \"b\"\nnamespaces = [\"b\"]\n";

    fn opening(tenant: &str, credential: Credential, ns: &str, kind: Kind, port: u16) -> Opening {
        // node-api callers come on the node-api listener, the others on the kube-api one.
        let listener = match credential {
            Credential::NodeApi(_) => "kubelet",
            _ => "kube",
        };
        Opening {
            tenant: tenant.into(),
            credential,
            scope: Scope::Namespace(ns.into()),
            leaf: Some("leaf-1".into()),
            leaves: None,
            connection: (listener.into(), SocketAddr::from(([127, 0, 0, 1], port))),
            kind,
        }
    }

    /// The root API server's kubelet client, let in by `allowed_clients`.
    fn root() -> Credential {
        node_caller("kube-apiserver-kubelet-client", &[], true)
    }

    fn node_caller(cn: &str, organizations: &[&str], by_name: bool) -> Credential {
        Credential::NodeApi(NodeCaller {
            common_name: Some(cn.into()),
            organizations: organizations.iter().map(|o| o.to_string()).collect(),
            by_name,
        })
    }

    /// `config` with a node-api listener `kubelet` letting in `allowed_clients` (none: it
    /// asks the root cluster).
    fn with_node_api(mut config: Config, allowed_clients: &[&str]) -> Config {
        config.listeners.push(crate::config::ListenerConfig {
            name: "kubelet".into(),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            kind: ListenerKind::NodeApi,
            tls: None,
            max_connections: None,
            trusted_proxies: Vec::new(),
            http1_fast_path: true,
            allowed_clients: allowed_clients
                .iter()
                .map(|e| crate::config::AllowedClient::parse(e).unwrap())
                .collect(),
            kubernetes_version: None,
        });
        config
    }

    #[test]
    fn caps_count_per_tenant_and_per_connection_and_free_on_drop() {
        let sessions = Sessions::default();
        let metrics = Metrics::new();
        let kill = CancellationToken::new();
        let caps = Concurrency {
            watches: Cap {
                total: 3,
                per_connection: 2,
            },
            ..Concurrency::default()
        };
        let open = |port, tenant| {
            sessions.open(
                opening(tenant, root(), "a", Kind::Watch, port),
                &caps,
                &kill,
                &metrics,
            )
        };
        let first = open(1, "a").unwrap();
        let _second = open(1, "a").unwrap();
        let third = open(1, "a").unwrap_err();
        assert!(third.per_connection && third.limit == 2, "{third:?}");
        let _fourth = open(2, "a").unwrap();
        let fifth = open(3, "a").unwrap_err();
        assert!(!fifth.per_connection && fifth.limit == 3, "{fifth:?}");
        // Another tenant's and another kind's caps are their own.
        let _other = open(3, "b").unwrap();
        drop(first);
        let _again = open(3, "a").unwrap();
        assert_eq!(sessions.len(), 4);
        assert!(metrics.encode().contains(
            r#"leafgate_sessions_capped_total{tenant="a",kind="watch",cap="connection"} 1"#
        ));
    }

    #[test]
    fn the_counts_follow_every_open_and_close_whatever_else_is_open() {
        let sessions = Sessions::default();
        let metrics = Metrics::new();
        let kill = CancellationToken::new();
        let caps = Concurrency {
            streams: Cap {
                total: 2000,
                per_connection: 1000,
            },
            ..Concurrency::default()
        };
        let open = |tenant, kind, port| {
            sessions.open(
                opening(tenant, root(), "a", kind, port),
                &caps,
                &kill,
                &metrics,
            )
        };
        // A tenant at its caps, on two connections...
        let mut held: Vec<Session> = (0..2000)
            .map(|i| open("greedy", Kind::Stream, 1 + (i % 2) as u16).unwrap())
            .collect();
        assert!(open("greedy", Kind::Stream, 3).is_err());
        // ...counts nothing against another tenant, or against its own other kinds.
        let other = open("other", Kind::Stream, 1).unwrap();
        let watch = open("greedy", Kind::Watch, 1).unwrap();
        // One closed on connection 1 frees one place there, and in the tenant's total.
        held.swap_remove(0);
        let again = open("greedy", Kind::Stream, 1).unwrap();
        assert!(open("greedy", Kind::Stream, 1).unwrap_err().per_connection);
        drop((held, other, watch, again));
        assert!(sessions.is_empty());
        assert!(
            lock(&sessions.inner).counts.is_empty(),
            "no count outlives its sessions"
        );
    }

    #[test]
    fn a_reload_revokes_only_what_it_no_longer_allows() {
        let sessions = Sessions::default();
        let metrics = Metrics::new();
        let kill = CancellationToken::new();
        let caps = Concurrency::default();
        let open = |o| sessions.open(o, &caps, &kill, &metrics).unwrap();
        let by_cert = open(opening(
            "a",
            Credential::ClientName("ci-a".into()),
            "a",
            Kind::Stream,
            1,
        ));
        let in_a_2 = open(opening("a", root(), "a-2", Kind::LogFollow, 2));
        let in_b = open(opening("b", root(), "b", Kind::LogFollow, 3));
        let kubelet = ["kube-apiserver-kubelet-client"];
        let revoked = sessions.revoke(&with_node_api(config(TWO), &kubelet), &metrics);
        assert_eq!(revoked, 0);

        // `ci-a` leaves tenant a, and a-2 moves to tenant b.
        let next = "[[tenant]]\nname = \"a\"\nnamespaces = [\"a\"]\n\
                    [[tenant]]\nname = \"b\"\nnamespaces = [\"b\", \"a-2\"]\n";
        assert_eq!(
            sessions.revoke(&with_node_api(config(next), &kubelet), &metrics),
            2
        );
        assert!(by_cert.token().is_cancelled());
        assert_eq!(by_cert.revoked(), Some(&Revoked::Unauthenticated));
        assert!(in_a_2.token().is_cancelled());
        assert_eq!(
            in_a_2.revoked(),
            Some(&Revoked::Forbidden {
                namespace: Some("a-2".into()),
                leaf: Some("leaf-1".into())
            })
        );
        assert!(!in_b.token().is_cancelled() && in_b.revoked().is_none());
        assert!(
            metrics
                .encode()
                .contains(r#"leafgate_revoked_total{tenant="a",kind="stream"} 1"#)
        );
        // Shutdown's kill reaches every session, with no reason given.
        kill.cancel();
        assert!(in_b.token().is_cancelled() && in_b.revoked().is_none());
    }

    #[test]
    fn a_node_api_caller_is_ended_when_its_listener_no_longer_lets_it_in() {
        let sessions = Sessions::default();
        let metrics = Metrics::new();
        let kill = CancellationToken::new();
        let open = |credential| {
            sessions
                .open(
                    opening("a", credential, "a", Kind::Stream, 1),
                    &Concurrency::default(),
                    &kill,
                    &metrics,
                )
                .unwrap()
        };
        let (kubelet, admins, ops) = (
            open(root()),
            open(node_caller("ops", &["admins"], true)),
            open(node_caller("ops", &["oncall"], true)),
        );
        let reload =
            |allowed: &[&str]| sessions.revoke(&with_node_api(config(TWO), allowed), &metrics);
        let both = ["kube-apiserver-kubelet-client", "ops/admins", "ops/oncall"];
        assert_eq!(reload(&both), 0);
        // `ops/oncall` leaves the list: that subject ends, `ops/admins` (same CN) stays.
        assert_eq!(reload(&["kube-apiserver-kubelet-client", "ops/admins"]), 1);
        assert_eq!(ops.revoked(), Some(&Revoked::Unauthenticated));
        assert!(!admins.token().is_cancelled() && !kubelet.token().is_cancelled());

        // The listener moves to SubjectAccessReviews: callers let in by name must be asked
        // again; one the root cluster allowed stays.
        let by_review = open(node_caller("someone", &[], false));
        assert_eq!(reload(&[]), 2);
        assert!(kubelet.token().is_cancelled() && admins.token().is_cancelled());
        assert!(!by_review.token().is_cancelled());
        // A list that does not name it ends it too; then the listener gone ends everyone.
        let again = open(root());
        assert_eq!(reload(&["kube-apiserver-kubelet-client"]), 1);
        assert!(by_review.token().is_cancelled() && !again.token().is_cancelled());
        assert_eq!(sessions.revoke(&config(TWO), &metrics), 1);
        assert_eq!(again.revoked(), Some(&Revoked::Unauthenticated));
    }

    #[test]
    fn a_token_is_checked_by_digest_against_the_reloaded_tokens_files() {
        let dir = tempfile::tempdir().unwrap();
        let write = |a: &str, b: &str| {
            std::fs::write(dir.path().join("a.tokens"), a).unwrap();
            std::fs::write(dir.path().join("b.tokens"), b).unwrap();
            let toml = "[[tenant]]\nname = \"a\"\nnamespaces = [\"a\"]\ntokens_file = \"a.tokens\"\n\
                        [[tenant]]\nname = \"b\"\nnamespaces = [\"b\"]\ntokens_file = \"b.tokens\"\n";
            Config::parse(&dir.path().join("t.toml"), toml).unwrap()
        };
        let sessions = Sessions::default();
        let metrics = Metrics::new();
        let kill = CancellationToken::new();
        let open = |token: &str| {
            let credential = Credential::Token(crate::config::token_digest(token));
            sessions
                .open(
                    opening("a", credential, "a", Kind::Watch, 1),
                    &Concurrency::default(),
                    &kill,
                    &metrics,
                )
                .unwrap()
        };
        let (kept, removed, moved) = (open("keep-me"), open("drop-me"), open("move-me"));
        assert_eq!(
            sessions.revoke(&write("keep-me\ndrop-me\nmove-me\n", ""), &metrics),
            0
        );
        assert_eq!(
            sessions.revoke(&write("keep-me\n", "move-me\n"), &metrics),
            2
        );
        assert!(!kept.token().is_cancelled());
        assert_eq!(removed.revoked(), Some(&Revoked::Unauthenticated));
        assert_eq!(moved.revoked(), Some(&Revoked::Unauthenticated));
    }

    #[test]
    fn a_cluster_wide_watch_ends_when_a_pattern_or_leaf_is_taken_away() {
        let sessions = Sessions::default();
        let metrics = Metrics::new();
        let kill = CancellationToken::new();
        let watch = |leaves: Option<Vec<String>>| {
            sessions
                .open(
                    Opening {
                        scope: Scope::Tenant(vec!["a".into(), "a-*".into()]),
                        leaf: None,
                        leaves,
                        ..opening(
                            "a",
                            Credential::ClientName("ci-a".into()),
                            "a",
                            Kind::Watch,
                            1,
                        )
                    },
                    &Concurrency::default(),
                    &kill,
                    &metrics,
                )
                .unwrap()
        };
        let all_leaves = watch(None);
        sessions.revoke(&config(TWO), &metrics);
        assert!(!all_leaves.token().is_cancelled());
        let narrowed = TWO.replace("\"a\", \"a-*\"", "\"a\"");
        sessions.revoke(&config(&narrowed), &metrics);
        assert!(all_leaves.token().is_cancelled());
    }
}
