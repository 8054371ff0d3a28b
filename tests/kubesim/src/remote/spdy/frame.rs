//! SPDY/3.1 frames: the control frames kubectl and `moby/spdystream` exchange (SYN_STREAM,
//! SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE) and DATA, read
//! from and written to byte buffers. Header blocks go through the connection's
//! `HeaderEncoder`/`HeaderDecoder`. Knows nothing of streams' state or flow control.

use bytes::{BufMut, BytesMut};

use super::headers::{HeaderDecoder, HeaderEncoder, HeaderError, Headers};

/// The SPDY version this codec speaks.
pub const VERSION: u16 = 3;
/// FLAG_FIN on SYN_STREAM, SYN_REPLY, HEADERS and DATA.
pub const FLAG_FIN: u8 = 0x01;
/// FLAG_UNIDIRECTIONAL on SYN_STREAM.
pub const FLAG_UNIDIRECTIONAL: u8 = 0x02;
/// SETTINGS id 7: the initial per-stream window.
pub const SETTINGS_INITIAL_WINDOW_SIZE: u32 = 7;
/// The largest frame payload a 24-bit length allows; we refuse bigger claims outright.
pub const MAX_PAYLOAD: usize = (1 << 24) - 1;

/// RST_STREAM status codes used here.
pub const RST_PROTOCOL_ERROR: u32 = 1;
pub const RST_INVALID_STREAM: u32 = 2;
pub const RST_CANCEL: u32 = 5;

const STREAM_ID_MASK: u32 = 0x7fff_ffff;

/// One frame, with header blocks already inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    SynStream {
        id: u32,
        associated: u32,
        priority: u8,
        flags: u8,
        headers: Headers,
    },
    SynReply {
        id: u32,
        flags: u8,
        headers: Headers,
    },
    RstStream {
        id: u32,
        status: u32,
    },
    Settings {
        flags: u8,
        /// `(flags, id, value)` entries.
        entries: Vec<(u8, u32, u32)>,
    },
    Ping {
        id: u32,
    },
    GoAway {
        last_good: u32,
        status: u32,
    },
    Headers {
        id: u32,
        flags: u8,
        headers: Headers,
    },
    WindowUpdate {
        id: u32,
        delta: u32,
    },
    Data {
        id: u32,
        flags: u8,
        data: bytes::Bytes,
    },
    /// A control frame type this codec does not know (CREDENTIAL, or a future one): SPDY
    /// says to ignore it.
    Unknown {
        kind: u16,
    },
}

/// Why bytes could not be read as a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("unsupported SPDY version {0}")]
    Version(u16),
    #[error("control frame type {kind} has a {len}-byte payload, too short")]
    Short { kind: u16, len: usize },
    #[error(transparent)]
    Headers(#[from] HeaderError),
}

