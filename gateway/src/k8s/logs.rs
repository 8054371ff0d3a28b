//! Container logs through the tenant's `log-filter`: the leaf's log body split into lines,
//! batched, filtered, and streamed on to the client.
//!
//! A line is whole before the plugin sees it: a partial line is held until its newline (or
//! the end of the stream, or [`LogBatching::max_line`] bytes, past which it goes as is), so a
//! secret split across two chunks is still filtered whole, and no line the plugin sees holds
//! a newline (the log-filter ABI joins a batch's lines with `\n`). Lines are batched up to
//! [`LogBatching::max_lines`] or for [`LogBatching::window`] after the first line of a batch,
//! whichever comes first, so one plugin call covers a burst while `follow` stays live: a
//! line written at the leaf reaches the client within the window plus the plugin's time.
//!
//! The filtered body is a stream polled by the client's connection: when the client goes
//! away it is dropped, and with it the leaf's response, which closes the leaf's stream at
//! once. A plugin failure under `on_error = "reject"` ends the stream with one error line;
//! under `"default"` the tenant's plugins answer "keep" and the batch passes unfiltered.
//! This module knows nothing of routes, leaves or HTTP heads.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use crate::metrics::LogCounts;
use crate::plugins::{LogBatch, LogContext, PluginError, TenantPlugins, Verdict};

/// How lines are grouped into plugin calls.
#[derive(Debug, Clone, Copy)]
pub struct LogBatching {
    /// A batch is sent as soon as it holds this many lines.
    pub max_lines: usize,
    /// ... or this long after its first line arrived.
    pub window: Duration,
    /// A line longer than this is cut here, each part filtered as a line of its own: it
    /// bounds what is held and what one plugin call gets.
    pub max_line: usize,
}

impl Default for LogBatching {
    fn default() -> Self {
        LogBatching {
            max_lines: 256,
            window: Duration::from_millis(5),
            max_line: 64 * 1024,
        }
    }
}

/// Called with each batch's counts.
pub type OnLogCounts = Arc<dyn Fn(LogCounts) + Send + Sync>;

/// A line and whether it ended with a newline (the last line of a stream may not).
struct Line {
    text: String,
    newline: bool,
}

struct State<S> {
    body: S,
    /// Bytes after the last newline seen.
    partial: BytesMut,
    batch: Vec<Line>,
    /// When the current batch must go, set by its first line.
    due: Option<Instant>,
    ended: bool,
    /// Why the leaf's stream broke off, sent after what came before it.
    broken: Option<String>,
    failed: bool,
    plugins: Arc<TenantPlugins>,
    ctx: LogContext,
    opts: LogBatching,
    on_counts: OnLogCounts,
}

/// Filters `body` (the leaf's log response body) through `plugins`' log-filter.
///
/// Without a log-filter the tenant's plugins keep every line, but lines are still cut
/// and batched, so the client sees the same stream shape either way.
pub fn filter<S, E>(
    body: S,
    plugins: Arc<TenantPlugins>,
    ctx: LogContext,
    opts: LogBatching,
    on_counts: OnLogCounts,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let state = State {
        body,
        partial: BytesMut::new(),
        batch: Vec::new(),
        due: None,
        ended: false,
        broken: None,
        failed: false,
        plugins,
        ctx,
        opts,
        on_counts,
    };
    futures_util::stream::unfold(state, |mut s| async move {
        let out = s.next_output().await?;
        Some((out, s))
    })
}

