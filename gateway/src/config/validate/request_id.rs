//! `[request_id]` validated: its header a header name leafgate does not itself set or
//! frame a message by.

use http::HeaderName;

use crate::config::model::RequestIdConfig;
use crate::config::raw::RawConfig;

use super::validator::Validator;

/// Headers an ID cannot travel in: leafgate's framing, routing and forwarding headers.
const TAKEN: [&str; 14] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
    "forwarded",
    "x-real-ip",
    "via",
    "traceparent",
    "tracestate",
];

impl Validator<'_, '_> {
    /// `[request_id]`, when the file has it.
    pub(super) fn request_id(&mut self, raw: &RawConfig) -> Option<RequestIdConfig> {
        let r = raw.request_id.as_ref()?;
        let header = match &r.header {
            None => HeaderName::from_static(RequestIdConfig::DEFAULT_HEADER),
            Some(h) => match header_name(h.get_ref()) {
                Ok(name) => name,
                Err(why) => {
                    self.report
                        .error(h.span(), "request_id.header".to_string(), why);
                    return None;
                }
            },
        };
        Some(RequestIdConfig {
            header,
            response: r.response.unwrap_or(true),
        })
    }
}

/// `text` as a header name an ID may travel in.
fn header_name(text: &str) -> Result<HeaderName, String> {
    let name = HeaderName::from_bytes(text.as_bytes()).map_err(|_| {
        format!(
            "`{}` is not a header name (letters, digits and !#$%&'*+-.^_`|~)",
            text.escape_debug()
        )
    })?;
    let lower = name.as_str();
    if TAKEN.contains(&lower) || lower.starts_with("x-forwarded-") {
        return Err(format!(
            "`{text}` is a header leafgate sets or frames messages by: name another (\"X-Request-Id\")"
        ));
    }
    Ok(name)
}
