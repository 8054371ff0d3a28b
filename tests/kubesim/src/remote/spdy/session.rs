//! The server side of one SPDY/3.1 connection: accepts the client's streams (odd ids),
//! answers each SYN_STREAM with a SYN_REPLY, delivers each stream's DATA in order, echoes
//! PINGs and keeps per-stream flow-control windows in both directions.
//!
//! Flow control: we start every receive window at 64 KiB and send WINDOW_UPDATE for what the
//! consumer has taken. For sending we track the peer's windows (64 KiB, or what its SETTINGS
//! say) but only wait on them once the peer has sent a WINDOW_UPDATE: `moby/spdystream`, the
//! SPDY library under kubectl and the kubelet, neither sends nor honours WINDOW_UPDATE, so
//! waiting on a window it never reopens would stall every stream after 64 KiB. Connection-level
//! windows (stream 0) are ignored for the same reason.
//!
//! Owns the byte stream and the frame codec; knows nothing of what streams mean (that is the
//! remote-command and port-forward layers' business).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use super::frame::{self, FLAG_FIN, FLAG_UNIDIRECTIONAL, Frame};
use super::headers::{HeaderDecoder, HeaderEncoder, Headers};

/// The receive window we grant every stream, SPDY/3's default.
pub const INITIAL_WINDOW: i64 = 64 * 1024;
/// The largest DATA payload we write; small enough to interleave streams fairly.
const MAX_DATA_CHUNK: usize = 16 * 1024;
/// GOAWAY status codes (SPDY/3 section 2.6.6).
const GOAWAY_OK: u32 = 0;
const GOAWAY_PROTOCOL_ERROR: u32 = 1;
/// Chunks buffered per stream between the reader and the stream's consumer.
const STREAM_QUEUE: usize = 64;

/// Why a write on a stream failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("the SPDY connection is closed")]
    Closed,
    #[error("the peer reset stream {0}")]
    Reset(u32),
}

enum Cmd {
    Frame(Frame),
    /// Send GOAWAY with this status (0 OK, 1 PROTOCOL_ERROR), flush, shut the write side
    /// down and stop.
    Close(u32),
}

#[derive(Default)]
struct FlowState {
    /// Set once the peer has shown it speaks flow control (sent a WINDOW_UPDATE).
    enforce: bool,
    initial: i64,
    windows: HashMap<u32, i64>,
    reset: HashSet<u32>,
    closed: bool,
}

/// The peer's send windows, shared by the reader (which grows them) and the writers.
struct Flow {
    state: Mutex<FlowState>,
    changed: Notify,
}

impl Flow {
    fn update(&self, f: impl FnOnce(&mut FlowState)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
        self.changed.notify_waiters();
    }

    /// Takes up to `want` bytes of stream `id`'s window, waiting while it is shut.
    async fn take(&self, id: u32, want: usize) -> Result<usize, StreamError> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.state.lock().map_err(|_| StreamError::Closed)?;
                if s.closed {
                    return Err(StreamError::Closed);
                }
                if s.reset.contains(&id) {
                    return Err(StreamError::Reset(id));
                }
                let initial = s.initial;
                let enforce = s.enforce;
                let w = s.windows.entry(id).or_insert(initial);
                if !enforce {
                    *w -= want as i64;
                    return Ok(want);
                }
                if *w > 0 {
                    let n = want.min(*w as usize);
                    *w -= n as i64;
                    return Ok(n);
                }
            }
            notified.await;
        }
    }
}

/// The writing half of one stream; clones write to the same stream.
#[derive(Clone)]
pub struct StreamWriter {
    id: u32,
    cmds: mpsc::Sender<Cmd>,
    flow: Arc<Flow>,
}

impl StreamWriter {
    /// Sends `data` as DATA frames, within the peer's window.
    pub async fn write(&self, mut data: Bytes) -> Result<(), StreamError> {
        while !data.is_empty() {
            let n = self
                .flow
                .take(self.id, data.len().min(MAX_DATA_CHUNK))
                .await?;
            let chunk = data.split_to(n);
            self.send(Frame::Data {
                id: self.id,
                flags: 0,
                data: chunk,
            })
            .await?;
        }
        Ok(())
    }

    /// Half-closes the stream: an empty DATA frame with FIN, as spdystream's `Close` sends.
    pub async fn finish(&self) -> Result<(), StreamError> {
        self.send(Frame::Data {
            id: self.id,
            flags: FLAG_FIN,
            data: Bytes::new(),
        })
        .await
    }

    /// Abandons the stream with RST_STREAM.
    pub async fn reset(&self, status: u32) {
        let _ = self
            .send(Frame::RstStream {
                id: self.id,
                status,
            })
            .await;
    }

