//! The cached parse against the whole-file parse, after each of a series of edits.

use super::*;
use std::sync::Arc;

const BASE: &str = r#"[admin]
bind = "127.0.0.1:0"

[[listener]]
name = "web"
bind = "127.0.0.1:0"

[[route]]
host = "a.example"
backends = [
  "127.0.0.1:1",
  "127.0.0.1:2",
]
# [[route]] in a comment
[route.timeouts]
connect = "1s"

[[route]]
host = "b.example"
direct = { status = 200, body = "[[route]]\n[admin]", headers = { x-a = "1" } }

[[tenant]]
name = "t"
[tenant.plugins.pod_router]
path = "x.wasm"
config = [
[1, 2],
["[[route]]"],
]

[[route]]
name = "c"
host = "c.example"
path = "/c"
direct = { status = 404, body = """
[[route]]
host = "not a route"
""" }
tenant = "t"

[[route]]
host = "d.example"
exact = "/d"
backends = ["https://127.0.0.1:3"]
tls = { server_name = "d.example" }
bandwidth = "1MiB/s"
"#;

const D: &str = "[[route]]\nhost = \"d.example\"\nexact = \"/d\"\nbackends = [\"https://127.0.0.1:3\"]\ntls = { server_name = \"d.example\" }\nbandwidth = \"1MiB/s\"\n";

/// The raw config of `source` through the cache (which must reuse at least `at_least`
/// sections), next to the whole-file parse's, both as `Debug` text with every span.
fn both(cache: &mut ParseCache, source: &str, at_least: usize) -> (String, String) {
    let sections = scan::route_sections(source).expect("the scanner places every route");
    let cached = sections
        .iter()
        .filter(|r| cache.routes.contains_key(&source[(*r).clone()]))
        .count();
    assert!(
        cached >= at_least,
        "{cached} sections cached, expected {at_least}"
    );
    let (raw, texts, _) = cache.reuse(source, &sections).expect("the cached parse");
    let got = format!("{raw:#?}");
    cache.fill(texts, &sections, raw.routes, Vec::new(), None);
    let whole: RawConfig = toml::from_str(source).unwrap();
    (got, format!("{whole:#?}"))
}

fn filled(source: &str) -> ParseCache {
    let mut cache = ParseCache::new();
    let sections = scan::route_sections(source).unwrap();
    let raw: RawConfig = toml::from_str(source).unwrap();
    let texts = sections
        .iter()
        .map(|r| source[r.clone()].to_owned())
        .collect();
    cache.fill(texts, &sections, raw.routes, Vec::new(), None);
    cache
}