fn word(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Takes one whole frame off the front of `buf`, or `None` when `buf` does not hold one yet
/// (a frame split across reads waits for the rest).
pub fn decode(buf: &mut BytesMut, dec: &mut HeaderDecoder) -> Result<Option<Frame>, FrameError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let len = (word(&buf[4..8]) & 0x00ff_ffff) as usize;
    if buf.len() < 8 + len {
        return Ok(None);
    }
    let head = buf.split_to(8);
    let payload = buf.split_to(len);
    let flags = head[4];
    if head[0] & 0x80 == 0 {
        return Ok(Some(Frame::Data {
            id: word(&head[0..4]) & STREAM_ID_MASK,
            flags,
            data: payload.freeze(),
        }));
    }
    let version = u16::from_be_bytes([head[0] & 0x7f, head[1]]);
    if version != VERSION {
        return Err(FrameError::Version(version));
    }
    let kind = u16::from_be_bytes([head[2], head[3]]);
    let need = match kind {
        1 => 10,
        2 | 4 | 6 | 8 => 4,
        3 | 7 | 9 => 8,
        _ => 0,
    };
    if payload.len() < need {
        return Err(FrameError::Short { kind, len });
    }
    let p = &payload[..];
    let frame = match kind {
        1 => Frame::SynStream {
            id: word(&p[0..4]) & STREAM_ID_MASK,
            associated: word(&p[4..8]) & STREAM_ID_MASK,
            priority: p[8] >> 5,
            flags,
            headers: dec.decode(&p[10..])?,
        },
        2 => Frame::SynReply {
            id: word(&p[0..4]) & STREAM_ID_MASK,
            flags,
            headers: dec.decode(&p[4..])?,
        },
        3 => Frame::RstStream {
            id: word(&p[0..4]) & STREAM_ID_MASK,
            status: word(&p[4..8]),
        },
        4 => {
            let n = word(&p[0..4]) as usize;
            let body = &p[4..];
            if body.len() < n.saturating_mul(8) {
                return Err(FrameError::Short { kind, len });
            }
            let entries = body
                .chunks_exact(8)
                .take(n)
                .map(|e| (e[0], word(e) & 0x00ff_ffff, word(&e[4..8])))
                .collect();
            Frame::Settings { flags, entries }
        }
        6 => Frame::Ping { id: word(&p[0..4]) },
        7 => Frame::GoAway {
            last_good: word(&p[0..4]) & STREAM_ID_MASK,
            status: word(&p[4..8]),
        },
        8 => Frame::Headers {
            id: word(&p[0..4]) & STREAM_ID_MASK,
            flags,
            headers: dec.decode(&p[4..])?,
        },
        9 => Frame::WindowUpdate {
            id: word(&p[0..4]) & STREAM_ID_MASK,
            delta: word(&p[4..8]) & STREAM_ID_MASK,
        },
        kind => Frame::Unknown { kind },
    };
    Ok(Some(frame))
}

fn control(out: &mut BytesMut, kind: u16, flags: u8, payload: &[u8]) {
    out.put_u16(0x8000 | VERSION);
    out.put_u16(kind);
    out.put_u32((u32::from(flags) << 24) | payload.len() as u32);
    out.put_slice(payload);
}

/// Appends `frame` to `out`. DATA payloads must fit the 24-bit length (callers chunk).
pub fn encode(
    frame: &Frame,
    enc: &mut HeaderEncoder,
    out: &mut BytesMut,
) -> Result<(), FrameError> {
    let mut p = BytesMut::new();
    match frame {
        Frame::SynStream {
            id,
            associated,
            priority,
            flags,
            headers,
        } => {
            p.put_u32(id & STREAM_ID_MASK);
            p.put_u32(associated & STREAM_ID_MASK);
            p.put_u8(priority << 5);
            p.put_u8(0);
            p.put_slice(&enc.encode(headers)?);
            control(out, 1, *flags, &p);
        }
        Frame::SynReply { id, flags, headers } => {
            p.put_u32(id & STREAM_ID_MASK);
            p.put_slice(&enc.encode(headers)?);
            control(out, 2, *flags, &p);
        }
        Frame::RstStream { id, status } => {
            p.put_u32(id & STREAM_ID_MASK);
            p.put_u32(*status);
            control(out, 3, 0, &p);
        }
        Frame::Settings { flags, entries } => {
            p.put_u32(entries.len() as u32);
            for (f, id, v) in entries {
                p.put_u32((u32::from(*f) << 24) | (id & 0x00ff_ffff));
                p.put_u32(*v);
            }
            control(out, 4, *flags, &p);
        }
        Frame::Ping { id } => control(out, 6, 0, &id.to_be_bytes()),
        Frame::GoAway { last_good, status } => {
            p.put_u32(last_good & STREAM_ID_MASK);
            p.put_u32(*status);
            control(out, 7, 0, &p);
        }
        Frame::Headers { id, flags, headers } => {
            p.put_u32(id & STREAM_ID_MASK);
            p.put_slice(&enc.encode(headers)?);
            control(out, 8, *flags, &p);
        }
        Frame::WindowUpdate { id, delta } => {
            p.put_u32(id & STREAM_ID_MASK);
            p.put_u32(delta & STREAM_ID_MASK);
            control(out, 9, 0, &p);
        }
        Frame::Data { id, flags, data } => {
            debug_assert!(data.len() <= MAX_PAYLOAD);
            out.put_u32(id & STREAM_ID_MASK);
            out.put_u32((u32::from(*flags) << 24) | data.len() as u32);
            out.put_slice(data);
        }
        Frame::Unknown { .. } => {}
    }
    Ok(())
}