    async fn send(&self, f: Frame) -> Result<(), StreamError> {
        self.cmds
            .send(Cmd::Frame(f))
            .await
            .map_err(|_| StreamError::Closed)
    }
}

/// The reading half of one stream: its DATA in order, `None` after FIN, RST or the end of
/// the connection.
pub struct StreamReader {
    id: u32,
    rx: mpsc::Receiver<Bytes>,
    cmds: mpsc::Sender<Cmd>,
}

impl StreamReader {
    /// The next chunk; reopens the window by what it hands out.
    pub async fn recv(&mut self) -> Option<Bytes> {
        let b = self.rx.recv().await?;
        if !b.is_empty() {
            let _ = self
                .cmds
                .send(Cmd::Frame(Frame::WindowUpdate {
                    id: self.id,
                    delta: b.len() as u32,
                }))
                .await;
        }
        Some(b)
    }
}

/// A stream the client opened.
pub struct Stream {
    pub id: u32,
    pub headers: Headers,
    pub reader: StreamReader,
    pub writer: StreamWriter,
}

impl Stream {
    /// The first value of header `name` (SPDY header names are lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        super::headers::get(&self.headers, name)
    }
}

/// One served SPDY connection.
pub struct Session {
    /// The client's streams, in the order their SYN_STREAMs arrived; ends when the client
    /// goes away (GOAWAY, EOF or a protocol error).
    pub streams: mpsc::Receiver<Stream>,
    cmds: mpsc::Sender<Cmd>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Session {
    /// Starts serving `io` (an upgraded connection, or a WebSocket tunnel's byte stream).
    pub fn serve<IO>(io: IO) -> Session
    where
        IO: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (rd, wr) = tokio::io::split(io);
        let (cmds, cmd_rx) = mpsc::channel(256);
        let (streams_tx, streams) = mpsc::channel(16);
        let flow = Arc::new(Flow {
            state: Mutex::new(FlowState {
                initial: INITIAL_WINDOW,
                ..FlowState::default()
            }),
            changed: Notify::new(),
        });
        let writer = tokio::spawn(write_loop(wr, cmd_rx, flow.clone()));
        let reader = tokio::spawn(
            Reader {
                cmds: cmds.clone(),
                flow,
                streams: Some(streams_tx),
                open: HashMap::new(),
                last_id: 0,
            }
            .run(rd),
        );
        Session {
            streams,
            cmds,
            reader,
            writer,
        }
    }

    /// Says GOAWAY, flushes what the streams wrote and closes the connection.
    pub async fn close(self) {
        let _ = self.cmds.send(Cmd::Close(GOAWAY_OK)).await;
        // A peer that stops reading must not hold the call open forever.
        let _ = tokio::time::timeout(Duration::from_secs(10), self.writer).await;
        self.reader.abort();
    }
}

async fn write_loop<W: AsyncWrite>(
    wr: tokio::io::WriteHalf<W>,
    mut cmds: mpsc::Receiver<Cmd>,
    flow: Arc<Flow>,
) {
    let mut wr = wr;
    let mut enc = HeaderEncoder::new();
    let mut out = BytesMut::new();
    let mut last_good = 0u32;
    'serve: while let Some(cmd) = cmds.recv().await {
        let mut next = Some(cmd);
        // Coalesce what is already queued into one write.
        while let Some(cmd) = next.take() {
            match cmd {
                Cmd::Frame(f) => {
                    if let Frame::SynReply { id, .. } = &f {
                        last_good = last_good.max(*id);
                    }
                    if let Err(e) = frame::encode(&f, &mut enc, &mut out) {
                        tracing::debug!(error = %e, "spdy: frame not encoded");
                        break 'serve;
                    }
                }
                Cmd::Close(status) => {
                    let _ = frame::encode(&Frame::GoAway { last_good, status }, &mut enc, &mut out);
                    let _ = wr.write_all(&out).await;
                    let _ = wr.flush().await;
                    let _ = wr.shutdown().await;
                    break 'serve;
                }
            }
            if out.len() < 64 * 1024 {
                next = cmds.try_recv().ok();
            }
        }
        if wr.write_all(&out).await.is_err() || wr.flush().await.is_err() {
            break;
        }
        out.clear();
    }
    flow.update(|s| s.closed = true);
}

struct Reader {
    cmds: mpsc::Sender<Cmd>,
    flow: Arc<Flow>,
    streams: Option<mpsc::Sender<Stream>>,
    open: HashMap<u32, mpsc::Sender<Bytes>>,
    last_id: u32,
}

