//! One line's facts, borrowed from where they already are (the request's head in the
//! connection's buffer, the route, the client), so that making a record allocates
//! nothing. A field that does not apply is `None` and is left out of the line.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use crate::config::LogField;

/// What a line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Http,
    /// A hijacked (upgraded) connection, written when it ends.
    Upgrade,
    NodeApi,
    KubeApi,
}

impl Kind {
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Upgrade => "upgrade",
            Kind::NodeApi => "node-api",
            Kind::KubeApi => "kube-api",
        }
    }
}

/// One access log line's facts; [`Record::new`] sets the time and kind, the rest starts
/// empty.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    pub time: SystemTime,
    pub kind: Kind,
    pub request_id: Option<&'a str>,
    pub trace_id: Option<&'a str>,
    pub listener: &'a str,
    pub route: Option<&'a str>,
    pub tenant: Option<&'a str>,
    pub client: Option<SocketAddr>,
    /// The client as a trusted proxy's `X-Forwarded-For` names it.
    pub forwarded_for: Option<&'a [u8]>,
    pub sni: Option<&'a str>,
    pub tls_version: Option<&'a str>,
    pub method: Option<&'a str>,
    pub host: Option<&'a [u8]>,
    /// The request target as routed, with its query (the line leaves the query out
    /// unless `query = true`).
    pub target: Option<&'a [u8]>,
    /// `HTTP/1.1`, `HTTP/2.0`.
    pub protocol: Option<&'a str>,
    pub status: Option<u16>,
    /// Body bytes from the client, and to it.
    pub bytes_in: Option<u64>,
    pub bytes_out: Option<u64>,
    pub upstream: Option<&'a str>,
    pub upstream_status: Option<u16>,
    pub upstream_connect: Option<Duration>,
    pub upstream_first_byte: Option<Duration>,
    pub duration: Option<Duration>,
    /// `fast` or `hyper`.
    pub served_by: Option<&'static str>,
    /// Why leafgate answered itself.
    pub refusal: Option<&'a str>,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    pub verb: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub pod: Option<&'a str>,
    pub leaf: Option<&'a str>,
    pub end_reason: Option<&'a str>,
    pub throttled: Option<Duration>,
}

/// A field's value, as the formats write it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Text(&'a [u8]),
    Number(u64),
    /// Milliseconds, written with three decimals.
    Millis(Duration),
    Time(SystemTime),
    Addr(SocketAddr),
}

impl<'a> Record<'a> {
    pub fn new(kind: Kind, listener: &'a str) -> Self {
        Record {
            time: SystemTime::now(),
            kind,
            request_id: None,
            trace_id: None,
            listener,
            route: None,
            tenant: None,
            client: None,
            forwarded_for: None,
            sni: None,
            tls_version: None,
            method: None,
            host: None,
            target: None,
            protocol: None,
            status: None,
            bytes_in: None,
            bytes_out: None,
            upstream: None,
            upstream_status: None,
            upstream_connect: None,
            upstream_first_byte: None,
            duration: None,
            served_by: None,
            refusal: None,
            referer: None,
            user_agent: None,
            verb: None,
            namespace: None,
            pod: None,
            leaf: None,
            end_reason: None,
            throttled: None,
        }
    }

    /// The path as the line writes it: without the query unless `query`.
    pub fn path(&self, query: bool) -> Option<&'a [u8]> {
        let target = self.target?;
        if query {
            return Some(target);
        }
        let end = target
            .iter()
            .position(|&b| b == b'?')
            .unwrap_or(target.len());
        Some(&target[..end])
    }

    /// Whether the line is an error's, written whatever the sampling says: a status of
    /// 500 or more, or leafgate's own refusal.
    pub fn is_error(&self) -> bool {
        self.refusal.is_some() || self.status.is_some_and(|s| s >= 500)
    }

    /// `field`'s value, when it applies.
    pub fn value(&self, field: LogField, query: bool) -> Option<Value<'a>> {
        let text = |s: Option<&'a str>| s.map(|s| Value::Text(s.as_bytes()));
        let bytes = |b: Option<&'a [u8]>| b.map(Value::Text);
        let number = |n: Option<u64>| n.map(Value::Number);
        let status = |s: Option<u16>| s.map(|s| Value::Number(u64::from(s)));
        let millis = |d: Option<Duration>| d.map(Value::Millis);
        match field {
            LogField::Time => Some(Value::Time(self.time)),
            LogField::Kind => Some(Value::Text(self.kind.name().as_bytes())),
            LogField::RequestId => text(self.request_id),
            LogField::TraceId => text(self.trace_id),
            LogField::Listener => Some(Value::Text(self.listener.as_bytes())),
            LogField::Route => text(self.route),
            LogField::Tenant => text(self.tenant),
            LogField::Client => self.client.map(Value::Addr),
            LogField::ForwardedFor => bytes(self.forwarded_for),
            LogField::Sni => text(self.sni),
            LogField::TlsVersion => text(self.tls_version),
            LogField::Method => text(self.method),
            LogField::Host => bytes(self.host),
            LogField::Path => bytes(self.path(query)),
            LogField::Protocol => text(self.protocol),
            LogField::Status => status(self.status),
            LogField::BytesIn => number(self.bytes_in),
            LogField::BytesOut => number(self.bytes_out),
            LogField::Upstream => text(self.upstream),
            LogField::UpstreamStatus => status(self.upstream_status),
            LogField::UpstreamConnectMs => millis(self.upstream_connect),
            LogField::UpstreamFirstByteMs => millis(self.upstream_first_byte),
            LogField::DurationMs => millis(self.duration),
            LogField::ServedBy => text(self.served_by),
            LogField::Refusal => text(self.refusal),
            LogField::Referer => bytes(self.referer),
            LogField::UserAgent => bytes(self.user_agent),
            LogField::Verb => text(self.verb),
            LogField::Namespace => text(self.namespace),
            LogField::Pod => text(self.pod),
            LogField::Leaf => text(self.leaf),
            LogField::EndReason => text(self.end_reason),
            LogField::ThrottledMs => millis(self.throttled),
        }
    }
}
