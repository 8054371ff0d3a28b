//! SPDY/3.1 exec and port-forward clients, on the simulator's frame codec. As client-go's
//! `spdystream` client: POST with `Upgrade: SPDY/3.1` and one `X-Stream-Protocol-Version`
//! line per protocol, odd stream ids from 1, the remote-command streams opened error first,
//! then stdin, stdout, stderr (resize with a TTY); port-forward opens an error and a data
//! stream with the same `requestID`. PINGs are echoed; no WINDOW_UPDATE is sent (spdystream
//! sends none either).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Answer, CALL_TIMEOUT, ClientError, ExecOutcome, asked};
use crate::remote::spdy::frame::{FLAG_FIN, Frame, decode, encode};
use crate::remote::spdy::headers::{HeaderDecoder, HeaderEncoder};

/// The remote-command protocols offered, one header line each: only v4, whose error
/// stream carries the JSON Status this client reads.
pub const EXEC_PROTOCOLS: &[&str] = &["v4.channel.k8s.io"];

/// The client end of one SPDY connection.
struct Conn<S> {
    io: S,
    enc: HeaderEncoder,
    dec: HeaderDecoder,
    buf: BytesMut,
    next_id: u32,
}

/// What arrived on one stream.
#[derive(Default)]
struct Received {
    data: Vec<u8>,
    done: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    fn new(io: S, leftover: BytesMut) -> Self {
        Conn {
            io,
            enc: HeaderEncoder::new(),
            dec: HeaderDecoder::new(),
            buf: leftover,
            next_id: 1,
        }
    }

    async fn send(&mut self, f: &Frame) -> Result<(), ClientError> {
        let mut out = BytesMut::new();
        encode(f, &mut self.enc, &mut out).map_err(|e| ClientError::Spdy(e.to_string()))?;
        self.io
            .write_all(&out)
            .await
            .map_err(|e| ClientError::Spdy(e.to_string()))
    }

