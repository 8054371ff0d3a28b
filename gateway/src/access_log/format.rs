//! The three line formats, as pure functions of a record: JSON (one object a line, the
//! fields that apply in a fixed order), nginx's `combined`, and the operator's template.

use super::out::Out;
use super::record::{Record, Value};
use super::time::{self, Civil};
use crate::config::{AccessLogFormat, TemplatePiece};

/// Writes `record` as one line (ending in `\n`) in `format`. The path keeps its query
/// only with `query`. On return `out.full` says whether the line fit.
pub fn line(format: &AccessLogFormat, query: bool, record: &Record<'_>, out: &mut Out<'_>) {
    match format {
        AccessLogFormat::Json => json(record, query, out),
        AccessLogFormat::Combined => combined(record, query, out),
        AccessLogFormat::Template(pieces) => template(pieces, record, query, out),
    }
    out.byte(b'\n');
}

/// The JSON object: `time` and `kind` always, then each field that applies, in
/// [`crate::config::LogField::ALL`]'s order (a test holds the names and order to it).
/// Written field by field rather than through [`Record::value`] (which templates use):
/// each field's `,"name":` is then one constant the compiler copies in place, and a line
/// is a straight run of writes.
fn json(r: &Record<'_>, query: bool, out: &mut Out<'_>) {
    /// A text field (`&str` or bytes), quoted and escaped.
    macro_rules! text {
        ($name:literal, $value:expr) => {
            if let Some(v) = $value {
                out.bytes(concat!(",\"", $name, "\":\"").as_bytes());
                out.json(AsRef::<[u8]>::as_ref(v));
                out.byte(b'"');
            }
        };
    }
    /// A number (`uint`) or a duration in milliseconds (`millis`).
    macro_rules! plain {
        ($write:ident, $name:literal, $value:expr) => {
            if let Some(v) = $value {
                out.bytes(concat!(",\"", $name, "\":").as_bytes());
                out.$write(v);
            }
        };
    }
    out.bytes(b"{\"time\":\"");
    out.bytes(&time::rfc3339(r.time));
    out.bytes(b"\",\"kind\":\"");
    out.bytes(r.kind.name().as_bytes());
    out.byte(b'"');
    text!("request_id", r.request_id);
    text!("trace_id", r.trace_id);
    text!("listener", Some(r.listener));
    text!("route", r.route);
    text!("tenant", r.tenant);
    if let Some(client) = r.client {
        out.bytes(b",\"client\":\"");
        out.addr(client);
        out.byte(b'"');
    }
    text!("forwarded_for", r.forwarded_for);
    text!("sni", r.sni);
    text!("tls_version", r.tls_version);
    text!("method", r.method);
    text!("host", r.host);
    text!("path", r.path(query));
    text!("protocol", r.protocol);
    plain!(uint, "status", r.status.map(u64::from));
    plain!(uint, "bytes_in", r.bytes_in);
    plain!(uint, "bytes_out", r.bytes_out);
    text!("upstream", r.upstream);
    plain!(uint, "upstream_status", r.upstream_status.map(u64::from));
    plain!(millis, "upstream_connect_ms", r.upstream_connect);
    plain!(millis, "upstream_first_byte_ms", r.upstream_first_byte);
    plain!(millis, "duration_ms", r.duration);
    text!("served_by", r.served_by);
    text!("refusal", r.refusal);
    text!("referer", r.referer);
    text!("user_agent", r.user_agent);
    text!("verb", r.verb);
    text!("namespace", r.namespace);
    text!("pod", r.pod);
    text!("leaf", r.leaf);
    text!("end_reason", r.end_reason);
    plain!(millis, "throttled_ms", r.throttled);
    out.byte(b'}');
}

/// A value that needs no escaping: a number, a time, an address.
fn plain(value: Value<'_>, out: &mut Out<'_>) {
    match value {
        Value::Number(n) => out.uint(n),
        Value::Millis(d) => out.millis(d),
        Value::Time(t) => out.bytes(&time::rfc3339(t)),
        Value::Addr(a) => out.addr(a),
        Value::Text(t) => out.bytes(t),
    }
}

