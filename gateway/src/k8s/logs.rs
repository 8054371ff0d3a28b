//! Container logs through the tenant's `log-filter`: the leaf's log body split into lines,
//! batched, filtered, and streamed on to the client.
//!
//! A line is whole before the plugin sees it: a partial line is held until its newline (or
//! the end of the stream), so a secret split across two chunks is still filtered whole, and
//! no line the plugin sees holds a newline (the log-filter ABI joins a batch's lines with
//! `\n`). A line longer than [`LogBatching::max_line`] (the filter's window) is filtered in
//! pieces of that size, each starting [`LogBatching::overlap`] bytes before the previous one
//! ended, and a byte goes out only once a piece has shown it to the plugin with the overlap
//! after it (or the line's end): see [`splice`]. A secret no longer than the overlap is then
//! always seen whole before any byte of it goes out; nothing of a long line passes raw. Lines are batched up to
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
    /// The filter's window: a line longer than this is filtered in pieces of this size. It
    /// bounds what is held and what one plugin call gets.
    pub max_line: usize,
    /// How much consecutive pieces of a long line share: at least the longest match the
    /// tenant's filter must see whole. Capped at a quarter of `max_line`, so each piece
    /// moves the line on by three quarters of the window at least.
    pub overlap: usize,
}

impl Default for LogBatching {
    fn default() -> Self {
        LogBatching {
            max_lines: 256,
            window: Duration::from_millis(5),
            max_line: 64 * 1024,
            overlap: 4 * 1024,
        }
    }
}

impl LogBatching {
    fn overlap(&self) -> usize {
        self.overlap.min(self.max_line / 4)
    }
}

/// Called with each batch's counts.
pub type OnLogCounts = Arc<dyn Fn(LogCounts) + Send + Sync>;

/// A line and whether it ended with a newline (the last line of a stream may not).
struct Line {
    text: String,
    newline: bool,
    /// Set on each piece of a line longer than the window.
    piece: Option<Piece>,
}

/// Where a piece stands in its long line.
#[derive(Clone, Copy)]
struct Piece {
    /// How many bytes at the end of this piece's text the next piece starts with (0 on the
    /// line's last piece).
    tail: usize,
}

/// The long line being emitted piece by piece: what of the last piece's tail went out.
#[derive(Default)]
struct Cursor {
    /// Bytes at the start of the next piece that went out already (in some form).
    context: usize,
    /// Whether anything of this line went out: its newline then goes out even if its last
    /// piece is dropped, so the next line does not run on from it.
    emitted: bool,
}