impl<S, E> State<S>
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    E: std::fmt::Display,
{
    /// The next bytes for the client, or `None` when the stream is over.
    async fn next_output(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        loop {
            if self.failed {
                return None;
            }
            let full = self.batch.len() >= self.opts.max_lines;
            let due = self.due.is_some_and(|d| d <= Instant::now());
            if !self.batch.is_empty() && (full || due || self.ended) {
                let out = self.flush().await;
                match out {
                    Ok(bytes) if bytes.is_empty() => continue,
                    other => return Some(other),
                }
            }
            if self.ended {
                return self.broken.take().map(|e| Err(std::io::Error::other(e)));
            }
            let chunk = match self.due {
                Some(due) => tokio::select! {
                    chunk = self.body.next() => chunk,
                    _ = tokio::time::sleep_until(due) => continue,
                },
                None => self.body.next().await,
            };
            match chunk {
                Some(Ok(bytes)) => self.take(&bytes),
                Some(Err(e)) => {
                    // The leaf broke off: what came so far is filtered and sent, then the
                    // client's stream breaks off too, so it does not look complete.
                    tracing::debug!(error = %e, "the leaf's log stream broke off");
                    self.ended = true;
                    self.broken = Some(e.to_string());
                    self.cut_partial(false);
                }
                None => {
                    self.ended = true;
                    self.cut_partial(false);
                }
            }
        }
    }

    /// Cuts `bytes` into lines, holding back the part after the last newline.
    fn take(&mut self, bytes: &[u8]) {
        let mut pieces = bytes.split(|&b| b == b'\n').peekable();
        while let Some(piece) = pieces.next() {
            self.partial.extend_from_slice(piece);
            while self.partial.len() > self.opts.max_line {
                let head = self.partial.split_to(self.opts.max_line);
                self.push(Line {
                    text: String::from_utf8_lossy(&head).into_owned(),
                    newline: false,
                });
            }
            // Every piece but the last ended at a newline.
            if pieces.peek().is_some() {
                self.cut_partial(true);
            }
        }
    }

    /// Moves the held partial line into the batch (at a newline, or at the end).
    fn cut_partial(&mut self, newline: bool) {
        if self.partial.is_empty() && !newline {
            return;
        }
        let text = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        self.push(Line { text, newline });
    }

    fn push(&mut self, line: Line) {
        if self.batch.is_empty() {
            self.due = Some(Instant::now() + self.opts.window);
        }
        self.batch.push(line);
    }

    /// Filters the batch and returns the bytes to send; a rejecting plugin failure gives one
    /// error line and ends the stream.
    async fn flush(&mut self) -> Result<Bytes, std::io::Error> {
        let n = self.batch.len().min(self.opts.max_lines);
        let batch: Vec<Line> = self.batch.drain(..n).collect();
        // Lines left over from a burst have waited already: they go next, at once.
        self.due = (!self.batch.is_empty()).then(Instant::now);
        // One text for the whole batch: the plugin gets it as one string.
        let texts = match LogBatch::from_lines(batch.iter().map(|l| l.text.as_str())) {
            Ok(texts) => texts,
            // Cannot happen: lines are cut at every newline. Were one to hold a newline,
            // the stream ends as on a failed filter rather than pass unfiltered.
            Err(e) => {
                self.failed = true;
                return Ok(Bytes::from(format!("leafgate: log stream ended: {e}\n")));
            }
        };
        let verdicts = match self.plugins.log_verdicts(&self.ctx, &texts).await {
            Ok(v) => v,
            Err(e) => {
                self.failed = true;
                return Ok(Bytes::from(rejection_line(&e)));
            }
        };
        let mut counts = LogCounts::default();
        let mut out = BytesMut::new();
        for (line, verdict) in batch.into_iter().zip(verdicts) {
            let text = match verdict {
                Verdict::Keep => {
                    counts.kept += 1;
                    line.text
                }
                Verdict::Drop => {
                    counts.dropped += 1;
                    continue;
                }
                Verdict::Replace(text) => {
                    counts.rewritten += 1;
                    text
                }
            };
            out.extend_from_slice(text.as_bytes());
            if line.newline {
                out.extend_from_slice(b"\n");
            }
        }
        (self.on_counts)(counts);
        Ok(out.freeze())
    }
}

