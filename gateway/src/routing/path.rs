//! Request paths normalised before routing, as RFC 3986 section 6.2.2 says: percent-
//! encodings of unreserved characters decoded and the others' hex uppercased, then dot
//! segments removed (section 5.2.4). `%2F` stays encoded and is never a separator, so
//! `/a%2Fb` is one segment. A path that climbs above `/` is refused rather than clamped:
//! it is never what a well-behaved client sends. The backend gets the normalised path.

use std::borrow::Cow;

/// Why a path cannot be normalised: the client gets 400 with this reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path climbs above the root: `{0}`")]
    AboveRoot(String),
    #[error("the path has a malformed percent-encoding: `{0}`")]
    BadEncoding(String),
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The normalised form of `path` (an origin-form path, without the query); borrowed when
/// it is already normal, which is the common case.
pub fn normalize(path: &str) -> Result<Cow<'_, str>, PathError> {
    let bytes = path.as_bytes();
    let needs_work = bytes.contains(&b'%')
        || path
            .split('/')
            .any(|segment| segment == "." || segment == "..");
    if !needs_work {
        return Ok(Cow::Borrowed(path));
    }

    // Percent-encoding normalisation.
    let mut decoded = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            ) else {
                return Err(PathError::BadEncoding(path.to_string()));
            };
            let b = hi * 16 + lo;
            if unreserved(b) {
                decoded.push(b as char);
            } else {
                decoded.push('%');
                decoded.push_str(&format!("{b:02X}"));
            }
            i += 3;
        } else {
            // Non-percent bytes are ASCII in a valid request target; copy them as they are.
            let next = bytes[i..]
                .iter()
                .position(|&c| c == b'%')
                .map_or(bytes.len(), |p| i + p);
            decoded.push_str(&path[i..next]);
            i = next;
        }
    }

    // Dot-segment removal, refusing to climb above the root.
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = decoded.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (n, segment) in segments.iter().enumerate() {
        match *segment {
            "." => {
                if n == last {
                    out.push("");
                }
            }
            ".." => {
                if out.pop().is_none() {
                    return Err(PathError::AboveRoot(path.to_string()));
                }
                if n == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut normal = String::with_capacity(decoded.len());
    for segment in &out {
        normal.push('/');
        normal.push_str(segment);
    }
    if normal.is_empty() {
        normal.push('/');
    }
    Ok(Cow::Owned(normal))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(p: &str) -> Result<String, PathError> {
        normalize(p).map(Cow::into_owned)
    }

    #[test]
    fn normal_paths_are_borrowed_untouched() {
        assert!(matches!(normalize("/api/v1/pods"), Ok(Cow::Borrowed(_))));
        assert!(matches!(normalize("/"), Ok(Cow::Borrowed(_))));
        assert!(matches!(normalize("/a..b/.c"), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn dot_segments_are_removed() {
        assert_eq!(n("/api/../admin").unwrap(), "/admin");
        assert_eq!(n("/a/./b/../c").unwrap(), "/a/c");
        assert_eq!(n("/a/b/..").unwrap(), "/a/");
        assert_eq!(n("/a/.").unwrap(), "/a/");
        assert_eq!(n("/a/..").unwrap(), "/");
    }

    #[test]
    fn unreserved_encodings_are_decoded_and_others_uppercased() {
        assert_eq!(n("/%61pi").unwrap(), "/api");
        assert_eq!(n("/x%7ey%2d").unwrap(), "/x~y-");
        assert_eq!(n("/a%2fb").unwrap(), "/a%2Fb");
        assert_eq!(n("/a%3ab").unwrap(), "/a%3Ab");
        // An encoded dot segment is a dot segment once decoded.
        assert_eq!(n("/api/%2E%2E/admin").unwrap(), "/admin");
        // An encoded slash is never a separator: `..` after it removes the whole segment.
        assert_eq!(n("/a%2Fb/../c").unwrap(), "/c");
    }

    #[test]
    fn climbing_above_the_root_and_bad_encodings_are_refused() {
        assert!(matches!(n("/.."), Err(PathError::AboveRoot(_))));
        assert!(matches!(n("/a/../../b"), Err(PathError::AboveRoot(_))));
        assert!(matches!(n("/a%2"), Err(PathError::BadEncoding(_))));
        assert!(matches!(n("/a%zz"), Err(PathError::BadEncoding(_))));
    }
}