struct State<S> {
    body: S,
    /// Bytes after the last newline seen.
    partial: BytesMut,
    /// Whether pieces were cut from the line `partial` holds the rest of.
    cutting: bool,
    /// The long line whose pieces are being emitted.
    cursor: Cursor,
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
        cutting: false,
        cursor: Cursor::default(),
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
                self.cut_piece();
            }
            // Every piece but the last ended at a newline.
            if pieces.peek().is_some() {
                self.cut_partial(true);
            }
        }
    }

    /// Cuts the window's worth off the front of an overlong partial line as one piece,
    /// keeping its last `overlap` bytes to start the next piece with.
    fn cut_piece(&mut self) {
        let end = char_floor(&self.partial, self.opts.max_line);
        let next = char_floor(&self.partial, end - self.opts.overlap()).max(1);
        let text = String::from_utf8_lossy(&self.partial[..end]).into_owned();
        let tail = String::from_utf8_lossy(&self.partial[next..end]).len();
        let _ = self.partial.split_to(next);
        self.cutting = true;
        self.push(Line {
            text,
            newline: false,
            piece: Some(Piece { tail }),
        });
    }

    /// Moves the held partial line into the batch (at a newline, or at the end).
    fn cut_partial(&mut self, newline: bool) {
        let piece = std::mem::take(&mut self.cutting).then_some(Piece { tail: 0 });
        if self.partial.is_empty() && !newline && piece.is_none() {
            return;
        }
        let text = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial.clear();
        self.push(Line {
            text,
            newline,
            piece,
        });
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
            match &verdict {
                Verdict::Keep => counts.kept += 1,
                Verdict::Drop => counts.dropped += 1,
                Verdict::Replace(_) => counts.rewritten += 1,
            }
            if let Some(piece) = line.piece {
                self.emit_piece(&line, piece, verdict, &mut out);
                continue;
            }
            let text = match verdict {
                Verdict::Keep => line.text,
                Verdict::Drop => continue,
                Verdict::Replace(text) => text,
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

impl<S> State<S> {
    /// Appends what one piece of a long line lets out, moving the line's cursor on.
    fn emit_piece(&mut self, line: &Line, piece: Piece, verdict: Verdict, out: &mut BytesMut) {
        let text = match verdict {
            Verdict::Keep => None,
            Verdict::Drop => Some(String::new()),
            Verdict::Replace(text) => Some(text),
        };
        let text = text.as_deref().unwrap_or(&line.text);
        let (range, held) = splice(&line.text, text, self.cursor.context, piece.tail);
        if !range.is_empty() {
            out.extend_from_slice(text[range].as_bytes());
            self.cursor.emitted = true;
        }
        if piece.tail == 0 {
            if line.newline && self.cursor.emitted {
                out.extend_from_slice(b"\n");
            }
            self.cursor = Cursor::default();
        } else {
            self.cursor.context = piece.tail - held;
        }
    }
}

/// Which part of a piece's filtered `text` goes out, and how many bytes at the end of the
/// piece are held back for the next one.
///
/// `raw` is the piece as the plugin saw it, `text` its verdict's text (`raw` for keep, empty
/// for drop), `context` how many bytes at the start of `raw` went out already (with the
/// previous piece), `tail` how many at its end the next piece starts with (0 on the last).
///
/// The plugin's rewrite is located by what `text` and `raw` share at either end. Bytes
/// before the first change that went out already are skipped; a rewrite that starts inside
/// them is sent again from the change on (the text around a cut may repeat, never raw).
/// The tail goes out with the next piece when the plugin left it as it was, so each byte is
/// shown with the overlap after it; a rewrite reaching into the tail goes out whole and only
/// the unchanged bytes after it wait for the next piece, which sees them after the same
/// overlap of context.
fn splice(raw: &str, text: &str, context: usize, tail: usize) -> (std::ops::Range<usize>, usize) {
    let prefix = text
        .bytes()
        .zip(raw.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let prefix = floor_boundary(text, prefix);
    let most = text.len().min(raw.len()) - prefix;
    let mut suffix = text
        .bytes()
        .rev()
        .zip(raw.bytes().rev())
        .take(most)
        .take_while(|(a, b)| a == b)
        .count();
    while !text.is_char_boundary(text.len() - suffix) {
        suffix -= 1;
    }
    let start = if prefix >= context { context } else { prefix };
    let (end, held) = if tail == 0 {
        (text.len(), 0)
    } else if text
        .as_bytes()
        .ends_with(&raw.as_bytes()[raw.len() - tail..])
    {
        (text.len() - tail, tail)
    } else {
        (text.len() - suffix, suffix)
    };
    (start.min(end)..end, held)
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `at`, moved back (by 3 bytes at most) so it does not cut a UTF-8 sequence: both pieces
/// then read the bytes they share alike.
fn char_floor(bytes: &[u8], at: usize) -> usize {
    let mut cut = at;
    while cut > at.saturating_sub(3) && cut < bytes.len() && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    if cut == 0 { at } else { cut }
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
            ..LogBatching::default()
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
            ..LogBatching::default()
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
            ..LogBatching::default()
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

    /// A stand-in for `redact` with `password=\S+`: every `password=` and the non-blanks
    /// after it become `password=***`, a match cut short by a piece's end included.
    fn redact(line: &str) -> Verdict {
        let mut out = String::new();
        let mut rest = line;
        while let Some(at) = rest.find("password=") {
            out.push_str(&rest[..at + 9]);
            out.push_str("***");
            rest = &rest[at + 9..];
            rest = &rest[rest.find(' ').unwrap_or(rest.len())..];
        }
        if out.is_empty() {
            return Verdict::Keep;
        }
        out.push_str(rest);
        Verdict::Replace(out)
    }

    /// Runs `input` through the cutter and the piece splicer with `verdict` as the plugin,
    /// piece by piece; what the client would get.
    fn through(input: &str, opts: LogBatching, verdict: impl Fn(&str) -> Verdict) -> String {
        let mut s = State {
            body: stream::empty::<Chunk>(),
            partial: BytesMut::new(),
            cutting: false,
            cursor: Cursor::default(),
            batch: Vec::new(),
            due: None,
            ended: false,
            broken: None,
            failed: false,
            plugins: no_plugins(),
            ctx: LogContext::default(),
            opts,
            on_counts: counter().1,
        };
        s.take(input.as_bytes());
        s.cut_partial(false);
        let mut out = BytesMut::new();
        for line in std::mem::take(&mut s.batch) {
            let v = verdict(&line.text);
            assert!(
                line.text.len() <= opts.max_line,
                "a piece within the window"
            );
            match line.piece {
                Some(piece) => s.emit_piece(&line, piece, v, &mut out),
                None => panic!("only long lines here"),
            }
        }
        String::from_utf8(out.to_vec()).unwrap()
    }

    fn window(max_line: usize, overlap: usize) -> LogBatching {
        LogBatching {
            max_line,
            overlap,
            ..LogBatching::default()
        }
    }

    #[test]
    fn a_secret_across_every_possible_cut_never_goes_out_in_clear() {
        // The secret starts at every offset around the first cut, and around the second.
        for at in 40..70 {
            let line = format!("{} password=hunter2 {}\n", "x".repeat(at), "y".repeat(at));
            let out = through(&line, window(64, 16), redact);
            assert!(!out.contains("hunter2"), "at {at}: {out}");
            assert!(
                !out.contains("hunt") && !out.contains("er2"),
                "at {at}: {out}"
            );
            assert!(out.starts_with(&"x".repeat(at)), "at {at}: {out}");
            assert!(
                out.ends_with(&format!(" {}\n", "y".repeat(at))),
                "at {at}: {out}"
            );
            assert!(out.contains("password=***"), "at {at}: {out}");
        }
    }

    #[test]
    fn a_long_line_kept_whole_comes_out_byte_exact_and_once() {
        let line: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        for (max_line, overlap) in [(64, 16), (100, 7), (64, 0), (4096, 1024)] {
            let out = through(&format!("{line}\n"), window(max_line, overlap), |_| {
                Verdict::Keep
            });
            assert_eq!(out, format!("{line}\n"), "{max_line}/{overlap}");
        }
    }

    #[test]
    fn a_long_line_of_multibyte_text_is_cut_between_characters() {
        let line = "é€😀".repeat(300);
        let out = through(&format!("{line}\n"), window(64, 16), |_| Verdict::Keep);
        assert_eq!(out, format!("{line}\n"));
    }

    #[test]
    fn a_rewrite_away_from_the_cuts_comes_out_once() {
        let line = format!("{} password=hunter2 {}\n", "x".repeat(10), "y".repeat(200));
        let out = through(&line, window(64, 16), redact);
        assert_eq!(
            out,
            format!("{} password=*** {}\n", "x".repeat(10), "y".repeat(200))
        );
    }

    #[test]
    fn a_match_exactly_as_long_as_the_overlap_is_seen_whole() {
        // A fixed-length secret the plugin only recognises whole: a cut inside it must not
        // let its first part out before the next piece has seen all of it.
        let secret = "TOKEN0123456789A"; // 16 bytes, the overlap
        let whole = |line: &str| match line.find(secret) {
            Some(_) => Verdict::Replace(line.replace(secret, "[token]")),
            None => Verdict::Keep,
        };
        for at in 30..70 {
            let line = format!("{}{secret}{}\n", "x".repeat(at), "y".repeat(100));
            let out = through(&line, window(64, 16), whole);
            assert!(!out.contains("TOKEN0"), "at {at}: {out}");
            assert!(!out.contains("89A"), "at {at}: {out}");
            assert!(out.contains("[token]"), "at {at}: {out}");
        }
    }

    #[test]
    fn a_dropped_piece_takes_its_bytes_and_keeps_the_line_ended() {
        let line = format!("{}SECRET{}\nnext\n", "a".repeat(100), "b".repeat(100));
        let drop_secret = |l: &str| {
            if l.contains("SECRET") || l.contains("SECR") || l.contains("CRET") {
                Verdict::Drop
            } else {
                Verdict::Keep
            }
        };
        let opts = window(64, 16);
        let mut s = through(&line[..line.find('\n').unwrap() + 1], opts, drop_secret);
        assert!(!s.contains("SEC") && !s.contains("RET"), "{s}");
        assert!(s.ends_with('\n'), "{s}");
        s.pop();
        assert!(!s.contains('\n'));
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
