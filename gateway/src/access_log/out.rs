//! A line written into a buffer that never grows: every write past its capacity marks the
//! line too long instead of allocating, so a serving thread writes into its own bounded
//! buffer without the allocator; and the two escapings a value gets, JSON's and nginx's.

use std::fmt;

/// The most of one text value a line holds (a path, a header's value); the rest is cut,
/// so one hostile request cannot fill a worker's buffer.
pub const VALUE_MOST: usize = 2048;

/// Writes into `buf` up to its capacity, and no further.
pub struct Out<'b> {
    buf: &'b mut Vec<u8>,
    /// Something did not fit: the line is to be taken back.
    pub full: bool,
}

impl<'b> Out<'b> {
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        Out { buf, full: false }
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Drops what was written after `len`.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    pub fn bytes(&mut self, b: &[u8]) {
        if self.full || self.buf.capacity() - self.buf.len() < b.len() {
            self.full = true;
            return;
        }
        self.buf.extend_from_slice(b);
    }

    pub fn byte(&mut self, b: u8) {
        self.bytes(&[b]);
    }

    /// `b` as a JSON string's contents: `"`, `\` and control characters escaped, valid
    /// UTF-8 as it is, each byte of invalid UTF-8 as `\u00XX`; cut at [`VALUE_MOST`].
    pub fn json(&mut self, b: &[u8]) {
        for chunk in b[..b.len().min(VALUE_MOST)].utf8_chunks() {
            let valid = chunk.valid().as_bytes();
            let mut from = 0;
            for (i, &c) in valid.iter().enumerate() {
                let short: &[u8] = match c {
                    b'"' => b"\\\"",
                    b'\\' => b"\\\\",
                    b'\n' => b"\\n",
                    b'\r' => b"\\r",
                    b'\t' => b"\\t",
                    0..0x20 | 0x7f => b"",
                    _ => continue,
                };
                self.bytes(&valid[from..i]);
                from = i + 1;
                if short.is_empty() {
                    self.unicode_escape(c);
                } else {
                    self.bytes(short);
                }
            }
            self.bytes(&valid[from..]);
            for &c in chunk.invalid() {
                self.unicode_escape(c);
            }
        }
    }

    fn unicode_escape(&mut self, c: u8) {
        self.bytes(b"\\u00");
        self.hex(c);
    }

    fn hex(&mut self, c: u8) {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        self.bytes(&[HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
    }

    /// `b` as nginx writes a variable in a log line (`escape=default`): `"`, `\`, bytes
    /// below 0x20 and from 0x7F up as `\xHH`; empty as `-`; cut at [`VALUE_MOST`].
    pub fn nginx(&mut self, b: &[u8]) {
        if b.is_empty() {
            return self.byte(b'-');
        }
        let b = &b[..b.len().min(VALUE_MOST)];
        let mut from = 0;
        for (i, &c) in b.iter().enumerate() {
            if !(0x20..0x7f).contains(&c) || c == b'"' || c == b'\\' {
                self.bytes(&b[from..i]);
                from = i + 1;
                self.bytes(b"\\x");
                self.hex(c);
            }
        }
        self.bytes(&b[from..]);
    }
}

impl fmt::Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Out;

    fn json(b: &[u8]) -> String {
        let mut buf = Vec::with_capacity(256);
        let mut out = Out::new(&mut buf);
        out.json(b);
        String::from_utf8(buf).unwrap()
    }

    fn nginx(b: &[u8]) -> String {
        let mut buf = Vec::with_capacity(256);
        Out::new(&mut buf).nginx(b);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn json_escapes_any_byte_into_a_string_serde_reads_back() {
        for hostile in [
            &b"/a\"b\\c"[..],
            b"line\r\nInjected: yes",
            b"\x00\x01\x1f\x7f",
            b"caf\xc3\xa9 \xff\xfe ok",
            "\u{2028}日本".as_bytes(),
        ] {
            let quoted = format!("\"{}\"", json(hostile));
            let back: String =
                serde_json::from_str(&quoted).unwrap_or_else(|e| panic!("{quoted}: {e}"));
            assert!(!quoted.contains('\n') && !quoted.contains('\r'), "{quoted}");
            if let Ok(text) = std::str::from_utf8(hostile) {
                assert_eq!(back, text);
            }
        }
        assert_eq!(json(b"\xff"), "\\u00FF");
        assert_eq!(json(b"a\tb"), "a\\tb");
    }

    #[test]
    fn nginx_escapes_quotes_backslashes_and_non_printables_as_hex() {
        assert_eq!(nginx(b""), "-");
        assert_eq!(nginx(b"Mozilla/5.0 (X11)"), "Mozilla/5.0 (X11)");
        assert_eq!(
            nginx(b"a\"b\\c\x01\x7f\xc3\xa9"),
            "a\\x22b\\x5Cc\\x01\\x7F\\xC3\\xA9"
        );
    }

    #[test]
    fn a_line_never_grows_its_buffer() {
        let mut buf = Vec::with_capacity(8);
        let mut out = Out::new(&mut buf);
        out.bytes(b"12345");
        out.bytes(b"6789");
        assert!(out.full);
        assert_eq!(buf, b"12345");
        assert_eq!(buf.capacity(), 8);
    }
}
