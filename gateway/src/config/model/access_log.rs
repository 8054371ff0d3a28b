//! `[access_log]`, typed: the format of each line, where lines go, which requests are
//! written. The top-level table is every listener's; a listener's own `access_log` table
//! overrides it key by key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// One field of a line, by its JSON name: the names a `template` may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogField {
    Time,
    Kind,
    RequestId,
    TraceId,
    Listener,
    Route,
    Tenant,
    Client,
    ForwardedFor,
    Sni,
    TlsVersion,
    Method,
    Host,
    Path,
    Protocol,
    Status,
    BytesIn,
    BytesOut,
    Upstream,
    UpstreamStatus,
    UpstreamConnectMs,
    UpstreamFirstByteMs,
    DurationMs,
    ServedBy,
    Refusal,
    Referer,
    UserAgent,
    Verb,
    Namespace,
    Pod,
    Leaf,
    EndReason,
    ThrottledMs,
}

impl LogField {
    /// Every field, in the order a JSON line writes them.
    pub const ALL: [LogField; 33] = [
        LogField::Time,
        LogField::Kind,
        LogField::RequestId,
        LogField::TraceId,
        LogField::Listener,
        LogField::Route,
        LogField::Tenant,
        LogField::Client,
        LogField::ForwardedFor,
        LogField::Sni,
        LogField::TlsVersion,
        LogField::Method,
        LogField::Host,
        LogField::Path,
        LogField::Protocol,
        LogField::Status,
        LogField::BytesIn,
        LogField::BytesOut,
        LogField::Upstream,
        LogField::UpstreamStatus,
        LogField::UpstreamConnectMs,
        LogField::UpstreamFirstByteMs,
        LogField::DurationMs,
        LogField::ServedBy,
        LogField::Refusal,
        LogField::Referer,
        LogField::UserAgent,
        LogField::Verb,
        LogField::Namespace,
        LogField::Pod,
        LogField::Leaf,
        LogField::EndReason,
        LogField::ThrottledMs,
    ];

    /// The field's JSON name, also its name in a template.
    pub const fn name(self) -> &'static str {
        match self {
            LogField::Time => "time",
            LogField::Kind => "kind",
            LogField::RequestId => "request_id",
            LogField::TraceId => "trace_id",
            LogField::Listener => "listener",
            LogField::Route => "route",
            LogField::Tenant => "tenant",
            LogField::Client => "client",
            LogField::ForwardedFor => "forwarded_for",
            LogField::Sni => "sni",
            LogField::TlsVersion => "tls_version",
            LogField::Method => "method",
            LogField::Host => "host",
            LogField::Path => "path",
            LogField::Protocol => "protocol",
            LogField::Status => "status",
            LogField::BytesIn => "bytes_in",
            LogField::BytesOut => "bytes_out",
            LogField::Upstream => "upstream",
            LogField::UpstreamStatus => "upstream_status",
            LogField::UpstreamConnectMs => "upstream_connect_ms",
            LogField::UpstreamFirstByteMs => "upstream_first_byte_ms",
            LogField::DurationMs => "duration_ms",
            LogField::ServedBy => "served_by",
            LogField::Refusal => "refusal",
            LogField::Referer => "referer",
            LogField::UserAgent => "user_agent",
            LogField::Verb => "verb",
            LogField::Namespace => "namespace",
            LogField::Pod => "pod",
            LogField::Leaf => "leaf",
            LogField::EndReason => "end_reason",
            LogField::ThrottledMs => "throttled_ms",
        }
    }

    pub fn by_name(name: &str) -> Option<LogField> {
        LogField::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// One piece of a template: text written as it is, or a field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePiece {
    Text(String),
    Field(LogField),
}

/// How each line is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLogFormat {
    /// One JSON object a line; a field that does not apply is left out.
    Json,
    /// nginx's `combined`, byte for byte.
    Combined,
    /// The operator's `template`: text and `{field}`s; a field that does not apply is `-`.
    Template(Vec<TemplatePiece>),
}

