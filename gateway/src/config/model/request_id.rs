//! `[request_id]`: the header each request's ID travels in, and whether the client gets it
//! back.

use http::HeaderName;

/// Every request gets an ID: kept from a trusted proxy when it is a sane token, else made
/// (128 random bits as 32 lowercase hex digits). Sent to the backend or leaf, written in
/// the access log's `request_id`, and returned to the client when `response`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestIdConfig {
    /// Lowercase (`x-request-id` by default).
    pub header: HeaderName,
    /// The client's answer carries the ID (default true).
    pub response: bool,
}

impl RequestIdConfig {
    pub const DEFAULT_HEADER: &'static str = "x-request-id";
}
