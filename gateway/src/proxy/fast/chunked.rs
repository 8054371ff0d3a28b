//! The chunked transfer coding (RFC 9112 §7.1), decoded a piece at a time from whatever
//! bytes have arrived, and written again for the client.
//!
//! The decoder keeps only its state between pieces: it hands back where the data lies in
//! the bytes it was given, so nothing is copied or allocated to read a body. It is as strict
//! as hyper's: hex sizes of at most 16 digits, spaces or tabs only before an extension or
//! the line's end, CRLF after the size line and after each chunk's data, no line feed inside
//! an extension, and at most 16 KiB of extensions and of trailers. Extensions and trailers
//! are read and dropped, as hyper's path drops them (the `Trailer` header that would carry
//! them is hop-by-hop).

use std::ops::Range;

/// Extension bytes, and trailer bytes, a body may carry in all.
const LIMIT: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading the size's hex digits (`digits` so far).
    Size {
        digits: u8,
    },
    /// Spaces or tabs after the size.
    SizeSpace,
    Extension,
    /// The line feed ending a size line.
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    TrailerLine,
    TrailerLf,
    EndLf,
    Done,
}

/// A chunked body being read.
#[derive(Debug)]
pub struct Decoder {
    state: State,
    size: u64,
    extensions: usize,
    trailers: usize,
}

/// What one call to [`Decoder::decode`] found.
#[derive(Debug, PartialEq, Eq)]
pub struct Piece {
    /// Bytes of the input used (framing, and the data below).
    pub used: usize,
    /// Where in the input body data lies, if any was reached.
    pub data: Option<Range<usize>>,
}

/// A chunked body that breaks the coding's rules.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid chunked body: {0}")]
pub struct ChunkError(&'static str);

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            state: State::Size { digits: 0 },
            size: 0,
            extensions: 0,
            trailers: 0,
        }
    }
}

impl Decoder {
    /// The body's end has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Reads framing from `input` until it reaches data (returned as a range, at most one
    /// chunk's worth), the body's end, or the end of `input`.
    pub fn decode(&mut self, input: &[u8]) -> Result<Piece, ChunkError> {
        let mut i = 0;
        while i < input.len() {
            if self.state == State::Data {
                let n = usize::try_from(self.size)
                    .unwrap_or(usize::MAX)
                    .min(input.len() - i);
                self.size -= n as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                return Ok(Piece {
                    used: i + n,
                    data: Some(i..i + n),
                });
            }
            if self.state == State::Done {
                break;
            }
            self.byte(input[i])?;
            i += 1;
        }
        Ok(Piece {
            used: i,
            data: None,
        })
    }

    fn byte(&mut self, b: u8) -> Result<(), ChunkError> {
        self.state = match (self.state, b) {
            (State::Size { digits }, _) if b.is_ascii_hexdigit() => {
                if digits == 16 {
                    return Err(ChunkError("a chunk size over 16 hex digits"));
                }
                let d = (b as char).to_digit(16).unwrap_or(0);
                self.size = self.size * 16 + u64::from(d);
                State::Size { digits: digits + 1 }
            }
            (State::Size { digits: 0 }, _) => {
                return Err(ChunkError("a chunk size that is not hex"));
            }
            (State::Size { .. } | State::SizeSpace, b' ' | b'\t') => State::SizeSpace,
            (State::Size { .. } | State::SizeSpace, b';') => State::Extension,
            (State::Size { .. } | State::SizeSpace, b'\r') => State::SizeLf,
            (State::Size { .. } | State::SizeSpace, _) => {
                return Err(ChunkError("an invalid byte in a chunk size line"));
            }
            (State::Extension, b'\r') => State::SizeLf,
            (State::Extension, b'\n') => {
                return Err(ChunkError("a line feed in a chunk extension"));
            }
            (State::Extension, _) => {
                self.extensions += 1;
                if self.extensions > LIMIT {
                    return Err(ChunkError("chunk extensions over 16 KiB"));
                }
                State::Extension
            }
            (State::SizeLf, b'\n') if self.size == 0 => State::TrailerStart,
            (State::SizeLf, b'\n') => State::Data,
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => State::Size { digits: 0 },
            (State::TrailerStart, b'\r') => State::EndLf,
            (State::TrailerStart | State::TrailerLine, _) if b != b'\r' && b != b'\n' => {
                self.trailers += 1;
                if self.trailers > LIMIT {
                    return Err(ChunkError("trailers over 16 KiB"));
                }
                State::TrailerLine
            }
            (State::TrailerLine, b'\r') => State::TrailerLf,
            (State::TrailerLf, b'\n') => State::TrailerStart,
            (State::EndLf, b'\n') => State::Done,
            _ => return Err(ChunkError("a missing CRLF")),
        };
        Ok(())
    }
}

/// Appends `data` to `out` as one chunk.
pub fn encode(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut hex = [0u8; 16];
    let mut n = data.len();
    let mut at = hex.len();
    while n > 0 || at == hex.len() {
        at -= 1;
        hex[at] = b"0123456789abcdef"[n % 16];
        n /= 16;
    }
    out.extend_from_slice(&hex[at..]);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The last chunk, with no trailers.
pub const END: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `body` fed in pieces of `step` bytes; the data and the bytes left over.
    pub(crate) fn decode_all(body: &[u8], step: usize) -> Result<(Vec<u8>, usize), ChunkError> {
        let mut d = Decoder::default();
        let mut data = Vec::new();
        let mut at = 0;
        while !d.is_done() {
            if at == body.len() {
                return Err(ChunkError("truncated"));
            }
            let end = (at + step).min(body.len());
            let piece = d.decode(&body[at..end])?;
            if let Some(r) = piece.data {
                data.extend_from_slice(&body[at..end][r]);
            }
            at += piece.used;
        }
        Ok((data, body.len() - at))
    }

    #[test]
    fn a_body_decodes_the_same_whatever_its_pieces() {
        let body = b"5;name=value\r\nhello\r\n1a  \r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        for step in [1, 2, 3, 7, 64] {
            let (data, left) = decode_all(body, step).unwrap();
            assert_eq!(data, b"helloabcdefghijklmnopqrstuvwxyz", "step {step}");
            assert_eq!(left, 4, "the next message is left unread");
        }
    }

    #[test]
    fn broken_framing_is_refused() {
        for bad in [
            &b"x\r\n"[..],
            b"5\nhello\r\n0\r\n\r\n",
            b"5\r\nhelloX\r\n",
            b"5 x\r\n",
            b"11111111111111111\r\n",
            b"1;a\nb\r\n",
            b"0\r\n\r\r",
            b"-1\r\n",
        ] {
            assert!(
                decode_all(bad, 1).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encoding_then_decoding_gives_the_data_back() {
        let mut out = Vec::new();
        encode(&mut out, b"hello");
        encode(&mut out, &[7u8; 300]);
        encode(&mut out, b"");
        out.extend_from_slice(END);
        assert!(out.starts_with(b"5\r\nhello\r\n12c\r\n"));
        let (data, left) = decode_all(&out, 5).unwrap();
        assert_eq!(data.len(), 305);
        assert_eq!(left, 0);
    }
}
