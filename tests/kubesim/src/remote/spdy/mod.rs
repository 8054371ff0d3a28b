//! A SPDY/3.1 server, as much of it as kubectl's `moby/spdystream` client uses: the frame
//! codec (`frame`), zlib header blocks with the SPDY/3 dictionary (`headers`) and the
//! connection with its streams, PING echo and flow control (`session`). Serves any byte
//! stream: an upgraded HTTP/1.1 connection or a WebSocket tunnel.

pub mod frame;
pub mod headers;
pub mod session;
#[cfg(test)]
pub mod testpeer;

pub use session::{Session, Stream, StreamReader, StreamWriter};
