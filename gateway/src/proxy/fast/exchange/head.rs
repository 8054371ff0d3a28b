//! The backend's answer head, read into the exchange's `answer` buffer: during the upload
//! when the backend speaks first ([`FastConn::backend_spoke`]), then to its end
//! ([`FastConn::answer_head`]), informational answers passed over either way, as hyper's
//! client passes them over. A head longer than the buffer goes on in `long_head`, up to
//! hyper's client's limit ([`MAX_HEAD`]).

use std::io;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use super::{Caller, FastConn, HeadError, Upload, head_bytes};
use crate::proxy::fast::buf::{Wait, read_within};
use crate::proxy::fast::response::{self, MAX_HEAD};

impl<C: Caller> FastConn<'_, C> {
    /// After the backend's socket turned readable during an upload: its final answer has
    /// begun (its first bytes now in `self.answer`), the backend closed or failed, or no
    /// final answer yet (`None`: the upload goes on): nothing was there after all, or only
    /// informational answers (a 103 Early Hints sent before the body is read), passed over.
    pub(super) async fn backend_spoke(&mut self, tcp: &mut TcpStream) -> Option<Upload> {
        // Only what is there is read: a wait of nothing times out at once.
        let wait = Wait::For(Duration::ZERO);
        match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
            Ok(0) => Some(Upload::Backend(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed while the request body was sent",
            ))),
            Ok(_) => self.final_begun().then_some(Upload::Answered),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => None,
            Err(e) => Some(Upload::Backend(e)),
        }
    }

    /// Takes the whole informational answers off the start of `self.answer`; true when
    /// what is left is the start of a final answer (or of something no parser takes, or a
    /// head that fills the buffer: `answer_head` sees to those), false while it is
    /// nothing, or an informational answer still arriving, or too short to tell.
    fn final_begun(&mut self) -> bool {
        loop {
            let mut slots = [httparse::EMPTY_HEADER; response::MAX_HEADERS];
            let informational = match response::parse(self.answer.bytes(), &mut slots) {
                response::Read::Informational(len) => len,
                response::Read::Partial => {
                    // `HTTP/1.1 1xx`: the status's first digit is the tenth byte.
                    let bytes = self.answer.bytes();
                    let pending = bytes.len() < 10 || bytes[9] == b'1';
                    return self.answer.is_full() || !pending;
                }
                response::Read::Answer(_) | response::Read::Bad(_) => return true,
            };
            self.answer.consume(informational);
        }
    }

    /// Reads until a final answer head is complete at the start of `self.answer`, passing
    /// over informational ones; or, for a head longer than that buffer, in
    /// `self.long_head` (up to hyper's client's limit), whose memory goes again if the
    /// head fails.
    pub(super) async fn answer_head(
        &mut self,
        tcp: &mut TcpStream,
        deadline: Instant,
    ) -> Result<(), HeadError> {
        let read = self.read_answer_head(tcp, deadline).await;
        if read.is_err() {
            self.long_head = Vec::new();
        }
        read
    }

    async fn read_answer_head(
        &mut self,
        tcp: &mut TcpStream,
        deadline: Instant,
    ) -> Result<(), HeadError> {
        loop {
            let informational = {
                let mut slots = [httparse::EMPTY_HEADER; response::MAX_HEADERS];
                match response::parse(head_bytes(&self.answer, &self.long_head), &mut slots) {
                    response::Read::Answer(_) => return Ok(()),
                    response::Read::Bad(why) => return Err(HeadError::Bad(why)),
                    response::Read::Informational(len) => Some(len),
                    response::Read::Partial => None,
                }
            };
            if let Some(len) = informational {
                if self.long_head.is_empty() {
                    self.answer.consume(len);
                } else {
                    self.long_head.drain(..len);
                }
                continue;
            }
            if self.answer.is_full() {
                // Rare: what was read goes on in `long_head`, and each read after it.
                self.long_head.extend_from_slice(self.answer.bytes());
                self.answer.clear();
            }
            if self.long_head.len() >= MAX_HEAD {
                return Err(HeadError::Bad("an answer head over hyper's limit"));
            }
            let nothing_yet = self.answer.is_empty() && self.long_head.is_empty();
            let wait = Wait::Until(deadline);
            match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
                Ok(0) if nothing_yet => return Err(HeadError::Closed),
                Ok(0) => return Err(HeadError::Bad("the connection closed within the head")),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(HeadError::Timeout),
                Err(e) if nothing_yet && is_reset(&e) => return Err(HeadError::Closed),
                Err(e) => return Err(HeadError::Io(e)),
            }
            if !self.long_head.is_empty() {
                self.long_head.extend_from_slice(self.answer.bytes());
                self.answer.clear();
            }
        }
    }

    /// Puts the body bytes read behind a long head of `len` bytes back in `self.answer`
    /// (they came in its last read, so they fit) and lets the long head's memory go.
    pub(super) async fn behind_long_head(&mut self, len: usize) -> bool {
        let long = std::mem::take(&mut self.long_head);
        let mut behind = &long[len..];
        self.answer.clear();
        // A slice is always ready: this copies without waiting, or touching the timer.
        let wait = Wait::For(Duration::ZERO);
        let copied = read_within(&mut behind, &mut self.answer, &mut self.backend_timer, wait);
        copied.await.is_ok() && behind.is_empty()
    }
}

fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}
