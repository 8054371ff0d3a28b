//! W3C trace context (Trace Context Level 1, §3.2): a request's `traceparent` read, or a
//! new one started.
//!
//! leafgate records no spans (it exports none), so it is not a participant in the trace:
//! a valid `traceparent` goes on as it came, parent-id included, and the backend's span
//! hangs under the caller's (the spec's rule for a system that does not take part:
//! forward the headers unchanged). A missing or invalid one is replaced by a new trace
//! (new trace-id and parent-id, flags `01`, sampled, so the backend records the trace
//! leafgate's log line names), and `tracestate` goes with the invalid parent (the spec:
//! a `tracestate` is not read without a valid `traceparent`).

use super::request_id::{hex, next_pair};

/// A version-00 `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`.
pub const LEN: usize = 55;

/// Whether `value` is a version-00 `traceparent`: lowercase hex fields of the sizes
/// above, separated by `-`, neither id all zeros.
pub fn is_valid(value: &[u8]) -> bool {
    if value.len() != LEN || &value[..3] != b"00-" || value[35] != b'-' || value[52] != b'-' {
        return false;
    }
    let hex = |r: &[u8]| {
        r.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let (trace, parent, flags) = (&value[3..35], &value[36..52], &value[53..]);
    hex(trace)
        && hex(parent)
        && hex(flags)
        && trace.iter().any(|&b| b != b'0')
        && parent.iter().any(|&b| b != b'0')
}

/// The trace-id of a valid `traceparent`.
pub fn trace_id(traceparent: &[u8]) -> &[u8] {
    &traceparent[3..35]
}

/// A new trace's `traceparent`: new trace-id and parent-id, flags `01`.
pub fn start() -> [u8; LEN] {
    let mut out = *b"00-00000000000000000000000000000000-0000000000000000-01";
    let (a, b) = next_pair();
    hex(&mut out[3..19], a);
    hex(&mut out[19..35], b);
    let (c, d) = next_pair();
    hex(&mut out[36..52], c | d.min(1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_00_traceparent_is_read_as_the_spec_writes_it() {
        // The spec's own example (§3.2.2.5).
        let example = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(is_valid(example));
        assert_eq!(trace_id(example), b"4bf92f3577b34da6a3ce929d0e0e4736");
        for bad in [
            &b"00-00000000000000000000000000000000-00f067aa0ba902b7-01"[..],
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            b"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            b"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            b"",
        ] {
            assert!(!is_valid(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_started_trace_is_valid_and_new() {
        let (a, b) = (start(), start());
        assert!(is_valid(&a) && is_valid(&b));
        assert_ne!(trace_id(&a), trace_id(&b));
        assert!(a.ends_with(b"-01"));
    }
}