/// What an edit does, the edit, and how many sections it leaves cached at least.
type Edit = (&'static str, fn(&str) -> String, usize);

#[test]
fn every_edit_parses_as_the_whole_file_does() {
    let mut cache = filled(BASE);
    assert_eq!(cache.len(), 4);
    let mut text = BASE.to_string();
    let edits: [Edit; 7] = [
        (
            "a route changed",
            |t| t.replace("b.example", "b2.example"),
            3,
        ),
        (
            "a route inserted before the others",
            |t| {
                t.replace(
                    "\n[[route]]\nhost = \"a.example\"",
                    "\n[[route]]\nhost = \"first.example\"\ndirect = { status = 204 }\n\n[[route]]\nhost = \"a.example\"",
                )
            },
            4,
        ),
        ("a route removed", |t| t.replace(D, ""), 4),
        (
            "a route moved",
            |t| {
                let c_start = t.find("[[route]]\nname = \"c\"").unwrap();
                let c = t[c_start..].to_string();
                let without = &t[..c_start];
                let at = without.find("[[route]]\nhost = \"first").unwrap();
                format!("{}{}{}", &without[..at], c, &without[at..])
            },
            4,
        ),
        (
            "a sub-table added",
            |t| {
                t.replace(
                "headers = { x-a = \"1\" } }\n",
                "headers = { x-a = \"1\" } }\n[route.timeouts]\nidle = \"5s\"\n[route.bandwidth]\ntotal = \"1MiB/s\"\n",
            )
            },
            3,
        ),
        (
            "comments and strings holding [[route]]",
            |t| {
                t.replace(
                    "[[tenant]]",
                    "# [[route]]\n#[[route]]\n[[tenant]]\nnamespaces = ['''\n[[route]]''', \"[[route]]\"]",
                )
            },
            3,
        ),
        (
            "a route appended after the last",
            |t| format!("{t}\n[[route]]\nhost = \"z.example\"\nbackends = [\n[\"x:1\"][0],\n]\n"),
            0,
        ),
    ];
    for (what, edit, at_least) in edits {
        let next = edit(&text);
        assert_ne!(next, text, "{what}: the edit changed nothing");
        text = next;
        if what == "a route appended after the last" {
            // Not TOML (an index after an array): the cached parse gives up as toml does.
            let sections = scan::route_sections(&text).unwrap();
            assert!(cache.reuse(&text, &sections).is_none(), "{what}");
            assert!(toml::from_str::<RawConfig>(&text).is_err(), "{what}");
            continue;
        }
        let (got, want) = both(&mut cache, &text, at_least);
        assert_eq!(got, want, "{what}:\n{text}");
    }
    // The failed parse left the cache as it was: the next edit still reuses every route.
    let text = text.replace("[\"x:1\"][0],", "\"x:1\",");
    let (got, want) = both(&mut cache, &text, 4);
    assert_eq!(got, want);
}

#[test]
fn moved_routes_report_errors_where_they_now_are() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    let good = "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\
                [[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\n\
                [[route]]\nhost = \"b\"\ntenant = \"t\"\nbackends = [\"x:2\"]\n\
                [[tenant]]\nname = \"t\"\n";
    let mut cache = ParseCache::new();
    assert_eq!(
        format!(
            "{:?}",
            Config::parse_cached(&path, good, &mut cache).unwrap()
        ),
        format!("{:?}", Config::parse(&path, good).unwrap()),
    );
    assert_eq!(cache.len(), 2);

    let broken = [
        // Lines inserted above: the unknown tenant is now further down.
        good.replace(
            "[[listener]]",
            "[admin]\nbind = \"127.0.0.1:0\"\n\n[[listener]]",
        )
        .replace("[[tenant]]\nname = \"t\"\n", ""),
        // A duplicate route: the cached one is the first.
        good.replace("host = \"b\"", "host = \"A\""),
        // A TOML error inside a new section, in a multi-line array whose line starts with `[`.
        format!("{good}[[route]]\nhost = \"c\"\nbackends = [\n[\"x:1\"],\n]\n"),
        // A syntax error elsewhere.
        good.replace("[[tenant]]", "[[tenant]\n"),
    ];
    for text in broken {
        let cached = Config::parse_cached(&path, &text, &mut cache).unwrap_err();
        let whole = Config::parse(&path, &text).unwrap_err();
        assert_eq!(cached, whole, "{text}");
        assert!(cached.0.iter().all(|e| e.position.is_some()), "{cached}");
    }

    // A valid edit after the errors parses as the whole file does.
    let moved = format!("[admin]\nbind = \"127.0.0.1:0\"\n{good}");
    assert_eq!(
        format!(
            "{:?}",
            Config::parse_cached(&path, &moved, &mut cache).unwrap()
        ),
        format!("{:?}", Config::parse(&path, &moved).unwrap()),
    );
}

#[test]
fn a_file_the_scanner_doubts_is_parsed_whole() {
    let path = Path::new("t.toml");
    let mut cache = filled(BASE);
    let text = format!("route = []\n{BASE}");
    let cached = Config::parse_cached(path, &text, &mut cache).unwrap_err();
    assert_eq!(cached, Config::parse(path, &text).unwrap_err());
    assert!(cache.is_empty());
}

/// `source` through the cache and as a whole file: both must give the same config (as
/// `Debug`, every field) or the same errors (key, line:column, message).
fn parsed_alike(path: &Path, source: &str, cache: &mut ParseCache) -> Result<Config, ConfigErrors> {
    let cached = Config::parse_cached(path, source, cache);
    match (&cached, Config::parse(path, source)) {
        (Ok(c), Ok(w)) => assert_eq!(format!("{c:?}"), format!("{w:?}"), "{source}"),
        (Err(c), Err(w)) => assert_eq!(*c, w, "{source}"),
        (c, w) => panic!("cached {c:?}, whole {w:?}\n{source}"),
    }
    cached
}

/// The validated route named `name` in `config`.
fn route<'c>(config: &'c Config, name: &str) -> &'c Arc<RouteConfig> {
    config
        .routes
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no route {name}"))
}

/// Whether `next` took the route `name` from `before` as it was, not validated again.
fn reused(before: &Config, next: &Config, name: &str) -> bool {
    Arc::ptr_eq(route(before, name), route(next, name))
}

const VALIDATED: &str = r#"[timeouts]
connect = "2s"

