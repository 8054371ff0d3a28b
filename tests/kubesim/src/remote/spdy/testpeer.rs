//! A SPDY client end for unit tests: writes and reads frames over an in-memory pipe with its
//! own compression contexts, as kubectl's spdystream would.

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Session;
use super::frame::{Frame, decode, encode};
use super::headers::{HeaderDecoder, HeaderEncoder};

pub struct Peer {
    io: tokio::io::DuplexStream,
    enc: HeaderEncoder,
    dec: HeaderDecoder,
    buf: BytesMut,
}

impl Peer {
    pub async fn send(&mut self, f: Frame) {
        let mut out = BytesMut::new();
        encode(&f, &mut self.enc, &mut out).unwrap();
        self.io.write_all(&out).await.unwrap();
    }

    /// Writes bytes that need not be a valid frame.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.io.write_all(bytes).await.unwrap();
    }

    /// The next frame within 5s, `None` at the end of the connection.
    pub async fn recv(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = decode(&mut self.buf, &mut self.dec).unwrap() {
                return Some(f);
            }
            let n = tokio::time::timeout(Duration::from_secs(5), self.io.read_buf(&mut self.buf))
                .await
                .expect("a frame within 5s")
                .unwrap();
            if n == 0 {
                return None;
            }
        }
    }
}

/// A served session and the client end of its connection.
pub fn pair() -> (Session, Peer) {
    let (a, b) = tokio::io::duplex(1 << 20);
    (
        Session::serve(a),
        Peer {
            io: b,
            enc: HeaderEncoder::new(),
            dec: HeaderDecoder::new(),
            buf: BytesMut::new(),
        },
    )
}

/// A client SYN_STREAM with `headers`.
pub fn syn(id: u32, headers: &[(&str, &str)]) -> Frame {
    Frame::SynStream {
        id,
        associated: 0,
        priority: 0,
        flags: 0,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}