    /// Opens a stream with `headers`; its id.
    async fn open(&mut self, headers: &[(&str, &str)]) -> Result<u32, ClientError> {
        let id = self.next_id;
        self.next_id += 2;
        self.send(&Frame::SynStream {
            id,
            associated: 0,
            priority: 0,
            flags: 0,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
        .await?;
        Ok(id)
    }

    async fn write(&mut self, id: u32, data: &[u8], fin: bool) -> Result<(), ClientError> {
        for chunk in data.chunks(16 * 1024) {
            self.send(&Frame::Data {
                id,
                flags: 0,
                data: Bytes::copy_from_slice(chunk),
            })
            .await?;
        }
        if fin {
            self.send(&Frame::Data {
                id,
                flags: FLAG_FIN,
                data: Bytes::new(),
            })
            .await?;
        }
        Ok(())
    }

    /// The next frame, `None` at the end of the connection.
    async fn recv(&mut self) -> Result<Option<Frame>, ClientError> {
        loop {
            if let Some(f) = decode(&mut self.buf, &mut self.dec)
                .map_err(|e| ClientError::Spdy(e.to_string()))?
            {
                return Ok(Some(f));
            }
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        }
    }

    /// Reads until the connection ends or `enough` says so, collecting stream data.
    async fn collect(
        &mut self,
        streams: &mut HashMap<u32, Received>,
        enough: impl Fn(&HashMap<u32, Received>) -> bool,
    ) -> Result<(), ClientError> {
        while !enough(streams) {
            let Some(f) = self.recv().await? else {
                return Ok(());
            };
            match f {
                Frame::Data { id, flags, data } => {
                    let s = streams.entry(id).or_default();
                    s.data.extend_from_slice(&data);
                    s.done |= flags & FLAG_FIN != 0;
                }
                Frame::SynReply { id, flags, .. } if flags & FLAG_FIN != 0 => {
                    streams.entry(id).or_default().done = true;
                }
                Frame::RstStream { id, .. } => streams.entry(id).or_default().done = true,
                // Server pings have even ids; echo them.
                Frame::Ping { id } if id % 2 == 0 => self.send(&Frame::Ping { id }).await?,
                _ => {}
            }
        }
        Ok(())
    }
}

fn request_headers(protocols: &[&str], headers: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if !has("connection") {
        out.push(("Connection".into(), "Upgrade".into()));
    }
    if !has("upgrade") {
        out.push(("Upgrade".into(), "SPDY/3.1".into()));
    }
    if !has("x-stream-protocol-version") {
        for p in protocols {
            out.push(("X-Stream-Protocol-Version".into(), p.to_string()));
        }
    }
    out
}

fn header(headers: &[(String, String)], name: &str) -> String {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// Runs an exec (or attach) call: `path_and_query` names the streams (`input`/`output`/
/// `error`/`tty` = `1` on a kubelet, `stdin`/`stdout`/`stderr`/`tty` = `true` on an
/// apiserver). Writes `stdin` (when the query asks for stdin) and closes it, then reads
/// until the error stream and the output streams end, or the connection does. `headers` go out as given; the upgrade headers and
/// `EXEC_PROTOCOLS` are added when missing.
pub async fn spdy_exec(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    path_and_query: &str,
    headers: &[(&str, &str)],
    stdin: &[u8],
) -> Result<ExecOutcome, ClientError> {
    let query = crate::query::Query::parse(path_and_query.split_once('?').map(|(_, q)| q));
    let call = async {
        let headers = request_headers(EXEC_PROTOCOLS, headers);
        let (io, leftover, reply) =
            match super::upgrade(addr, tls, path_and_query, &headers).await? {
                Ok(ok) => ok,
                Err(refused) => {
                    return Ok(ExecOutcome {
                        refused: Some(refused),
                        ..ExecOutcome::default()
                    });
                }
            };
        let mut conn = Conn::new(io, leftover);
        let error = conn.open(&[("streamType", "error")]).await?;
        let mut ids = HashMap::new();
        for (kind, on) in [
            ("stdin", asked(&query, "input", "stdin")),
            ("stdout", asked(&query, "output", "stdout")),
            ("stderr", asked(&query, "error", "stderr")),
            ("resize", asked(&query, "tty", "tty")),
        ] {
            if on {
                ids.insert(kind, conn.open(&[("streamType", kind)]).await?);
            }
        }
        if let Some(id) = ids.get("stdin").copied() {
            conn.write(id, stdin, true).await?;
        }
        let mut got = HashMap::new();
        // As client-go: done once the error stream and every output stream have ended (or
        // the connection has).
        let mut ends = vec![error];
        ends.extend(
            ["stdout", "stderr"]
                .iter()
                .filter_map(|k| ids.get(k).copied()),
        );
        conn.collect(&mut got, |s| {
            ends.iter().all(|id| s.get(id).is_some_and(|r| r.done))
        })
        .await?;
        let mut take = |id: Option<u32>| {
            id.and_then(|id| got.remove(&id))
                .map(|r| r.data)
                .unwrap_or_default()
        };
        let stdout = take(ids.get("stdout").copied());
        let stderr = take(ids.get("stderr").copied());
        let status = take(Some(error));
        Ok(ExecOutcome {
            refused: None,
            protocol: header(&reply, "x-stream-protocol-version"),
            stdout,
            stderr,
            status: serde_json::from_slice(&status).ok(),
        })
    };
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .map_err(|_| ClientError::Timeout)?
}

/// What a port-forward call gave back.
#[derive(Debug, Clone, Default)]
pub struct PortForwardOutcome {
    /// The non-`101` answer, when the upgrade was refused.
    pub refused: Option<Answer>,
    /// Bytes read back on the data stream.
    pub data: Vec<u8>,
    /// What the error stream carried (the kubelet's failure text or JSON).
    pub error: String,
}

/// Forwards one connection to pod `port` over SPDY (`portforward.k8s.io`): opens the error
/// and data streams (`requestID` 0), writes `send`, and reads the data stream until `want`
/// bytes came back, the stream or connection ended, or the error stream finished.
pub async fn spdy_port_forward(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    path_and_query: &str,
    headers: &[(&str, &str)],
    port: u16,
    send: &[u8],
    want: usize,
) -> Result<PortForwardOutcome, ClientError> {
    let call = async {
        let headers = request_headers(&["portforward.k8s.io"], headers);
        let (io, leftover, _) = match super::upgrade(addr, tls, path_and_query, &headers).await? {
            Ok(ok) => ok,
            Err(refused) => {
                return Ok(PortForwardOutcome {
                    refused: Some(refused),
                    ..PortForwardOutcome::default()
                });
            }
        };
        let mut conn = Conn::new(io, leftover);
        let port = port.to_string();
        let error = conn
            .open(&[("streamType", "error"), ("port", &port), ("requestID", "0")])
            .await?;
        let data = conn
            .open(&[("streamType", "data"), ("port", &port), ("requestID", "0")])
            .await?;
        conn.write(data, send, false).await?;
        let mut got = HashMap::new();
        conn.collect(&mut got, |s| {
            let d = s.get(&data);
            let e = s.get(&error);
            d.is_some_and(|d| d.data.len() >= want || d.done)
                || e.is_some_and(|e| e.done && !e.data.is_empty())
        })
        .await?;
        let mut take = |id| got.remove(&id).map(|r| r.data).unwrap_or_default();
        let data = take(data);
        let error = String::from_utf8_lossy(&take(error)).into_owned();
        // Say goodbye so the server ends the session promptly.
        let _ = conn
            .send(&Frame::GoAway {
                last_good: 0,
                status: 0,
            })
            .await;
        Ok(PortForwardOutcome {
            refused: None,
            data,
            error,
        })
    };
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .map_err(|_| ClientError::Timeout)?
}
