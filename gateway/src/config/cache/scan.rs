//! Finds the `[[route]]` sections of a config file without parsing it: a small scanner
//! that knows TOML's strings (all four kinds), comments and bracket depth, so a `[[route]]`
//! inside a string, a comment or a multi-line array is not taken for a header.
//!
//! It answers `None` whenever a route could be written in a way it does not follow (a key
//! `route` in the root table, a quoted header naming route, a `[route.x]` table outside a
//! route section, an unterminated string): the caller then parses the whole file. It never
//! decides what the file means; `toml` does that.
//!
//! Not `toml_parser`'s lexer: it makes a token per key, value and piece of whitespace (its
//! `Lexer::into_vec` showed in the profile of a whole parse), where this needs only to
//! skip over the bytes that cannot start a string, comment or bracket.

use std::ops::Range;

/// The byte ranges of the `[[route]]` sections of `source`, in file order: each from the
/// start of its `[[route]]` header line up to the start of the next header line that is not
/// `[route.…]` / `[[route.…]]` (or the end of the file). `None` when in doubt.
pub(crate) fn route_sections(source: &str) -> Option<Vec<Range<usize>>> {
    let bytes = source.as_bytes();
    let mut sections: Vec<Range<usize>> = Vec::new();
    // The start of the route section being read, if the last header opened or continued one.
    let mut open: Option<usize> = None;
    let mut seen_header = false;
    let mut depth = 0usize;
    let mut at_line_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => {
                at_line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let line_start = at_line_start;
        at_line_start = false;
        match b {
            b'#' => i = skip_comment(bytes, i),
            b'"' | b'\'' => i = skip_string(bytes, i)?,
            b'[' if line_start && depth == 0 => {
                let header_line = bytes[..i]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |p| p + 1);
                let (kind, end) = header(bytes, i)?;
                if !seen_header {
                    // Keys of the root table come before the first header: a `route` key
                    // there (dotted, quoted, inline) is a way of writing routes we leave to
                    // `toml`.
                    if contains(&bytes[..header_line], b"route") {
                        return None;
                    }
                    seen_header = true;
                }
                match kind {
                    Header::Route => {
                        if let Some(start) = open.take() {
                            sections.push(start..header_line);
                        }
                        open = Some(header_line);
                    }
                    Header::RouteChild => {
                        // `[route.timeouts]` belongs to the last `[[route]]`; after any other
                        // header it still does in TOML, but the section would be split.
                        open?;
                    }
                    Header::Other => {
                        if let Some(start) = open.take() {
                            sections.push(start..header_line);
                        }
                    }
                    Header::Doubt => return None,
                }
                i = end;
            }
            b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ => {
                i += 1;
                while i < bytes.len() && !SPECIAL[usize::from(bytes[i])] {
                    i += 1;
                }
            }
        }
    }
    if !seen_header && contains(bytes, b"route") {
        return None;
    }
    if depth != 0 {
        return None;
    }
    if let Some(start) = open {
        sections.push(start..bytes.len());
    }
    Some(sections)
}

/// The bytes the scanner must look at; a run of any others is skipped at once (they
/// cannot start a string, comment, header or bracket, nor end a line).
const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    let special = b"\n#\"'[]{}";
    while i < special.len() {
        table[special[i] as usize] = true;
        i += 1;
    }
    table
};

enum Header {
    /// `[[route]]`
    Route,
    /// `[route.…]` or `[[route.…]]`
    RouteChild,
    /// Any header whose first key is not `route`.
    Other,
    /// A header naming `route` some other way (quoted, `[route]`), or one we cannot read.
    Doubt,
}

