//! The cached parse against the whole-file parse, after each of a series of edits.

use super::*;

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
    let (raw, texts) = cache.reuse(source, &sections).expect("the cached parse");
    let got = format!("{raw:#?}");
    cache.fill(texts, &sections, raw.routes);
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
    cache.fill(texts, &sections, raw.routes);
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
