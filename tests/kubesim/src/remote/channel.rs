//! The kubelet's WebSocket channel framing (`wsstream`): every message is one channel's
//! bytes, prefixed by the channel number: a binary byte in `channel.k8s.io` and
//! `v4.channel.k8s.io`, an ASCII digit before base64 text in the `base64` variants.
//! `v5.channel.k8s.io` adds the CLOSE message `[255, channel]`. Knows nothing of what the
//! channels carry.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// The v5 CLOSE marker in a message's first byte.
pub const STREAM_CLOSE: u8 = 255;

/// A negotiated channel subprotocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelProtocol {
    pub base64: bool,
    /// v5: CLOSE messages half-close a channel.
    pub v5: bool,
    /// v4 and later: the error channel carries a JSON Status (v1 writes plain text).
    pub status_json: bool,
}

/// A close with status 1000: gorilla/websocket (under client-go) reports a close without a
/// status code (1005) as a read error.
pub fn normal_close() -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}

/// What one client message means.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming {
    Data(u8, Bytes),
    /// v5 CLOSE of a channel.
    Close(u8),
    /// Control or malformed messages carry nothing for the channels.
    Nothing,
}

impl ChannelProtocol {
    /// The protocol behind a negotiated subprotocol (`""` is the kubelet's default,
    /// `channel.k8s.io`).
    pub fn from_name(name: &str) -> Option<Self> {
        let (base64, v5, status_json) = match name {
            "" | "channel.k8s.io" => (false, false, false),
            "base64.channel.k8s.io" => (true, false, false),
            "v4.channel.k8s.io" => (false, false, true),
            "v4.base64.channel.k8s.io" => (true, false, true),
            "v5.channel.k8s.io" => (false, true, true),
            _ => return None,
        };
        Some(ChannelProtocol {
            base64,
            v5,
            status_json,
        })
    }

    /// The message carrying `data` on `channel`.
    pub fn data(&self, channel: u8, data: &[u8]) -> Message {
        if self.base64 {
            let mut s = String::with_capacity(1 + data.len() * 4 / 3 + 4);
            s.push(char::from(b'0' + channel));
            STANDARD.encode_string(data, &mut s);
            Message::text(s)
        } else {
            let mut v = Vec::with_capacity(1 + data.len());
            v.push(channel);
            v.extend_from_slice(data);
            Message::binary(v)
        }
    }

    /// The v5 CLOSE message for `channel`, as a client sends it to end stdin.
    pub fn close(&self, channel: u8) -> Message {
        Message::binary(vec![STREAM_CLOSE, channel])
    }

    /// Reads a client message.
    pub fn parse(&self, msg: &Message) -> Incoming {
        match msg {
            Message::Binary(b) if self.v5 && b.len() == 2 && b[0] == STREAM_CLOSE => {
                Incoming::Close(b[1])
            }
            Message::Binary(b) if !b.is_empty() => Incoming::Data(b[0], b.slice(1..)),
            Message::Text(t) if !t.is_empty() => {
                // Bytes, not chars: a peer's first character may be multi-byte.
                let t = t.as_bytes();
                let ch = t[0].wrapping_sub(b'0');
                match STANDARD.decode(&t[1..]) {
                    Ok(d) => Incoming::Data(ch, Bytes::from(d)),
                    Err(_) => Incoming::Nothing,
                }
            }
            _ => Incoming::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_base64_framing() {
        let v4 = ChannelProtocol::from_name("v4.channel.k8s.io").unwrap();
        assert_eq!(v4.data(1, b"hi"), Message::binary(vec![1, b'h', b'i']));
        assert_eq!(
            v4.parse(&Message::binary(vec![0, b'x'])),
            Incoming::Data(0, Bytes::from("x"))
        );
        // v4 has no CLOSE: [255, 0] is data on channel 255.
        assert_eq!(
            v4.parse(&Message::binary(vec![255, 0])),
            Incoming::Data(255, Bytes::from_static(&[0]))
        );
        let v5 = ChannelProtocol::from_name("v5.channel.k8s.io").unwrap();
        assert_eq!(v5.parse(&v5.close(0)), Incoming::Close(0));
        let b64 = ChannelProtocol::from_name("v4.base64.channel.k8s.io").unwrap();
        assert_eq!(b64.data(1, b"hi"), Message::text("1aGk="));
        assert_eq!(
            b64.parse(&Message::text("0aGk=")),
            Incoming::Data(0, Bytes::from("hi"))
        );
        assert_eq!(b64.parse(&Message::text("0!!")), Incoming::Nothing);
        assert_eq!(b64.parse(&Message::text("é")), Incoming::Nothing);
        assert!(ChannelProtocol::from_name("v3.channel.k8s.io").is_none());
    }
}
