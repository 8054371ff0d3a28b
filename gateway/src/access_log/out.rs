//! A line written into a buffer that never grows: every write past its capacity marks the
//! line too long instead of allocating, so a serving thread writes into its own bounded
//! buffer without the allocator; and the two escapings a value gets, JSON's and nginx's.

use std::fmt::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The most of one text value a line holds (a path, a header's value); the rest is cut,
/// so one hostile request cannot fill a worker's buffer.
pub const VALUE_MOST: usize = 2048;

/// Writes into `buf` up to its capacity, and no further.
pub struct Out<'b> {
    buf: &'b mut Vec<u8>,
    /// Something did not fit: the line is to be taken back.
    pub full: bool,
}

/// A number's decimal digits, written without `fmt`'s machinery or an allocation: the
/// access log's numbers and the fast path's `Content-Length` both.
pub struct Decimal {
    digits: [u8; 20],
    at: usize,
}

impl Decimal {
    pub fn of(mut n: u64) -> Decimal {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Decimal { digits, at }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.digits[self.at..]
    }
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

    /// A write that does not fit marks the line full; what later ones write may fit, but
    /// a full line is taken back whole (`Sink::push`), so they are not stopped.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        if self.buf.capacity() - self.buf.len() < b.len() {
            self.full = true;
            return;
        }
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.bytes(&[b]);
    }

    /// `n` in decimal, without `fmt`'s machinery (a line writes several numbers).
    pub fn uint(&mut self, n: u64) {
        // Most of a line's numbers (a status, an address's octets, a duration's
        // milliseconds) have three digits or fewer: written as one store each.
        let digit = |n: u64| b'0' + (n % 10) as u8;
        match n {
            0..10 => self.byte(digit(n)),
            10..100 => self.bytes(&[digit(n / 10), digit(n)]),
            100..1000 => self.bytes(&[digit(n / 100), digit(n / 10), digit(n)]),
            _ => self.bytes(Decimal::of(n).as_bytes()),
        }
    }

    /// A duration as milliseconds with three decimals (`1.500`), rounded to the
    /// microsecond.
    pub fn millis(&mut self, d: Duration) {
        let micros = d.as_nanos().saturating_add(500) / 1000;
        let micros = u64::try_from(micros).unwrap_or(u64::MAX);
        self.uint(micros / 1000);
        let frac = (micros % 1000) as u16;
        self.bytes(&[
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ]);
    }

    /// An IP address as `Display` writes it; IPv4 digit by digit.
    pub fn ip(&mut self, ip: IpAddr) {
        match ip {
            IpAddr::V4(v4) => {
                let [a, b, c, d] = v4.octets();
                self.uint(a.into());
                for octet in [b, c, d] {
                    self.byte(b'.');
                    self.uint(octet.into());
                }
            }
            IpAddr::V6(v6) => {
                let _ = write!(self, "{v6}");
            }
        }
    }

    /// A socket address as `Display` writes it (`192.0.2.7:51234`, `[::1]:8080`).
    pub fn addr(&mut self, a: SocketAddr) {
        match a {
            SocketAddr::V4(v4) => self.ip(IpAddr::V4(*v4.ip())),
            SocketAddr::V6(v6) => {
                let _ = write!(self, "[{}", v6.ip());
                if v6.scope_id() != 0 {
                    let _ = write!(self, "%{}", v6.scope_id());
                }
                self.byte(b']');
            }
        }
        self.byte(b':');
        self.uint(a.port().into());
    }

    /// `b` as a JSON string's contents: `"`, `\` and control characters escaped, valid
    /// UTF-8 as it is, each byte of invalid UTF-8 as `\u00XX`; cut at [`VALUE_MOST`].
    pub fn json(&mut self, b: &[u8]) {
        let b = &b[..b.len().min(VALUE_MOST)];
        // Most values are printable ASCII with nothing to escape: copied in one go, the
        // rest (from the first byte that is not) taken apart below.
        let plain = b
            .iter()
            .position(|&c| !(0x20..0x7f).contains(&c) || c == b'"' || c == b'\\')
            .unwrap_or(b.len());
        self.bytes(&b[..plain]);
        if plain < b.len() {
            self.json_escaped(&b[plain..]);
        }
    }

    /// [`Out::json`] of what is left from the first byte to escape or to check as UTF-8.
    fn json_escaped(&mut self, b: &[u8]) {
        for chunk in b.utf8_chunks() {
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
    use std::time::Duration;

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
    fn a_hostile_long_value_is_cut_at_value_most_plain_or_escaped() {
        use super::VALUE_MOST;
        // Room for far more than one value, so only the cut can stop a write.
        let json = |b: &[u8]| {
            let mut buf = Vec::with_capacity(8 * VALUE_MOST);
            let mut out = Out::new(&mut buf);
            out.json(b);
            assert!(!out.full);
            String::from_utf8(buf).unwrap()
        };
        // A 100 KiB path of plain ASCII: copied whole up to the cut, not a byte more.
        let long = vec![b'a'; 100 * 1024];
        assert_eq!(json(&long), "a".repeat(VALUE_MOST));
        // Plain up to the cut, then quotes past it: the quotes are never reached.
        let mut tail = vec![b'a'; VALUE_MOST];
        tail.extend_from_slice(b"\"\"\"");
        assert_eq!(json(&tail), "a".repeat(VALUE_MOST));
        // Plain, then a quote inside the cut, then more: escaped, then cut at the same byte.
        let mut mixed = vec![b'a'; 10];
        mixed.push(b'"');
        mixed.extend(std::iter::repeat_n(b'b', 100 * 1024));
        let written = json(&mixed);
        assert_eq!(
            written,
            format!("{}\\\"{}", "a".repeat(10), "b".repeat(VALUE_MOST - 11))
        );
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

    fn written(f: impl FnOnce(&mut Out<'_>)) -> String {
        let mut buf = Vec::with_capacity(256);
        f(&mut Out::new(&mut buf));
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn numbers_durations_and_addresses_read_as_display_writes_them() {
        for n in [
            0,
            7,
            10,
            42,
            99,
            100,
            101,
            999,
            1_000,
            12_345,
            1_000_000,
            u64::MAX,
        ] {
            assert_eq!(written(|o| o.uint(n)), n.to_string());
        }
        for (nanos, text) in [
            (0, "0.000"),
            (1_500_000, "1.500"),
            (1_234_499, "1.234"),
            (1_234_500, "1.235"),
            (999_999_700, "1000.000"),
            (45_006_000_000, "45006.000"),
        ] {
            assert_eq!(written(|o| o.millis(Duration::from_nanos(nanos))), text);
        }
        for a in [
            "192.0.2.7:51234",
            "0.0.0.0:0",
            "255.255.255.255:65535",
            "[::1]:8080",
            "[2001:db8::7%3]:443",
        ] {
            let a: std::net::SocketAddr = a.parse().unwrap();
            assert_eq!(written(|o| o.addr(a)), a.to_string());
            assert_eq!(written(|o| o.ip(a.ip())), a.ip().to_string());
        }
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