/// Reads the header starting at `bytes[at] == b'['`; returns its kind and the offset just
/// past its closing bracket(s). `None` if the line is not a header we can read.
fn header(bytes: &[u8], at: usize) -> Option<(Header, usize)> {
    let array = bytes.get(at + 1) == Some(&b'[');
    let name_start = at + if array { 2 } else { 1 };
    let mut i = name_start;
    let mut quoted = false;
    while i < bytes.len() && bytes[i] != b']' {
        match bytes[i] {
            b'"' | b'\'' => {
                quoted = true;
                i = skip_string(bytes, i)?;
            }
            b'\n' | b'#' => return None,
            _ => i += 1,
        }
    }
    let name = bytes.get(name_start..i)?;
    let mut end = i + 1;
    if array {
        if bytes.get(end) != Some(&b']') {
            return None;
        }
        end += 1;
    }
    let name = std::str::from_utf8(name).ok()?.trim_matches([' ', '\t']);
    let first = name
        .split('.')
        .next()
        .unwrap_or("")
        .trim_matches([' ', '\t']);
    let kind = if quoted {
        if name.contains("route") {
            Header::Doubt
        } else {
            Header::Other
        }
    } else if first != "route" {
        Header::Other
    } else if name == "route" {
        if array { Header::Route } else { Header::Doubt }
    } else {
        Header::RouteChild
    };
    Some((kind, end))
}

/// Past the comment starting at `at`: the newline that ends it is left for the caller.
fn skip_comment(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(bytes.len(), |p| at + p)
}

/// Past the string starting at `at` (a `"` or `'`), of any of the four kinds; `None` if it
/// does not end.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let quote = bytes[at];
    let escapes = quote == b'"';
    let multi = bytes.get(at + 1) == Some(&quote) && bytes.get(at + 2) == Some(&quote);
    if !multi && bytes.get(at + 1) == Some(&quote) {
        // The empty string `""` or `''`.
        return Some(at + 2);
    }
    let mut i = at + if multi { 3 } else { 1 };
    while i < bytes.len() {
        let c = bytes[i];
        if escapes && c == b'\\' {
            i += 2;
        } else if c == quote {
            if !multi {
                return Some(i + 1);
            }
            let run = bytes[i..].iter().take_while(|&&q| q == quote).count();
            if run >= 3 {
                // Up to two quotes before the closing three belong to the string.
                return Some(i + run);
            }
            i += run;
        } else if c == b'\n' && !multi {
            return None;
        } else {
            i += 1;
        }
    }
    None
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Option<Vec<&str>> {
        route_sections(source).map(|s| s.into_iter().map(|r| &source[r]).collect())
    }

    #[test]
    fn sections_run_from_a_route_header_to_the_next_other_header() {
        let src = "[admin]\nbind = \"x\"\n[[route]]\nhost = \"a\"\n[route.timeouts]\nidle = \"1s\"\n\
                   [[route]]\nhost = \"b\"\n\n[kubernetes]\nx = 1\n[[route]]\nhost = \"c\"";
        assert_eq!(
            texts(src).unwrap(),
            [
                "[[route]]\nhost = \"a\"\n[route.timeouts]\nidle = \"1s\"\n",
                "[[route]]\nhost = \"b\"\n\n",
                "[[route]]\nhost = \"c\"",
            ]
        );
    }

    #[test]
    fn strings_comments_and_arrays_hide_headers() {
        let src = "[[route]]\nhost = \"a\" # [[route]]\nbody = \"\"\"\n[[route]]\n\"\"\"\"\n\
                   x = '''\n[[route]]'''\ny = '[[route]]'\nbackends = [\n[1],\n\"]\",\n]\n\
                   # [kubernetes]\n[[route]] # next\nhost = \"b\"\n";
        let got = texts(src).unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].starts_with("[[route]] # next"), "{got:?}");
    }

    #[test]
    fn routes_written_another_way_are_left_to_toml() {
        for src in [
            "route = [{ host = \"a\" }]\n[admin]\n",
            "route.host = \"a\"\n",
            "[[ \"route\" ]]\nhost = \"a\"\n",
            "[route]\nhost = \"a\"\n",
            "[[route]]\nhost = \"a\"\n[admin]\n[route.timeouts]\nidle = \"1s\"\n",
            "[[route]]\nhost = \"unterminated\n",
            "[[route]]\nhost = [\"a\"\n",
        ] {
            assert_eq!(route_sections(src), None, "{src}");
        }
    }

    #[test]
    fn a_file_without_routes_has_no_sections() {
        assert_eq!(
            texts("[admin]\nbind = \"x\"\n").unwrap(),
            Vec::<&str>::new()
        );
        assert_eq!(texts("").unwrap(), Vec::<&str>::new());
    }
}