/// Moves up to `n` bytes from `bytes` into `buf`, as one short read would.
#[cfg(test)]
fn feed(buf: &mut BytesMut, bytes: &mut &[u8], n: usize) {
    let n = n.min(bytes.len());
    buf.put_slice(&bytes[..n]);
    *bytes = &bytes[n..];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Headers {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn all_kinds() -> Vec<Frame> {
        vec![
            Frame::SynStream {
                id: 1,
                associated: 0,
                priority: 3,
                flags: FLAG_FIN,
                headers: h(&[("streamtype", "error")]),
            },
            Frame::SynReply {
                id: 1,
                flags: 0,
                headers: vec![],
            },
            Frame::RstStream {
                id: 3,
                status: RST_CANCEL,
            },
            Frame::Settings {
                flags: 0,
                entries: vec![(0, SETTINGS_INITIAL_WINDOW_SIZE, 65536), (1, 4, 100)],
            },
            Frame::Ping { id: 7 },
            Frame::GoAway {
                last_good: 5,
                status: 0,
            },
            Frame::Headers {
                id: 5,
                flags: FLAG_FIN,
                headers: h(&[("port", "8080"), ("requestid", "0")]),
            },
            Frame::WindowUpdate { id: 5, delta: 1234 },
            Frame::Data {
                id: 5,
                flags: FLAG_FIN,
                data: bytes::Bytes::from_static(b"hello"),
            },
            Frame::Data {
                id: 7,
                flags: 0,
                data: bytes::Bytes::new(),
            },
        ]
    }

    #[test]
    fn every_frame_round_trips() {
        let (mut enc, mut dec) = (HeaderEncoder::new(), HeaderDecoder::new());
        let mut wire = BytesMut::new();
        for f in all_kinds() {
            encode(&f, &mut enc, &mut wire).unwrap();
        }
        for f in all_kinds() {
            assert_eq!(decode(&mut wire, &mut dec).unwrap(), Some(f));
        }
        assert!(wire.is_empty());
        assert_eq!(decode(&mut wire, &mut dec).unwrap(), None);
    }

    #[test]
    fn known_bytes_of_a_ping_and_a_data_frame() {
        let mut enc = HeaderEncoder::new();
        let mut wire = BytesMut::new();
        encode(&Frame::Ping { id: 1 }, &mut enc, &mut wire).unwrap();
        assert_eq!(&wire[..], &[0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]);
        wire.clear();
        let data = Frame::Data {
            id: 3,
            flags: FLAG_FIN,
            data: bytes::Bytes::from_static(b"ab"),
        };
        encode(&data, &mut enc, &mut wire).unwrap();
        assert_eq!(&wire[..], &[0, 0, 0, 3, 1, 0, 0, 2, b'a', b'b']);
    }

    #[test]
    fn a_frame_split_across_reads_waits_for_its_tail() {
        let (mut enc, mut dec) = (HeaderEncoder::new(), HeaderDecoder::new());
        let mut whole = BytesMut::new();
        for f in all_kinds() {
            encode(&f, &mut enc, &mut whole).unwrap();
        }
        let mut rest: &[u8] = &whole;
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        // Three bytes at a time: every frame arrives in pieces, headers split mid-word.
        while !rest.is_empty() {
            feed(&mut buf, &mut rest, 3);
            while let Some(f) = decode(&mut buf, &mut dec).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, all_kinds());
    }

    #[test]
    fn wrong_version_and_short_frames_are_errors() {
        let mut dec = HeaderDecoder::new();
        let mut v2 = BytesMut::from(&[0x80u8, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1][..]);
        assert!(matches!(
            decode(&mut v2, &mut dec),
            Err(FrameError::Version(2))
        ));
        let mut short = BytesMut::from(&[0x80u8, 3, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1][..]);
        assert!(matches!(
            decode(&mut short, &mut dec),
            Err(FrameError::Short { kind: 3, len: 4 })
        ));
    }
}
