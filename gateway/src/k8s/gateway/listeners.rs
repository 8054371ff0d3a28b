//! A Gateway of ours read on its own (`apis/v1/gateway_types.go`): its address from the
//! pool, and each listener's supported kinds, conflicts, certificates and conditions, with
//! the spec's reasons. Routes attach later (`routes`), counting into `attached`.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::sign::CertifiedKey;

use super::grants::{self, From, To};
use super::hostnames;
use super::model::Cond;
use super::types::{GROUP, Gateway, Listener, ListenerStatus, ReferenceGrant, RouteGroupKind};
use crate::config::HostPattern;
use crate::k8s::ingress::certs::Certs;

/// A problem as a condition's reason and message.
pub type Why = (&'static str, String);

#[derive(Debug)]
pub struct ListenerState<'o> {
    pub listener: &'o Listener,
    pub port: u16,
    /// Its `hostname`, when it has a valid one (`None`: any host).
    pub host: Option<HostPattern>,
    pub supported_kinds: Vec<RouteGroupKind>,
    /// Why it is not accepted (Accepted=False).
    pub not_accepted: Option<Why>,
    /// `HostnameConflict` or `ProtocolConflict` (Conflicted=True, not accepted).
    pub conflicted: Option<Why>,
    /// Why its references do not resolve (ResolvedRefs=False, not programmed).
    pub unresolved: Option<Why>,
    /// The certificates of an HTTPS listener, in `certificateRefs` order.
    pub certs: Vec<Arc<CertifiedKey>>,
    /// Routes attached to it, whether it is programmed or not.
    pub attached: i32,
}

impl ListenerState<'_> {
    /// Routes may attach: accepted and not conflicted.
    pub fn valid(&self) -> bool {
        self.not_accepted.is_none() && self.conflicted.is_none()
    }

    pub fn programmed(&self) -> bool {
        self.valid() && self.unresolved.is_none()
    }

    pub fn status(&self, generation: i64) -> ListenerStatus<Cond> {
        let cond = |type_, ok: Option<&Why>, good: &'static str, bad_default| Cond {
            type_,
            status: ok.is_none(),
            reason: ok.map_or(good, |w| w.0),
            message: ok.map_or_else(|| bad_default, |w| w.1.clone()),
            observed_generation: generation,
        };
        let not_accepted = self.not_accepted.as_ref().or(self.conflicted.as_ref());
        let mut conditions = vec![
            cond("Accepted", not_accepted, "Accepted", "accepted".to_string()),
            cond(
                "ResolvedRefs",
                self.unresolved.as_ref(),
                "ResolvedRefs",
                "references resolved".to_string(),
            ),
        ];
        let programmed = (!self.programmed()).then(|| {
            (
                "Invalid",
                "the listener is not valid: see its other conditions".to_string(),
            )
        });
        conditions.push(cond(
            "Programmed",
            programmed.as_ref(),
            "Programmed",
            "programmed".to_string(),
        ));
        if let Some((reason, message)) = &self.conflicted {
            conditions.push(Cond {
                type_: "Conflicted",
                status: true,
                reason,
                message: message.clone(),
                observed_generation: generation,
            });
        }
        ListenerStatus {
            name: self.listener.name.clone(),
            supported_kinds: self.supported_kinds.clone(),
            attached_routes: self.attached,
            conditions,
        }
    }
}

fn http_route_kind() -> RouteGroupKind {
    RouteGroupKind {
        group: Some(GROUP.to_string()),
        kind: "HTTPRoute".to_string(),
    }
}

/// Every listener of `gateway` on its own, then the conflicts between them.
pub fn listeners<'o>(
    gateway: &'o Gateway,
    grants: &[Arc<ReferenceGrant>],
    certs: &Certs<'_>,
) -> Vec<ListenerState<'o>> {
    let namespace = gateway.metadata.namespace.as_deref().unwrap_or("");
    let mut out: Vec<ListenerState<'o>> = gateway
        .spec
        .listeners
        .iter()
        .map(|l| listener(l, namespace, grants, certs))
        .collect();
    // Distinct by (port, protocol, hostname); HTTP and HTTPS cannot share a port.
    for i in 0..out.len() {
        for j in 0..out.len() {
            if i == j || out[i].not_accepted.is_some() || out[j].not_accepted.is_some() {
                continue;
            }
            let (a, b) = (out[i].listener, out[j].listener);
            if a.port != b.port {
                continue;
            }
            let why = if a.protocol != b.protocol {
                (
                    "ProtocolConflict",
                    format!(
                        "listener {} uses port {} with protocol {}",
                        b.name, b.port, b.protocol
                    ),
                )
            } else if out[i].host == out[j].host {
                (
                    "HostnameConflict",
                    format!(
                        "listener {} has the same port, protocol and hostname",
                        b.name
                    ),
                )
            } else {
                continue;
            };
            out[i].conflicted.get_or_insert(why);
        }
    }
    out
}