[[listener]]
name = "web"
bind = "127.0.0.1:0"

[[listener]]
name = "other"
bind = "127.0.0.1:0"

[[tenant]]
name = "t"

[[route]]
host = "a.example"
backends = ["127.0.0.1:1"]

[[route]]
host = "b.example"
listeners = ["other"]
direct = { status = 200, body = "b" }

[[route]]
host = "c.example"
tenant = "t"
backends = ["127.0.0.1:2"]
[route.timeouts]
idle = "5s"

[[route]]
host = "d.example"
backends = ["https://127.0.0.1:3"]
tls = { ca = "ca.pem" }
"#;

#[test]
fn validated_routes_are_reused_only_where_they_validate_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    let ca = rcgen::generate_simple_self_signed(vec!["ca.example".to_string()]).unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.cert.pem()).unwrap();
    let mut cache = ParseCache::new();
    let ok = |text: &str, cache: &mut ParseCache| parsed_alike(&path, text, cache).unwrap();

    let first = ok(VALIDATED, &mut cache);
    // A route changed: the others are taken as they were, but for the one whose upstream
    // `tls` reads a file.
    let text = VALIDATED.replace("body = \"b\"", "body = \"b2\"");
    let next = ok(&text, &mut cache);
    assert!(reused(&first, &next, "a.example/") && reused(&first, &next, "c.example/"));
    assert!(!reused(&first, &next, "b.example/") && !reused(&first, &next, "d.example/"));

    // Inserted before the others, then moved: still reused, wherever it now is.
    let text = text.replace(
        "[[route]]\nhost = \"a.example\"",
        "[[route]]\nhost = \"first.example\"\ndirect = { status = 204 }\n\n[[route]]\nhost = \"a.example\"",
    );
    let inserted = ok(&text, &mut cache);
    assert!(reused(&next, &inserted, "a.example/"));
    let c_start = text.find("[[route]]\nhost = \"c.example\"").unwrap();
    let c_end = text.find("[[route]]\nhost = \"d.example\"").unwrap();
    let text = text.replacen(&text[c_start..c_end], "", 1).replace(
        "[[route]]\nhost = \"first.example\"",
        &format!(
            "{}[[route]]\nhost = \"first.example\"",
            &text[c_start..c_end]
        ),
    );
    let moved = ok(&text, &mut cache);
    assert_eq!(moved.routes[0].name, "c.example/");
    assert!(reused(&inserted, &moved, "c.example/"));
    // Removed.
    let text = text.replace(
        "[[route]]\nhost = \"first.example\"\ndirect = { status = 204 }\n",
        "",
    );
    let removed = ok(&text, &mut cache);
    assert!(removed.routes.iter().all(|r| r.name != "first.example/"));
    assert!(reused(&moved, &removed, "a.example/"));

    // A default a route's validation reads: every route is validated again.
    let text = text.replace("connect = \"2s\"", "connect = \"3s\"");
    let slower = ok(&text, &mut cache);
    assert!(!reused(&removed, &slower, "a.example/") && !reused(&removed, &slower, "c.example/"));
    assert_eq!(route(&slower, "a.example/").timeouts.connect.as_secs(), 3);
    let text = text.replace("body = \"b2\"", "body = \"b3\"");
    let again = ok(&text, &mut cache);
    assert!(reused(&slower, &again, "a.example/"));

    // A tenant or a listener a route names is gone: that route fails as it would uncached.
    for broken in [
        text.replace("[[tenant]]\nname = \"t\"\n", ""),
        text.replace("name = \"other\"", "name = \"others\""),
        // A duplicate of a reused route.
        format!("{text}\n[[route]]\nhost = \"A.example\"\ndirect = {{ status = 200 }}\n"),
    ] {
        let errors = parsed_alike(&path, &broken, &mut cache).unwrap_err();
        assert!(errors.0.iter().all(|e| e.position.is_some()), "{errors}");
        assert!(errors.to_string().contains("route["), "{errors}");
    }
    let back = ok(&text, &mut cache);
    // Each reload after one that failed validates every route again, then reuses them.
    let after = ok(&text.replace("body = \"b3\"", "body = \"b4\""), &mut cache);
    assert!(reused(&back, &after, "a.example/"));

    // The file a route's `tls` names changes under the same text: read again, it fails.
    std::fs::write(dir.path().join("ca.pem"), "not a certificate").unwrap();
    let errors = parsed_alike(&path, &text, &mut cache).unwrap_err();
    assert!(errors.to_string().contains(".tls.ca"), "{errors}");
}
