//! What both heads, the request's and the answer's, are written and read with: a header
//! line, a length as hyper reads one, and an [`Edit`] of a head's lines (a Gateway API
//! header modifier as the fast path applies it).

/// Appends `name: value` and its CRLF.
pub fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A length as hyper reads one: ASCII digits only (no sign, no spaces), no overflow.
pub fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// A header modifier's work on a head's lines, made once when the route is built: the
/// lines of the names it sets or removes left out, its own lines written after the rest.
/// The same as `HeaderMap` `insert` of each set (the last of one name wins), `append` of
/// each add, then `remove` of each removed name; so the backend or the client reads the
/// same headers on either path, with no allocation per request.
#[derive(Debug, Default)]
pub struct Edit {
    /// Lowercase names whose lines go.
    drop: Vec<Box<[u8]>>,
    /// The lines it writes, each ending in CRLF.
    lines: Vec<u8>,
    /// Its lines hold a `Date`.
    date: bool,
}

impl Edit {
    /// The edit of `set`, `add` and `remove` (names as `http` holds them: lowercase).
    pub fn new(
        set: &[(http::HeaderName, http::HeaderValue)],
        add: &[(http::HeaderName, http::HeaderValue)],
        remove: &[http::HeaderName],
    ) -> Edit {
        let removed = |name: &http::HeaderName| remove.contains(name);
        let mut drop: Vec<Box<[u8]>> = Vec::new();
        for name in set.iter().map(|(n, _)| n).chain(remove) {
            if !drop.iter().any(|d| d.as_ref() == name.as_str().as_bytes()) {
                drop.push(name.as_str().as_bytes().into());
            }
        }
        let mut lines = Vec::new();
        let mut date = false;
        for (i, (name, value)) in set.iter().enumerate() {
            // A later set of the same name replaces this one.
            if removed(name) || set[i + 1..].iter().any(|(later, _)| later == name) {
                continue;
            }
            line(&mut lines, name.as_str().as_bytes(), value.as_bytes());
            date |= name == http::header::DATE;
        }
        for (name, value) in add.iter().filter(|(n, _)| !removed(n)) {
            line(&mut lines, name.as_str().as_bytes(), value.as_bytes());
            date |= name == http::header::DATE;
        }
        Edit { drop, lines, date }
    }

    /// Whether a line named `name` (as it came, in any case) is left out.
    pub fn drops(&self, name: &[u8]) -> bool {
        self.drop.iter().any(|d| d.eq_ignore_ascii_case(name))
    }

    /// Whether the edit names `name` (lowercase) at all: sets, adds or removes it.
    pub fn names(&self, name: &str) -> bool {
        self.drops(name.as_bytes())
            || self.lines.split(|&b| b == b'\n').any(|l| {
                l.len() > name.len()
                    && l[..name.len()].eq_ignore_ascii_case(name.as_bytes())
                    && l[name.len()] == b':'
            })
    }

    /// The lines it writes.
    pub fn lines(&self) -> &[u8] {
        &self.lines
    }

    /// Its lines hold a `Date` (no other is written then).
    pub fn dates(&self) -> bool {
        self.date
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edit gives what `HeaderMap`'s insert, append and remove give.
    #[test]
    fn an_edit_sets_adds_then_removes_as_a_header_map_does() {
        let n = |s: &str| http::HeaderName::from_bytes(s.as_bytes()).unwrap();
        let v = |s: &'static str| http::HeaderValue::from_static(s);
        let edit = Edit::new(
            &[
                (n("X-Set"), v("one")),
                (n("x-set"), v("two")),
                (n("x-gone"), v("g")),
            ],
            &[
                (n("x-add"), v("more")),
                (n("x-set"), v("three")),
                (n("x-gone"), v("h")),
            ],
            &[n("x-gone"), n("x-old")],
        );
        assert_eq!(
            String::from_utf8_lossy(edit.lines()),
            "x-set: two\r\nx-add: more\r\nx-set: three\r\n"
        );
        for name in ["x-set", "X-SET", "x-gone", "x-old"] {
            assert!(edit.drops(name.as_bytes()), "{name}");
        }
        assert!(!edit.drops(b"x-add") && !edit.drops(b"x-se"));
        assert!(edit.names("x-add") && edit.names("x-old") && !edit.names("x-ad"));
        assert!(!edit.dates());
        assert!(Edit::new(&[], &[(n("date"), v("d"))], &[]).dates());
    }

    #[test]
    fn lengths_are_plain_digits_that_fit() {
        assert_eq!(digits(b"0"), Some(0));
        assert_eq!(digits(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"+1",
            b"-1",
            b" 1",
            b"1 ",
            b"0x1",
            b"18446744073709551616",
        ] {
            assert_eq!(digits(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
