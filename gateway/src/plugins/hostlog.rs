//! What a plugin writes with `host.log`: one line in the gateway's log, never more, never
//! large, never a flood.
//!
//! A plugin is untrusted, and its message lands next to the gateway's own lines: control
//! characters (newlines first) are escaped so one call cannot forge log lines, the text is
//! cut at [`MAX_MESSAGE`] bytes with a marker saying how long it was, and each plugin (one
//! tenant's hook, all its instances together) gets a token bucket of [`BURST`] lines
//! refilled at [`RATE`] a second. Lines over it are dropped, counted in
//! `leafgate_plugin_log_lines_dropped_total`, and the next line let through is preceded by
//! one line saying how many went.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;

use super::bindings::host::Level;

/// The longest message written, in bytes of escaped text (the marker comes on top).
pub(crate) const MAX_MESSAGE: usize = 4096;
/// Lines a second a plugin may write, on average.
pub(crate) const RATE: f64 = 10.0;
/// Lines a plugin may write at once, after a quiet spell.
pub(crate) const BURST: f64 = 100.0;

/// One plugin's log: who it is, and its share of lines.
pub(crate) struct PluginLog {
    tenant: String,
    plugin: String,
    bucket: Mutex<Bucket>,
    dropped: Counter,
}

struct Bucket {
    tokens: f64,
    at: Instant,
    /// Lines dropped since the last one written.
    dropped: u64,
}

impl PluginLog {
    pub fn new(tenant: &str, plugin: &str, dropped: Counter) -> Self {
        PluginLog {
            tenant: tenant.into(),
            plugin: plugin.into(),
            bucket: Mutex::new(Bucket {
                tokens: BURST,
                at: Instant::now(),
                dropped: 0,
            }),
            dropped,
        }
    }

    /// Writes `message` at `level`, escaped and bounded, if the plugin's budget allows.
    pub fn write(&self, level: Level, message: &str) {
        let Some(dropped) = self.admit(Instant::now()) else {
            return;
        };
        let (tenant, plugin) = (&*self.tenant, &*self.plugin);
        if dropped > 0 {
            tracing::warn!(
                tenant,
                plugin,
                "the plugin's log went over {RATE} lines a second: {dropped} lines dropped"
            );
        }
        let message = clean(message);
        match level {
            Level::Trace => tracing::trace!(tenant, plugin, "{message}"),
            Level::Debug => tracing::debug!(tenant, plugin, "{message}"),
            Level::Info => tracing::info!(tenant, plugin, "{message}"),
            Level::Warn => tracing::warn!(tenant, plugin, "{message}"),
            Level::Error => tracing::error!(tenant, plugin, "{message}"),
        }
    }

    /// Takes a line's token: `Some(lines dropped since the last one written)`, or `None`
    /// (counted) when the bucket is empty.
    fn admit(&self, now: Instant) -> Option<u64> {
        let mut b = self.bucket.lock().expect("plugin log poisoned");
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * RATE).min(BURST);
        b.at = now.max(b.at);
        if b.tokens < 1.0 {
            b.dropped += 1;
            self.dropped.inc();
            return None;
        }
        b.tokens -= 1.0;
        Some(std::mem::take(&mut b.dropped))
    }
}

/// `message` as one line: control characters and Unicode line separators escaped
/// (`\n`, `\r`, `\t`, `\u{..}`), cut at [`MAX_MESSAGE`] bytes with a marker.
pub(crate) fn clean(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE));
    for (at, c) in message.char_indices() {
        let start = out.len();
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            // `escape_default` spells \n, \r and \t as such, others as \u{..}.
            let _ = write!(out, "{}", c.escape_default());
        } else {
            out.push(c);
        }
        if out.len() > MAX_MESSAGE {
            out.truncate(start);
            let _ = write!(
                out,
                " [leafgate: truncated, {} of {} bytes]",
                at,
                message.len()
            );
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn newlines_and_control_characters_are_escaped_into_one_line() {
        let forged =
            "ok\n2026-01-01T00:00:00Z  INFO leafgate: admin token is x\r\x1b[2J\u{2028}\t!";
        let line = clean(forged);
        assert_eq!(
            line,
            r"ok\n2026-01-01T00:00:00Z  INFO leafgate: admin token is x\r\u{1b}[2J\u{2028}\t!"
        );
        assert!(!line.chars().any(|c| c.is_control()));
        assert_eq!(clean("plain é text"), "plain é text");
    }

    #[test]
    fn a_huge_message_is_cut_at_4_kib_with_a_marker() {
        let huge = "é".repeat(300_000);
        let line = clean(&huge);
        let (text, marker) = line.split_at(line.find(" [leafgate").unwrap());
        assert!(text.len() <= MAX_MESSAGE && text.len() > MAX_MESSAGE - 4);
        assert_eq!(marker, " [leafgate: truncated, 4096 of 600000 bytes]");

        // Escapes count: a message of newlines is bounded too.
        let line = clean(&"\n".repeat(100_000));
        assert!(line.len() < MAX_MESSAGE + 64, "{}", line.len());
        assert!(line.starts_with(r"\n\n") && !line.contains('\n'));
    }

    #[test]
    fn a_flood_is_held_to_the_burst_then_the_rate_and_the_drops_are_counted() {
        let dropped = Counter::default();
        let log = PluginLog::new("t", "p", dropped.clone());
        let start = Instant::now();
        let written = (0..1000).filter(|_| log.admit(start).is_some()).count();
        assert_eq!(written, BURST as usize);
        assert_eq!(dropped.get(), 1000 - BURST as u64);

        // A second later, RATE more lines; the first of them carries the count of drops.
        let later = start + Duration::from_secs(1);
        assert_eq!(log.admit(later), Some(1000 - BURST as u64));
        let more = (0..100).filter(|_| log.admit(later).is_some()).count();
        assert_eq!(more, RATE as usize - 1);
        assert_eq!(
            log.admit(later + Duration::from_secs(60)),
            Some(100 - more as u64)
        );
    }

    /// What `write` puts in the gateway's log, captured through a tracing subscriber.
    #[test]
    fn a_flood_of_forged_lines_comes_out_as_bounded_escaped_lines_and_one_summary() {
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        let log = PluginLog::new("team-a", "chatty", Counter::default());
        let forged = format!("x\n{}", "FORGED line\n".repeat(10_000));
        let started = std::time::Instant::now();
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..1000 {
                log.write(Level::Info, &forged);
            }
        });
        // The bucket refills while the flood runs (slowly, on a loaded machine).
        let refilled = (started.elapsed().as_secs_f64() * RATE).floor() as usize;
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            (BURST as usize..=BURST as usize + refilled).contains(&lines.len()),
            "one line a call, burst-bounded: {} lines, {refilled} refilled",
            lines.len()
        );
        assert!(lines.iter().all(|l| l.len() < MAX_MESSAGE + 200), "bounded");
        assert!(
            lines
                .iter()
                .all(|l| l.contains("tenant=\"team-a\"") || l.contains("tenant=team-a"))
        );
        assert!(lines.iter().all(|l| l.contains("truncated")));
    }
}