impl TemplatePiece {
    /// Reads `{field}`s out of `text`; `Err` is the byte offset of the first unknown or
    /// unclosed field and why. `{{` and `}}` write a brace.
    pub fn parse_template(text: &str) -> Result<Vec<TemplatePiece>, (usize, String)> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text.char_indices().peekable();
        while let Some((at, c)) = rest.next() {
            match c {
                '{' if rest.peek().is_some_and(|&(_, n)| n == '{') => {
                    rest.next();
                    literal.push('{');
                }
                '}' if rest.peek().is_some_and(|&(_, n)| n == '}') => {
                    rest.next();
                    literal.push('}');
                }
                '{' => {
                    let Some(len) = text[at + 1..].find('}') else {
                        return Err((
                            at,
                            "a `{` that no `}` closes (write `{{` for a brace)".into(),
                        ));
                    };
                    let name = &text[at + 1..at + 1 + len];
                    let field = LogField::by_name(name).ok_or_else(|| {
                        let known: Vec<&str> = LogField::ALL.iter().map(|f| f.name()).collect();
                        (
                            at,
                            format!(
                                "`{{{name}}}` is not a field; the fields are {}",
                                known.join(", ")
                            ),
                        )
                    })?;
                    if !literal.is_empty() {
                        pieces.push(TemplatePiece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(TemplatePiece::Field(field));
                    while rest.peek().is_some_and(|&(i, _)| i <= at + 1 + len) {
                        rest.next();
                    }
                }
                '}' => {
                    return Err((
                        at,
                        "a `}` that no `{` opens (write `}}` for a brace)".into(),
                    ));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            pieces.push(TemplatePiece::Text(literal));
        }
        Ok(pieces)
    }
}

/// Where lines go.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessLogPath {
    Stdout,
    /// A file, appended to; reopened on SIGUSR1 and when it is moved away.
    File(PathBuf),
}

/// One listener's access log, its keys resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessLogConfig {
    pub format: AccessLogFormat,
    pub path: AccessLogPath,
    /// The share of requests written, 0.0 to 1.0; errors (status 500 and up, leafgate's
    /// own refusals) are always written.
    pub sample: f64,
    /// Paths (exact, without the query) never written, unless the answer is an error.
    pub exclude_paths: Vec<String>,
    /// Write the query string with the path.
    pub query: bool,
}

/// Every listener's access log: the top-level table's, and the listeners that have one of
/// their own (their table merged over the top-level one).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccessLogs {
    /// `[access_log]`: for every listener without its own, the Gateway API's included.
    pub default: Option<Arc<AccessLogConfig>>,
    pub by_listener: BTreeMap<String, Arc<AccessLogConfig>>,
}

impl AccessLogs {
    /// The access log of the listener `name`, if it has one.
    pub fn of(&self, name: &str) -> Option<&Arc<AccessLogConfig>> {
        self.by_listener.get(name).or(self.default.as_ref())
    }

    /// Whether any listener writes an access log.
    pub fn any(&self) -> bool {
        self.default.is_some() || !self.by_listener.is_empty()
    }

    /// The files the access logs write (stdout is none).
    pub fn files(&self) -> impl Iterator<Item = &std::path::Path> {
        self.default
            .iter()
            .chain(self.by_listener.values())
            .filter_map(|c| match &c.path {
                AccessLogPath::File(path) => Some(path.as_path()),
                AccessLogPath::Stdout => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::{LogField, TemplatePiece};

    #[test]
    fn a_template_reads_its_fields_and_braces() {
        let pieces = TemplatePiece::parse_template("{time} {{x}} {status}ms").unwrap();
        assert_eq!(
            pieces,
            vec![
                TemplatePiece::Field(LogField::Time),
                TemplatePiece::Text(" {x} ".into()),
                TemplatePiece::Field(LogField::Status),
                TemplatePiece::Text("ms".into()),
            ]
        );
        assert_eq!(TemplatePiece::parse_template("ab {nope}").unwrap_err().0, 3);
        assert_eq!(TemplatePiece::parse_template("{time").unwrap_err().0, 0);
        assert_eq!(TemplatePiece::parse_template("x}").unwrap_err().0, 1);
        for f in LogField::ALL {
            assert_eq!(LogField::by_name(f.name()), Some(f));
        }
    }
}