fn listener<'o>(
    l: &'o Listener,
    namespace: &str,
    grants: &[Arc<ReferenceGrant>],
    certs: &Certs<'_>,
) -> ListenerState<'o> {
    let mut state = ListenerState {
        listener: l,
        port: u16::try_from(l.port).unwrap_or(0),
        host: None,
        supported_kinds: Vec::new(),
        not_accepted: None,
        conflicted: None,
        unresolved: None,
        certs: Vec::new(),
        attached: 0,
    };
    if !matches!(l.protocol.as_str(), "HTTP" | "HTTPS") {
        state.not_accepted = Some((
            "UnsupportedProtocol",
            format!(
                "protocol {} is not supported: use HTTP or HTTPS",
                l.protocol
            ),
        ));
        return state;
    }
    if state.port == 0 {
        state.not_accepted = Some((
            "UnsupportedValue",
            format!("port {} is not a TCP port", l.port),
        ));
    }
    if let Some(h) = l.hostname.as_deref().filter(|h| !h.is_empty()) {
        match hostnames::invalid(h) {
            Some(why) => state.not_accepted = Some(("UnsupportedValue", why)),
            None => state.host = Some(hostnames::pattern(h)),
        }
    }
    let kinds = l.allowed_routes.as_ref().map_or(&[][..], |a| &a.kinds[..]);
    if kinds.is_empty() {
        state.supported_kinds.push(http_route_kind());
    }
    for k in kinds {
        if k.group.as_deref().unwrap_or(GROUP) == GROUP && k.kind == "HTTPRoute" {
            if !state.supported_kinds.contains(&http_route_kind()) {
                state.supported_kinds.push(http_route_kind());
            }
        } else {
            state.unresolved.get_or_insert((
                "InvalidRouteKinds",
                format!(
                    "route kind {}/{} is not supported: only HTTPRoute",
                    k.group.as_deref().unwrap_or(GROUP),
                    k.kind
                ),
            ));
        }
    }
    if l.protocol == "HTTPS" {
        tls(l, namespace, grants, certs, &mut state);
    }
    state
}

/// An HTTPS listener's `tls`: mode Terminate, each certificateRef a core Secret, in
/// another namespace only with a ReferenceGrant, that parses as `kubernetes.io/tls`.
fn tls(
    l: &Listener,
    namespace: &str,
    grants: &[Arc<ReferenceGrant>],
    certs: &Certs<'_>,
    state: &mut ListenerState<'_>,
) {
    let tls = l.tls.as_ref();
    if let Some(mode) = tls
        .and_then(|t| t.mode.as_deref())
        .filter(|m| *m != "Terminate")
    {
        state.not_accepted = Some((
            "UnsupportedValue",
            format!("tls mode {mode} is not supported on HTTPS: use Terminate"),
        ));
        return;
    }
    let refs = tls.map_or(&[][..], |t| &t.certificate_refs[..]);
    if refs.is_empty() {
        state.unresolved = Some((
            "InvalidCertificateRef",
            "an HTTPS listener needs tls.certificateRefs".to_string(),
        ));
    }
    for r in refs {
        let group = r.group.as_deref().unwrap_or("");
        let kind = r.kind.as_deref().unwrap_or("Secret");
        let ns = r.namespace.as_deref().unwrap_or(namespace);
        let why = if !group.is_empty() || kind != "Secret" {
            Some((
                "InvalidCertificateRef",
                format!(
                    "certificateRef {group}/{kind} {}: only core Secrets are supported",
                    r.name
                ),
            ))
        } else if !grants::permitted(
            grants,
            From {
                group: GROUP,
                kind: "Gateway",
                namespace,
            },
            To {
                group: "",
                kind: "Secret",
                namespace: ns,
                name: &r.name,
            },
        ) {
            Some((
                "RefNotPermitted",
                format!(
                    "Secret {ns}/{} is in another namespace and no ReferenceGrant there allows it",
                    r.name
                ),
            ))
        } else {
            match certs.get(ns, &r.name) {
                Ok(cert) => {
                    state.certs.push(cert);
                    None
                }
                Err(why) => Some(("InvalidCertificateRef", why)),
            }
        };
        if let Some(why) = why {
            state.unresolved.get_or_insert(why);
        }
    }
}

/// The Gateway's Accepted and Programmed conditions from its listeners and address.
pub fn gateway_conditions(
    listeners: &[ListenerState<'_>],
    not_accepted: Option<Why>,
    address: &Result<IpAddr, Why>,
    generation: i64,
) -> Vec<Cond> {
    let invalid: Vec<&str> = listeners
        .iter()
        .filter(|l| !l.valid())
        .map(|l| l.listener.name.as_str())
        .collect();
    let any_valid = listeners.iter().any(|l| l.valid());
    let (accepted, reason, message) = match not_accepted {
        Some((reason, message)) => (false, reason, message),
        None if invalid.is_empty() => (true, "Accepted", "accepted".to_string()),
        None => (
            any_valid,
            "ListenersNotValid",
            format!("listeners not valid: {}", invalid.join(", ")),
        ),
    };
    let (programmed, p_reason, p_message) = match address {
        _ if !accepted => (false, "Invalid", "the Gateway is not accepted".to_string()),
        Err((reason, message)) => (false, *reason, message.clone()),
        Ok(_) if !listeners.iter().any(|l| l.programmed()) => {
            (false, "Invalid", "no listener is programmed".to_string())
        }
        Ok(ip) => (true, "Programmed", format!("listening on {ip}")),
    };
    vec![
        Cond {
            type_: "Accepted",
            status: accepted,
            reason,
            message,
            observed_generation: generation,
        },
        Cond {
            type_: "Programmed",
            status: programmed,
            reason: p_reason,
            message: p_message,
            observed_generation: generation,
        },
    ]
}