/// nginx's `log_format combined`: `$remote_addr - $remote_user [$time_local] "$request"
/// $status $body_bytes_sent "$http_referer" "$http_user_agent"`, each variable escaped as
/// nginx escapes it and `-` when empty. `$remote_user` is always `-` (leafgate does no
/// basic authentication), `$request` is the request line as the method, path and protocol.
fn combined(record: &Record<'_>, query: bool, out: &mut Out<'_>) {
    match record.client {
        Some(a) => out.ip(a.ip()),
        None => out.byte(b'-'),
    }
    out.bytes(b" - - [");
    out.bytes(&Civil::of(record.time).nginx_local());
    out.bytes(b"] \"");
    let start = out.len();
    if let (Some(method), Some(path)) = (record.method, record.path(query)) {
        out.nginx(method.as_bytes());
        out.byte(b' ');
        out.nginx(path);
        if let Some(protocol) = record.protocol {
            out.byte(b' ');
            out.nginx(protocol.as_bytes());
        }
    }
    if out.len() == start {
        out.byte(b'-');
    }
    out.bytes(b"\" ");
    out.uint(record.status.unwrap_or(0).into());
    out.byte(b' ');
    out.uint(record.bytes_out.unwrap_or(0));
    out.bytes(b" \"");
    out.nginx(record.referer.unwrap_or_default());
    out.bytes(b"\" \"");
    out.nginx(record.user_agent.unwrap_or_default());
    out.byte(b'"');
}

