//! A plugin's stderr: the last [`STDERR_TAIL`] bytes written, kept for trap messages (a
//! Rust plugin's panic message lands there), older bytes dropped.
//!
//! Not wasmtime-wasi's `MemoryOutputPipe`: that one fails writes once full, and Rust's
//! `eprintln!` panics on a failed write, so a warm instance that logs to stderr would
//! start trapping after a few kilobytes. This one never refuses a write.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// How much of a plugin's stderr is kept: the tail goes into trap messages.
const STDERR_TAIL: usize = 4096;

/// The tail of one store's stderr; clones share it (the WASI context holds one, the
/// store's state another to read it).
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut buf = self.0.lock().expect("stderr poisoned");
        buf.extend(bytes);
        let excess = buf.len().saturating_sub(STDERR_TAIL);
        buf.drain(..excess);
    }

    /// What the plugin wrote last, trimmed.
    pub fn text(&self) -> String {
        let buf = self.0.lock().expect("stderr poisoned");
        let (a, b) = buf.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).trim().to_string()
    }
}

impl wasmtime_wasi::cli::IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for StderrTail {
    fn p2_stream(&self) -> Box<dyn wasmtime_wasi::p2::OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi::p2::Pollable for StderrTail {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi::p2::OutputStream for StderrTail {
    fn write(&mut self, bytes: bytes::Bytes) -> wasmtime_wasi::p2::StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> wasmtime_wasi::p2::StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> wasmtime_wasi::p2::StreamResult<usize> {
        // Always room: old bytes make way.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for StderrTail {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime_wasi::p2::OutputStream;

    #[test]
    fn only_the_tail_is_kept_and_a_write_is_never_refused() {
        let tail = StderrTail::default();
        let mut stream = tail.clone();
        stream
            .write(bytes::Bytes::from(vec![b'a'; STDERR_TAIL]))
            .unwrap();
        stream
            .write(bytes::Bytes::from_static(b"panicked at x\n"))
            .unwrap();
        let text = tail.text();
        assert_eq!(text.len(), STDERR_TAIL - 1, "trimmed of its newline");
        assert!(text.ends_with("aaapanicked at x"), "{text}");
        assert!(stream.check_write().unwrap() > 0);
    }
}