impl Reader {
    async fn run<R: AsyncRead>(mut self, rd: tokio::io::ReadHalf<R>) {
        let mut rd = rd;
        let mut dec = HeaderDecoder::new();
        let mut buf = BytesMut::with_capacity(32 * 1024);
        loop {
            match frame::decode(&mut buf, &mut dec) {
                Ok(Some(f)) => {
                    if !self.handle(f).await {
                        break;
                    }
                }
                Ok(None) => match rd.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                },
                Err(e) => {
                    tracing::debug!(error = %e, "spdy: unreadable frame, closing");
                    let _ = self.cmds.send(Cmd::Close(GOAWAY_PROTOCOL_ERROR)).await;
                    break;
                }
            }
        }
        // Every consumer sees the end: streams' data channels and the stream queue close.
        self.open.clear();
        self.streams = None;
        self.flow.update(|s| s.closed = true);
    }

    async fn reply(&self, f: Frame) {
        let _ = self.cmds.send(Cmd::Frame(f)).await;
    }

    /// Handles one frame; false ends the connection.
    async fn handle(&mut self, f: Frame) -> bool {
        match f {
            Frame::SynStream {
                id, flags, headers, ..
            } => {
                // Client streams are odd and increasing (SPDY/3 section 2.3.2).
                if id == 0 || id % 2 == 0 || id <= self.last_id {
                    self.reply(Frame::RstStream {
                        id,
                        status: frame::RST_PROTOCOL_ERROR,
                    })
                    .await;
                    return true;
                }
                self.last_id = id;
                let (tx, rx) = mpsc::channel(STREAM_QUEUE);
                if flags & (FLAG_FIN | FLAG_UNIDIRECTIONAL) == 0 {
                    self.open.insert(id, tx);
                }
                self.reply(Frame::SynReply {
                    id,
                    flags: 0,
                    headers: Vec::new(),
                })
                .await;
                let stream = Stream {
                    id,
                    headers,
                    reader: StreamReader {
                        id,
                        rx,
                        cmds: self.cmds.clone(),
                    },
                    writer: StreamWriter {
                        id,
                        cmds: self.cmds.clone(),
                        flow: self.flow.clone(),
                    },
                };
                if let Some(s) = &self.streams
                    && s.send(stream).await.is_err()
                {
                    self.streams = None;
                }
            }
            Frame::Data { id, flags, data } => {
                let Some(tx) = self.open.get(&id) else {
                    if id > self.last_id {
                        self.reply(Frame::RstStream {
                            id,
                            status: frame::RST_INVALID_STREAM,
                        })
                        .await;
                    }
                    return true;
                };
                if !data.is_empty() && tx.send(data.clone()).await.is_err() {
                    // Nobody reads this stream any more; keep the peer's window open.
                    self.reply(Frame::WindowUpdate {
                        id,
                        delta: data.len() as u32,
                    })
                    .await;
                }
                if flags & FLAG_FIN != 0 {
                    self.open.remove(&id);
                }
            }
            Frame::Headers { id, flags, .. } => {
                if flags & FLAG_FIN != 0 {
                    self.open.remove(&id);
                }
            }
            Frame::RstStream { id, .. } => {
                self.open.remove(&id);
                self.flow.update(|s| {
                    s.reset.insert(id);
                });
            }
            Frame::Settings { entries, .. } => {
                for (_, key, value) in entries {
                    if key == frame::SETTINGS_INITIAL_WINDOW_SIZE {
                        self.flow.update(|s| {
                            let delta = i64::from(value) - s.initial;
                            s.initial = i64::from(value);
                            for w in s.windows.values_mut() {
                                *w += delta;
                            }
                        });
                    }
                }
            }
            Frame::WindowUpdate { id, delta } => {
                if id != 0 {
                    self.flow.update(|s| {
                        s.enforce = true;
                        let initial = s.initial;
                        *s.windows.entry(id).or_insert(initial) += i64::from(delta);
                    });
                }
            }
            // Our own pings would be even; an odd id is the client's, to echo.
            Frame::Ping { id } if id % 2 == 1 => self.reply(Frame::Ping { id }).await,
            Frame::GoAway { .. } => {
                // No new streams will come; the ones open carry on until the peer hangs up.
                self.streams = None;
            }
            Frame::Ping { .. } | Frame::SynReply { .. } | Frame::Unknown { .. } => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::spdy::testpeer::{self, pair};

    fn syn(id: u32, kind: &str) -> Frame {
        testpeer::syn(id, &[("streamtype", kind)])
    }

    #[tokio::test]
    async fn streams_are_replied_fed_in_order_and_pings_echoed() {
        let (mut s, mut peer) = pair();
        peer.send(syn(1, "stdin")).await;
        assert!(matches!(
            peer.recv().await,
            Some(Frame::SynReply { id: 1, .. })
        ));
        let mut st = s.streams.recv().await.unwrap();
        assert_eq!(st.header("streamtype"), Some("stdin"));
        for part in ["a", "b", "c"] {
            peer.send(Frame::Data {
                id: 1,
                flags: 0,
                data: Bytes::from(part),
            })
            .await;
        }
        peer.send(Frame::Data {
            id: 1,
            flags: FLAG_FIN,
            data: Bytes::new(),
        })
        .await;
        let mut got = Vec::new();
        while let Some(b) = st.reader.recv().await {
            got.extend_from_slice(&b);
        }
        assert_eq!(got, b"abc");
        // Consuming the data reopened the window, one update per chunk.
        for _ in 0..3 {
            assert!(matches!(
                peer.recv().await,
                Some(Frame::WindowUpdate { id: 1, delta: 1 })
            ));
        }
        peer.send(Frame::Ping { id: 9 }).await;
        assert_eq!(peer.recv().await, Some(Frame::Ping { id: 9 }));
        // Even (server-side) ids are a protocol error.
        peer.send(syn(2, "stdout")).await;
        assert!(matches!(
            peer.recv().await,
            Some(Frame::RstStream { id: 2, .. })
        ));
        st.writer.write(Bytes::from("out")).await.unwrap();
        st.writer.finish().await.unwrap();
        assert_eq!(
            peer.recv().await,
            Some(Frame::Data {
                id: 1,
                flags: 0,
                data: Bytes::from("out")
            })
        );
        assert!(matches!(
            peer.recv().await,
            Some(Frame::Data {
                id: 1,
                flags: FLAG_FIN,
                ..
            })
        ));
        s.close().await;
        assert!(matches!(
            peer.recv().await,
            Some(Frame::GoAway { last_good: 1, .. })
        ));
        assert_eq!(peer.recv().await, None);
    }

    #[tokio::test]
    async fn a_peer_that_speaks_flow_control_is_held_to_its_window() {
        let (mut s, mut peer) = pair();
        peer.send(Frame::Settings {
            flags: 0,
            entries: vec![(0, frame::SETTINGS_INITIAL_WINDOW_SIZE, 10)],
        })
        .await;
        peer.send(syn(1, "stdout")).await;
        assert!(matches!(peer.recv().await, Some(Frame::SynReply { .. })));
        let st = s.streams.recv().await.unwrap();
        peer.send(Frame::WindowUpdate { id: 1, delta: 5 }).await;
        // Wait until the update has been read: a ping sent after it comes back after it.
        peer.send(Frame::Ping { id: 1 }).await;
        assert_eq!(peer.recv().await, Some(Frame::Ping { id: 1 }));
        let w = st.writer.clone();
        let writing = tokio::spawn(async move { w.write(Bytes::from(vec![7u8; 40])).await });
        let mut got = 0;
        while got < 15 {
            match peer.recv().await {
                Some(Frame::Data { data, .. }) => got += data.len(),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(got, 15, "10 initial + 5 granted, not more");
        assert!(!writing.is_finished());
        peer.send(Frame::WindowUpdate { id: 1, delta: 100 }).await;
        while got < 40 {
            match peer.recv().await {
                Some(Frame::Data { data, .. }) => got += data.len(),
                other => panic!("unexpected {other:?}"),
            }
        }
        writing.await.unwrap().unwrap();
        s.close().await;
    }

    #[tokio::test]
    async fn an_unreadable_frame_ends_the_connection_with_a_protocol_error() {
        let (mut s, mut peer) = pair();
        // A SPDY/2 control frame: the wrong version.
        peer.send_raw(&[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1])
            .await;
        assert_eq!(
            peer.recv().await,
            Some(Frame::GoAway {
                last_good: 0,
                status: GOAWAY_PROTOCOL_ERROR
            })
        );
        assert_eq!(peer.recv().await, None);
        assert!(s.streams.recv().await.is_none());
    }

    #[tokio::test]
    async fn without_window_updates_large_writes_still_flow() {
        let (mut s, mut peer) = pair();
        peer.send(syn(1, "stdout")).await;
        assert!(matches!(peer.recv().await, Some(Frame::SynReply { .. })));
        let st = s.streams.recv().await.unwrap();
        let big = Bytes::from(vec![1u8; 200 * 1024]);
        st.writer.write(big).await.unwrap();
        let mut got = 0;
        while got < 200 * 1024 {
            match peer.recv().await {
                Some(Frame::Data { data, .. }) => got += data.len(),
                other => panic!("unexpected {other:?}"),
            }
        }
        s.close().await;
    }
}
