//! The access log lines of Kubernetes calls that go on after their answer: an exec,
//! attach or port-forward writes its line when its splice ends ([`StreamLine`], the splice
//! job's `proxy::upgrade::EndLine`), a followed log when its body ends ([`FollowLine`]).
//! Each is the request's line (`access::Pending`, kept from its head) with the call's
//! facts, written once, however the stream ended; the answer that opened it is marked
//! (`access::Deferred`) so that no line is written for it then.

use std::sync::Arc;

use http::Request;

use super::access::{ApiFacts, Ended, Line, Pending};
use super::client::Client;
use crate::proxy::upgrade::{EndLine, SpliceEnd};

/// The line `req` carries for its call, when its listener writes a log.
pub fn line_of<B>(req: &Request<B>) -> Option<Arc<Pending>> {
    req.extensions().get::<Line>().map(|l| l.0.clone())
}

/// An exec, attach or port-forward's line, written when its splice ends: status 101, the
/// bytes spliced each way, the time throttled, why it ended.
pub struct StreamLine {
    line: Arc<Pending>,
    client: Arc<Client>,
    facts: ApiFacts,
}

impl StreamLine {
    pub fn new(line: Arc<Pending>, client: Arc<Client>, facts: ApiFacts) -> StreamLine {
        StreamLine {
            line,
            client,
            facts,
        }
    }
}

impl EndLine for StreamLine {
    fn write(&self, end: &SpliceEnd<'_>) {
        self.line.write_ended(
            &self.client,
            &Ended {
                status: 101,
                facts: &self.facts,
                bytes_in: Some(end.bytes_in),
                bytes_out: end.bytes_out,
                upstream: Some(end.upstream),
                throttled: Some(end.throttled),
                end_reason: end.end_reason,
            },
        );
    }
}

/// A followed log's line, written when its body ends or is dropped: the log bytes sent
/// to the client, and why it ended (`closed`: the leaf ended it; `revoked`: a reload took
/// the tenant's access away; `drain`: shutdown; `upstream error`: the leaf's body failed;
/// `client closed`: the client went first).
pub struct FollowLine {
    line: Arc<Pending>,
    client: Arc<Client>,
    facts: ApiFacts,
    bytes: u64,
    reason: Option<&'static str>,
}

impl FollowLine {
    pub fn new(line: Arc<Pending>, client: Arc<Client>, facts: ApiFacts) -> FollowLine {
        FollowLine {
            line,
            client,
            facts,
            bytes: 0,
            reason: None,
        }
    }

    /// `n` more bytes went to the client.
    pub fn sent(&mut self, n: usize) {
        self.bytes += n as u64;
    }

    /// The body ended for `reason` (the first one said stays).
    pub fn ended(&mut self, reason: &'static str) {
        self.reason.get_or_insert(reason);
    }
}

impl Drop for FollowLine {
    fn drop(&mut self) {
        self.line.write_ended(
            &self.client,
            &Ended {
                status: 200,
                facts: &self.facts,
                bytes_in: None,
                bytes_out: self.bytes,
                upstream: None,
                throttled: None,
                end_reason: self.reason.unwrap_or("client closed"),
            },
        );
    }
}
