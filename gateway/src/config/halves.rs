//! Parsing a large config file's TOML in two halves at once, one per core.
//!
//! A 10,000-route file is ~730 KB, and parsing its TOML is about three quarters of a
//! reload's parse (`bench/RESULTS.md`, Reload). Routes are independent `[[route]]` tables,
//! so the file is cut at a `[[route]]` header near its middle; the head is parsed as the
//! whole config and the tail as more routes, on two threads, and the tail's routes are
//! appended. The tail is parsed with the head's bytes replaced by spaces in front of it, so
//! every span (and so every `line:column` in an error) is an offset into the real file.
//!
//! The cut is only taken when it cannot change the meaning: every top-level header of the
//! tail must be a route's (`[[route]]` or `[route.…]`), and the head must parse on its own,
//! which it cannot if the cut falls inside a multi-line string, an inline table or an
//! array (they would be left open). Otherwise, and whenever either half fails, the whole
//! file is parsed as one, so errors are reported exactly as before.

use serde::Deserialize;

use super::raw::{RawConfig, RawRoute};

/// Files smaller than this are parsed in one go: a second thread is not worth it.
const MIN_SPLIT_LEN: usize = 128 << 10;

/// The tail of a cut file: routes only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tail {
    #[serde(default)]
    route: Vec<RawRoute>,
}

/// Parses `source` like `toml::from_str::<RawConfig>`, in two halves when it is large.
pub(super) fn parse(source: &str) -> Result<RawConfig, toml::de::Error> {
    if source.len() >= MIN_SPLIT_LEN {
        if let Some(cut) = cut(source) {
            if let Some(raw) = parse_halves(source, cut) {
                return Ok(raw);
            }
        }
    }
    toml::from_str(source)
}

/// Where to cut: the start of a `[[route]]` line near the middle, with one before it, and
/// only route headers from there on.
fn cut(source: &str) -> Option<usize> {
    let middle = source.len() / 2;
    let after = source[middle..].find("\n[[route]]")? + middle + 1;
    let tail = &source[after..];
    let only_routes = tail
        .lines()
        .all(|line| !line.starts_with('[') || is_route_header(line));
    let head_has_routes = source[..after]
        .lines()
        .any(|line| line.trim_end() == "[[route]]");
    (only_routes && head_has_routes).then_some(after)
}

fn is_route_header(line: &str) -> bool {
    let line = line.trim_end();
    line == "[[route]]" || line.starts_with("[route.") || line.starts_with("[[route.")
}

fn parse_halves(source: &str, cut: usize) -> Option<RawConfig> {
    let (head, tail) = source.split_at(cut);
    let (head, tail) = std::thread::scope(|scope| {
        let tail = scope.spawn(|| {
            let mut padded = String::with_capacity(source.len());
            padded.extend(std::iter::repeat_n(' ', cut));
            padded.push_str(tail);
            toml::from_str::<Tail>(&padded).ok()
        });
        let head = toml::from_str::<RawConfig>(head).ok();
        (head, tail.join().ok().flatten())
    });
    let mut raw = head?;
    raw.routes.extend(tail?.route);
    Some(raw)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;
    use std::path::Path;

    use super::*;
    use crate::config::Config;

    fn big_config(routes: usize, tail_extra: &str) -> String {
        let mut out = String::from(
            "[admin]\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n",
        );
        for i in 0..routes {
            let _ = write!(
                out,
                "[[route]]\nhost = \"r{i}.example\"\ndirect = {{ status = 200, body = \"r{i}\" }}\n"
            );
            if i % 7 == 0 {
                let _ = write!(out, "[route.timeouts]\nconnect = \"{}s\"\n", i % 5 + 1);
            }
        }
        out.push_str(tail_extra);
        out
    }

    #[test]
    fn halves_parse_to_what_the_whole_file_does() {
        let source = big_config(5_000, "");
        assert!(source.len() >= MIN_SPLIT_LEN);
        let at = cut(&source).expect("a route header past the middle");
        assert!(source[at..].starts_with("[[route]]\n"));
        let halves = parse_halves(&source, at).expect("both halves parse");
        let whole: RawConfig = toml::from_str(&source).unwrap();
        assert_eq!(halves.routes.len(), 5_000);
        assert_eq!(
            format!("{halves:?}"),
            format!("{whole:?}"),
            "spans included"
        );
    }

    #[test]
    fn a_non_route_header_in_the_tail_parses_the_whole_file() {
        let source = big_config(5_000, "[timeouts]\nconnect = \"3s\"\n");
        assert_eq!(cut(&source), None);
        let raw = parse(&source).unwrap();
        assert_eq!(raw.routes.len(), 5_000);
        assert!(raw.timeouts.connect.is_some());
    }

    #[test]
    fn a_cut_inside_a_multi_line_string_is_refused() {
        // The body's lines look like route headers; only the whole parse sees the string.
        let mut source = big_config(2_000, "");
        let lines = "\n[[route]]\n".repeat(20_000);
        let _ = write!(
            source,
            "[[route]]\nhost = \"last.example\"\ndirect = {{ status = 200, body = \"\"\"{lines}\"\"\" }}\n"
        );
        let at = cut(&source).expect("the string's lines pass for headers");
        assert!(parse_halves(&source, at).is_none(), "the head is left open");
        let raw = parse(&source).unwrap();
        assert_eq!(raw.routes.len(), 2_001);
    }

    #[test]
    fn errors_in_the_tail_are_reported_at_their_place_in_the_file() {
        // A meaning error: the tail parses, and its span must point into the real file.
        let mut source = big_config(5_000, "");
        source.push_str("[[route]]\nhost = \"a b\"\ndirect = { status = 200 }\n");
        assert!(cut(&source).is_some());
        let line = source.lines().count() - 1;
        let text = Config::parse(Path::new("big.toml"), &source)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains(&format!("big.toml:{line}:8: route[5000].host")),
            "{text}"
        );
        // A syntax error: the tail fails, and the whole-file parse reports it.
        source.push_str("[[route]]\nhost = \"b.example\"\nbogus = 1\n");
        let line = source.lines().count();
        let text = Config::parse(Path::new("big.toml"), &source)
            .unwrap_err()
            .to_string();
        assert!(text.contains(&format!("big.toml:{line}:1")), "{text}");
    }
}