/// The one line a rejected batch leaves in the stream.
fn rejection_line(e: &PluginError) -> String {
    format!("leafgate: log stream ended: the tenant's log filter failed: {e}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    use futures_util::stream;
    use tokio::sync::mpsc;

    type Chunk = Result<Bytes, std::io::Error>;

    /// A receiver as a stream, so a test can write to the "leaf" while the filter runs.
    fn leaf(rx: mpsc::Receiver<Chunk>) -> impl Stream<Item = Chunk> + Unpin + Send + 'static {
        Box::pin(stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|c| (c, rx))
        }))
    }

    fn no_plugins() -> Arc<TenantPlugins> {
        Arc::new(TenantPlugins::none("t"))
    }

    fn counter() -> (Arc<Mutex<LogCounts>>, OnLogCounts) {
        let total = Arc::new(Mutex::new(LogCounts::default()));
        let sink = total.clone();
        let f = move |c: LogCounts| {
            let mut t = sink.lock().unwrap();
            t.kept += c.kept;
            t.dropped += c.dropped;
            t.rewritten += c.rewritten;
        };
        (total, Arc::new(f))
    }

    async fn collect(chunks: Vec<&'static str>, opts: LogBatching) -> (Vec<Bytes>, LogCounts) {
        let body = stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c.as_bytes()))),
        );
        let (total, on_counts) = counter();
        let out: Vec<Bytes> = filter(body, no_plugins(), LogContext::default(), opts, on_counts)
            .map(|r| r.unwrap())
            .collect()
            .await;
        let counts = *total.lock().unwrap();
        (out, counts)
    }

    #[tokio::test]
    async fn lines_split_across_chunks_arrive_whole_and_byte_exact() {
        let (out, counts) = collect(
            vec!["one\ntw", "o\nthr", "ee", "\nlast without newline"],
            LogBatching::default(),
        )
        .await;
        let all: Vec<u8> = out.iter().flat_map(|b| b.to_vec()).collect();
        assert_eq!(
            String::from_utf8(all).unwrap(),
            "one\ntwo\nthree\nlast without newline"
        );
        assert_eq!(counts.kept, 4);
    }

    #[tokio::test]
    async fn a_full_batch_goes_without_waiting_for_the_window() {
        let opts = LogBatching {
            max_lines: 2,
            window: Duration::from_secs(3600),
            max_line: 1024,
        };
        let (out, _) = collect(vec!["a\nb\nc\nd\ne\n"], opts).await;
        let texts: Vec<&[u8]> = out.iter().map(|b| b.as_ref()).collect();
        assert_eq!(texts, vec![&b"a\nb\n"[..], b"c\nd\n", b"e\n"]);
    }

    #[tokio::test]
    async fn an_overlong_partial_line_is_cut() {
        let opts = LogBatching {
            max_lines: 100,
            window: Duration::from_millis(1),
            max_line: 4,
        };
        let (out, counts) = collect(vec!["abcdefghij\n"], opts).await;
        let all: Vec<u8> = out.iter().flat_map(|b| b.to_vec()).collect();
        assert_eq!(all, b"abcdefghij\n");
        assert_eq!(counts.kept, 3, "abcd, efgh, ij");
    }

    #[tokio::test(start_paused = true)]
    async fn a_follow_delivers_each_line_within_the_window_while_the_leaf_stays_open() {
        let (tx, rx) = mpsc::channel::<Chunk>(8);
        let opts = LogBatching {
            max_lines: 100,
            window: Duration::from_millis(20),
            max_line: 1024,
        };
        let (_, on_counts) = counter();
        let mut out = Box::pin(filter(
            leaf(rx),
            no_plugins(),
            LogContext::default(),
            opts,
            on_counts,
        ));
        tx.send(Ok(Bytes::from_static(b"first\n"))).await.unwrap();
        let started = Instant::now();
        let got = out.next().await.unwrap().unwrap();
        assert_eq!(got, Bytes::from_static(b"first\n"));
        assert!(started.elapsed() <= Duration::from_millis(20));

        // Minutes of silence, then a line: it still comes through.
        tokio::time::sleep(Duration::from_secs(300)).await;
        tx.send(Ok(Bytes::from_static(b"after silence\n")))
            .await
            .unwrap();
        assert_eq!(
            out.next().await.unwrap().unwrap(),
            Bytes::from_static(b"after silence\n")
        );
        drop(tx);
        assert!(out.next().await.is_none());
    }

    #[tokio::test]
    async fn dropping_the_filtered_stream_drops_the_leaf_body() {
        let (tx, rx) = mpsc::channel::<Chunk>(1);
        let (_, on_counts) = counter();
        let out = filter(
            leaf(rx),
            no_plugins(),
            LogContext::default(),
            LogBatching::default(),
            on_counts,
        );
        drop(out);
        // The receiver went with the stream: the leaf side sees the client gone at once.
        assert!(tx.is_closed());
    }

    #[tokio::test]
    async fn a_broken_leaf_stream_sends_what_came_then_ends() {
        let body = stream::iter(vec![
            Ok(Bytes::from_static(b"kept\npart")),
            Err(std::io::Error::other("reset by the leaf")),
        ]);
        let (_, on_counts) = counter();
        let out: Vec<_> = filter(
            body,
            no_plugins(),
            LogContext::default(),
            LogBatching::default(),
            on_counts,
        )
        .collect()
        .await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().unwrap(), &Bytes::from_static(b"kept\npart"));
        assert!(
            out[1]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("reset by the leaf")
        );
    }
}