/// The operator's template: its text as written, each field's value as a JSON string's
/// contents (so no value can end the line or forge another), `-` where it does not apply.
fn template(pieces: &[TemplatePiece], record: &Record<'_>, query: bool, out: &mut Out<'_>) {
    for piece in pieces {
        match piece {
            TemplatePiece::Text(t) => out.bytes(t.as_bytes()),
            TemplatePiece::Field(f) => match record.value(*f, query) {
                Some(Value::Text(t)) => out.json(t),
                Some(v) => plain(v, out),
                None => out.byte(b'-'),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::line;
    use crate::access_log::out::Out;
    use crate::access_log::record::{Kind, Record};
    use crate::config::{AccessLogFormat, LogField, TemplatePiece};

    fn record() -> Record<'static> {
        let mut r = Record::new(Kind::Http, "web");
        r.time = UNIX_EPOCH + Duration::from_millis(1_796_198_317_123);
        r.client = Some("192.0.2.7:51234".parse().unwrap());
        r.method = Some("GET");
        r.target = Some(b"/a\"b?token=secret");
        r.protocol = Some("HTTP/1.1");
        r.host = Some(b"a.example");
        r.status = Some(200);
        r.bytes_out = Some(5);
        r.route = Some("site");
        r.duration = Some(Duration::from_micros(1500));
        r.served_by = Some("fast");
        r.user_agent = Some(b"curl/8.5.0");
        r
    }

    fn text(format: &AccessLogFormat, query: bool, r: &Record<'_>) -> String {
        let mut buf = Vec::with_capacity(4096);
        let mut out = Out::new(&mut buf);
        line(format, query, r, &mut out);
        assert!(!out.full);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn json_lines_hold_the_fields_that_apply_and_no_query() {
        let line = text(&AccessLogFormat::Json, false, &record());
        assert!(line.ends_with("}\n"), "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["time"], "2026-12-02T07:58:37.123Z");
        assert_eq!(v["kind"], "http");
        assert_eq!(v["client"], "192.0.2.7:51234");
        assert_eq!(v["path"], "/a\"b");
        assert_eq!(v["status"], 200);
        assert_eq!(v["duration_ms"], 1.5);
        assert_eq!(v["served_by"], "fast");
        assert!(v.get("upstream").is_none(), "{line}");
        assert!(!line.contains("secret"));
        let with_query = text(&AccessLogFormat::Json, true, &record());
        let v: serde_json::Value = serde_json::from_str(&with_query).unwrap();
        assert_eq!(v["path"], "/a\"b?token=secret");
    }

    #[test]
    fn combined_is_nginx_s_line() {
        assert_eq!(
            text(&AccessLogFormat::Combined, false, &record()),
            "192.0.2.7 - - [02/Dec/2026:07:58:37 +0000] \"GET /a\\x22b HTTP/1.1\" 200 5 \"-\" \"curl/8.5.0\"\n"
        );
        let mut bare = Record::new(Kind::Http, "web");
        bare.time = UNIX_EPOCH;
        assert_eq!(
            text(&AccessLogFormat::Combined, false, &bare),
            "- - - [01/Jan/1970:00:00:00 +0000] \"-\" 0 0 \"-\" \"-\"\n"
        );
    }

    #[test]
    fn templates_write_their_fields_and_a_dash_for_the_others() {
        let pieces = TemplatePiece::parse_template(
            "{client} {method} {path} {status} {upstream} {duration_ms}",
        )
        .unwrap();
        let mut r = record();
        r.target = Some(b"/x\ny");
        assert_eq!(
            text(&AccessLogFormat::Template(pieces), false, &r),
            "192.0.2.7:51234 GET /x\\ny 200 - 1.500\n"
        );
    }

    #[test]
    fn json_writes_every_field_in_order_as_a_template_writes_its_value() {
        let mut r = record();
        r.kind = Kind::KubeApi;
        r.request_id = Some("4bf92f3577b34da6a3ce929d0e0e4736");
        r.trace_id = Some("0af7651916cd43dd8448eb211c80319c");
        r.tenant = Some("acme");
        r.forwarded_for = Some(b"198.51.100.4");
        r.sni = Some("a.example");
        r.tls_version = Some("TLSv1.3");
        r.bytes_in = Some(12);
        r.upstream = Some("10.0.0.1:8080");
        r.upstream_status = Some(502);
        r.upstream_connect = Some(Duration::from_micros(81));
        r.upstream_first_byte = Some(Duration::from_micros(501));
        r.refusal = Some("the \"backend\" refused");
        r.referer = Some(b"https://b.example/\xff");
        r.verb = Some("exec");
        r.namespace = Some("default");
        r.pod = Some("web-0");
        r.leaf = Some("leaf-a");
        r.end_reason = Some("client closed");
        r.throttled = Some(Duration::from_millis(7));
        let line = text(&AccessLogFormat::Json, false, &r);
        let _: serde_json::Value = serde_json::from_str(&line).unwrap();
        // Every key, in order: where each value starts, and ends where the next key does.
        let mut starts = Vec::new();
        let mut at = 0;
        for field in LogField::ALL {
            let key = format!("\"{}\":", field.name());
            let found = line[at..]
                .find(&key)
                .unwrap_or_else(|| panic!("{key} missing or out of order in {line}"));
            starts.push((at + found, at + found + key.len()));
            at += found + key.len();
        }
        let ends = starts.iter().skip(1).map(|&(key, _)| key - 1);
        let ends = ends.chain([line.len() - 2]); // before the `}\n`
        for ((field, (_, from)), end) in LogField::ALL.into_iter().zip(starts.clone()).zip(ends) {
            let written = &line[from..end];
            let written = written
                .strip_prefix('"')
                .and_then(|w| w.strip_suffix('"'))
                .unwrap_or(written);
            let pieces = TemplatePiece::parse_template(&format!("{{{}}}", field.name())).unwrap();
            let templated = text(&AccessLogFormat::Template(pieces), false, &r);
            assert_eq!(
                written,
                templated.trim_end_matches('\n'),
                "{}",
                field.name()
            );
        }
    }

    #[test]
    fn a_line_too_long_for_the_buffer_says_so() {
        let mut buf = Vec::with_capacity(64);
        let mut out = Out::new(&mut buf);
        line(&AccessLogFormat::Json, false, &record(), &mut out);
        assert!(out.full);
    }
}
