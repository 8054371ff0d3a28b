//! An answer's body on its way back to the client, by the framing its head gave: a length
//! (the head and what came with it in one write, then the rest as it arrives), chunks
//! (decoded and chunked again), or everything until the backend closes (sent chunked). Each
//! read of the backend waits at most the route's `idle`; a body that ends before its
//! framing does is the backend's failure.

use std::io::IoSlice;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{Caller, Failed, FastConn, upstream_io};
use crate::proxy::fast::buf::{Wait, read_within, write_all_vectored};
use crate::proxy::fast::chunked::{self, Decoder};

impl<C: Caller> FastConn<'_, C> {
    /// A body of `n` bytes: the head and what came with it in one write, then the rest as
    /// it arrives.
    pub(super) async fn stream_length<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        n: u64,
        idle: Duration,
    ) -> Result<(), Failed>
    where
        S: AsyncWrite + Unpin,
    {
        let first = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(self.answer.len());
        write_all_vectored(
            io,
            &mut [
                IoSlice::new(&self.out),
                IoSlice::new(&self.answer.bytes()[..first]),
            ],
        )
        .await
        .map_err(|_| Failed::Client)?;
        self.answer.consume(first);
        let mut left = n - first as u64;
        while left > 0 {
            self.fill_answer(tcp, idle).await?;
            let take = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(self.answer.len());
            io.write_all(&self.answer.bytes()[..take])
                .await
                .map_err(|_| Failed::Client)?;
            self.answer.consume(take);
            left -= take as u64;
        }
        Ok(())
    }

    /// A chunked body, decoded and chunked again (extensions and trailers dropped).
    pub(super) async fn stream_chunked<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        idle: Duration,
    ) -> Result<(), Failed>
    where
        S: AsyncWrite + Unpin,
    {
        let mut decoder = Decoder::default();
        loop {
            loop {
                let bytes = self.answer.bytes();
                let piece = match decoder.decode(bytes) {
                    Ok(piece) => piece,
                    Err(e) => {
                        // What came before the fault still goes out, as hyper's path
                        // sends it; the unfinished answer tells the client.
                        let _ = io.write_all(&self.out).await;
                        return Err(Failed::Body(e.to_string()));
                    }
                };
                if let Some(data) = piece.data {
                    self.outcome.bytes_out += data.len() as u64;
                    chunked::encode(&mut self.out, &bytes[data]);
                }
                self.answer.consume(piece.used);
                if decoder.is_done() {
                    self.out.extend_from_slice(chunked::END);
                    return io.write_all(&self.out).await.map_err(|_| Failed::Client);
                }
                if piece.used == 0 || self.answer.is_empty() {
                    break;
                }
            }
            io.write_all(&self.out).await.map_err(|_| Failed::Client)?;
            self.out.clear();
            self.fill_answer(tcp, idle).await?;
        }
    }

    /// A body that ends when the backend closes, sent chunked.
    pub(super) async fn stream_until_close<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        idle: Duration,
    ) -> Result<(), Failed>
    where
        S: AsyncWrite + Unpin,
    {
        loop {
            self.outcome.bytes_out += self.answer.len() as u64;
            chunked::encode(&mut self.out, self.answer.bytes());
            self.answer.clear();
            io.write_all(&self.out).await.map_err(|_| Failed::Client)?;
            self.out.clear();
            self.answered = None;
            let wait = Wait::For(idle);
            match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(upstream_io(e)),
            }
        }
        io.write_all(chunked::END).await.map_err(|_| Failed::Client)
    }

    /// Reads more of the answer body within `idle`; its end before the framing's is a
    /// failure.
    pub(super) async fn fill_answer(
        &mut self,
        tcp: &mut TcpStream,
        idle: Duration,
    ) -> Result<(), Failed> {
        self.answered = None;
        let wait = Wait::For(idle);
        match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
            Ok(0) => Err(Failed::Body("the answer body ended early".into())),
            Ok(_) => Ok(()),
            Err(e) => Err(upstream_io(e)),
        }
    }
}
