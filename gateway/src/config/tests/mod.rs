//! Tests of the whole config path (`Config::parse`, `Config::load`): what a file says,
//! and the key and line:column of every error.

mod kubernetes;
mod load;
mod plugins;

use std::path::Path;
use std::time::Duration;

use super::{Concurrency, Config, ConfigErrors, HostPattern, Timeouts};

fn parse(src: &str) -> Result<Config, ConfigErrors> {
    Config::parse(Path::new("test.toml"), src)
}

fn errors(src: &str) -> String {
    parse(src).unwrap_err().to_string()
}

fn first_error(src: &str) -> String {
    parse(src).unwrap_err().0[0].to_string()
}

#[test]
fn host_patterns() {
    assert_eq!(
        HostPattern::parse("App.Example.com"),
        Ok(HostPattern::Exact("app.example.com".into()))
    );
    let w = HostPattern::parse("*.example.com").unwrap();
    assert!(w.matches("a.example.com") && w.matches("a.b.EXAMPLE.com"));
    assert!(!w.matches("example.com") && !w.matches("aexample.com"));
    assert!(HostPattern::parse("http://x").is_err());
    assert!(HostPattern::parse("x:80").is_err());
}

#[test]
fn ingress_wildcards_match_exactly_one_label() {
    let w = HostPattern::parse_ingress("*.Foo.com").unwrap();
    assert_eq!(w, HostPattern::WildcardLabel(".foo.com".into()));
    assert_eq!(w.to_string(), "*.foo.com");
    assert!(w.matches("bar.foo.com") && w.matches("BAR.FOO.com"));
    assert!(!w.matches("baz.bar.foo.com") && !w.matches("foo.com"));
    assert!(!w.matches(".foo.com") && !w.matches("barfoo.com"));
    assert_eq!(
        HostPattern::parse_ingress("App.Example"),
        Ok(HostPattern::Exact("app.example".into()))
    );
    assert!(HostPattern::parse_ingress("a b").is_err());
}

#[test]
fn a_minimal_config_validates() {
    let c = parse(
        "[admin]\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\
         [[route]]\nhost = \"*\"\ndirect = { status = 200, body = \"hi\" }\n\
         [[route]]\nhost = \"a.example\"\npath = \"/api\"\nbackends = [\"127.0.0.1:1\", \"http://localhost:2\"]\ntimeouts = { connect = \"1s\" }\n",
    )
    .unwrap();
    assert_eq!(c.routes.len(), 2);
    assert_eq!(c.routes[0].name, "*/");
    assert_eq!(c.routes[1].timeouts.connect, Duration::from_secs(1));
    assert_eq!(c.routes[1].timeouts.idle, Timeouts::default().idle);
}

#[test]
fn errors_name_the_key_and_position() {
    let e = first_error("[[listener]]\nname = \"a\"\nbind = \"127.0.0.1:0\"\nbogus = 1\n");
    assert!(e.starts_with("test.toml:4:1: listener[0].bogus: "), "{e}");
    let e = first_error("[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\nbandwidth = \"fast\"\n");
    assert!(e.starts_with("test.toml:4:13: route[0].bandwidth: "), "{e}");
    let e = first_error(
        "[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\n[[route]]\nhost = \"A\"\nbackends = [\"x:2\"]\n",
    );
    assert!(
        e.contains("5:8: route[1]: duplicate route") && e.contains("2:8"),
        "{e}"
    );
    let e = errors(
        "[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\n[[route]]\nhost = \"b\"\nbackends = [\"x:2\"]\n\
         [[route]]\nhost = \"A\"\nexact = \"/\"\nbackends = [\"x:3\"]\n[[route]]\nhost = \"a\"\npath = \"/\"\nbackends = [\"x:4\"]\n\
         [[route]]\nhost = \"a\"\npath = \"/\"\nbackends = [\"x:5\"]\n",
    );
    // Each duplicate points at the first of its host and path, not the last seen nor
    // one with an exact path.
    assert!(
        e.contains("13:8: route[3]: duplicate route") && e.contains("at 2:8"),
        "{e}"
    );
    assert!(
        e.contains("17:8: route[4]: duplicate route") && !e.contains("at 13:8"),
        "{e}"
    );
    let e = first_error("[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\ntenant = \"nobody\"\n");
    assert!(e.contains("4:10: route[0].tenant: no tenant"), "{e}");
    let e = first_error(
        "[[listener]]\nname = \"a\"\nbind = \"0.0.0.0:1\"\ntls = { cert = \"missing.pem\", key = \"k.pem\" }\n",
    );
    assert!(e.contains("4:16: listener[0].tls.cert: cannot read"), "{e}");
}

#[test]
fn validation_reports_every_error_at_once() {
    let errs = parse(
        "[[listener]]\nname = \"a\"\nbind = \"nowhere\"\n[[listener]]\nname = \"a\"\nbind = \"127.0.0.1:1\"\n\
         [[route]]\nhost = \"a b\"\nbackends = [\"ftp://x\"]\n",
    )
    .unwrap_err();
    let text = errs.to_string();
    assert_eq!(errs.0.len(), 4, "{text}");
    assert!(
        text.contains("listener[0].bind")
            && text.contains("listener[1].name: duplicate listener name")
    );
    assert!(text.contains("route[0].host") && text.contains("route[0].backends[0]"));
}

#[test]
fn routes_on_different_listeners_may_share_host_and_path() {
    let src = "[[listener]]\nname = \"a\"\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"b\"\nbind = \"127.0.0.1:0\"\n\
               [[route]]\nlisteners = [\"a\"]\nhost = \"x\"\nbackends = [\"x:1\"]\n[[route]]\nlisteners = [\"b\"]\nhost = \"x\"\nbackends = [\"x:1\"]\n";
    assert!(parse(src).is_ok());
}

#[test]
fn tenant_caps_default_and_refuse_zero_or_a_connection_above_the_total() {
    let c = parse("[[tenant]]\nname = \"a\"\n").unwrap();
    assert_eq!(c.tenants[0].concurrent, Concurrency::default());
    let c = parse(
        "[[tenant]]\nname = \"a\"\n[tenant.concurrent]\nwatches = { total = 3 }\nstreams = { total = 9, per_connection = 2 }\n",
    )
    .unwrap();
    let caps = c.tenants[0].concurrent;
    // A default per-connection cap above a lower total is the total.
    assert_eq!((caps.watches.total, caps.watches.per_connection), (3, 3));
    assert_eq!((caps.streams.total, caps.streams.per_connection), (9, 2));
    assert_eq!(caps.log_follows, Concurrency::default().log_follows);
    let e =
        first_error("[[tenant]]\nname = \"a\"\n[tenant.concurrent]\nlog_follows = { total = 0 }\n");
    assert!(
        e.starts_with("test.toml:4:25: tenant[0].concurrent.log_follows.total: must be a count"),
        "{e}"
    );
    let e = first_error(
        "[[tenant]]\nname = \"a\"\n[tenant.concurrent]\nwatches = { total = 2, per_connection = 5 }\n",
    );
    assert!(
        e.starts_with("test.toml:4:41: tenant[0].concurrent.watches.per_connection: 5 is above"),
        "{e}"
    );
    let e = first_error("[[tenant]]\nname = \"a\"\n[tenant.concurrent]\nexecs = {}\n");
    assert!(e.contains("4:1: tenant[0].concurrent.execs"), "{e}");
}

#[test]
fn tenant_resources_default_add_secrets_and_refuse_unknown_entries_at_their_place() {
    use super::kinds;
    let c = parse("[[tenant]]\nname = \"a\"\n").unwrap();
    assert_eq!(
        c.tenants[0].resources,
        kinds::DEFAULT.iter().collect::<Vec<_>>()
    );
    assert!(!c.tenants[0].serves(&kinds::SECRETS));
    let c =
        parse("[[tenant]]\nname = \"a\"\nresources = [\"default\", \"secrets\", \"services\"]\n")
            .unwrap();
    assert_eq!(c.tenants[0].resources.len(), 20, "services once");
    assert!(c.tenants[0].serves(&kinds::SECRETS));
    let c = parse("[[tenant]]\nname = \"a\"\nresources = [\"deployments.apps\"]\n").unwrap();
    assert_eq!(c.tenants[0].resources, [&kinds::DEPLOYMENTS]);
    assert!(!c.tenants[0].serves(&kinds::SERVICES));
    let e = first_error("[[tenant]]\nname = \"a\"\nresources = [\"default\", \"deployments\"]\n");
    assert!(
        e.starts_with("test.toml:3:25: tenant[0].resources[1]: `deployments` is no resource leafgate serves (did you mean `deployments.apps`?)"),
        "{e}"
    );
    let e = first_error("[[tenant]]\nname = \"a\"\nresources = \"secrets\"\n");
    assert!(e.contains("3:13"), "{e}");
}

#[test]
fn tenant_custom_resources_are_named_once_and_bad_shapes_refused_at_their_place() {
    use super::kinds::{self, CustomResource};
    let c = parse(
        "[[tenant]]\nname = \"a\"\nresources = [\"default\", \"crontabs.stable.example.com\", \"crontabs.stable.example.com\"]\n",
    )
    .unwrap();
    assert_eq!(c.tenants[0].resources.len(), 19);
    let crontabs = CustomResource {
        resource: "crontabs".into(),
        group: "stable.example.com".into(),
    };
    assert_eq!(c.tenants[0].custom, [crontabs]);
    let v1 = kinds::custom_gvr("stable.example.com", "v1", "crontabs", "CronTab");
    assert!(c.tenants[0].serves(v1));
    let other = kinds::custom_gvr("other.example.com", "v1", "crontabs", "CronTab");
    assert!(!c.tenants[0].serves(other));
    assert!(
        parse("[[tenant]]\nname = \"a\"\n").unwrap().tenants[0]
            .custom
            .is_empty()
    );
    for (entry, words) in [
        (
            "crontabs.example",
            "`example` is no custom resource's group",
        ),
        (
            "CronTabs.stable.example.com",
            "`CronTabs` is no custom resource's plural",
        ),
        (
            "crontabs.stable_example.com",
            "`stable_example.com` is no custom resource's group",
        ),
        (
            "widgets.storage.k8s.io",
            "`storage.k8s.io` is one of Kubernetes' own groups",
        ),
    ] {
        let e = first_error(&format!(
            "[[tenant]]\nname = \"a\"\nresources = [\"default\", \"{entry}\"]\n"
        ));
        assert!(
            e.starts_with(&format!(
                "test.toml:3:25: tenant[0].resources[1]: `{entry}` is no resource leafgate serves"
            )),
            "{e}"
        );
        assert!(e.contains(words), "{entry}: {e}");
    }
}

#[test]
fn tenant_hosts_are_host_patterns_and_overlaps_between_tenants_are_warnings() {
    let c = parse("[[tenant]]\nname = \"a\"\n").unwrap();
    assert_eq!(c.tenants[0].hosts, None, "absent: no restriction");
    let c = parse(
        "[[tenant]]\nname = \"a\"\nnamespaces = [\"a\"]\nhosts = [\"A.example.com\", \"*.a.example.com\"]\n[[tenant]]\nname = \"b\"\nnamespaces = [\"b\"]\nhosts = [\"b.example.com\", \"x.a.example.com\"]\n",
    )
    .unwrap();
    assert_eq!(
        c.tenants[0].hosts,
        Some(vec![
            HostPattern::Exact("a.example.com".into()),
            HostPattern::Wildcard(".a.example.com".into()),
        ])
    );
    assert_eq!(
        c.warnings,
        [
            "test.toml:8:27: tenant[1].hosts[1]: `x.a.example.com` overlaps tenant `a`'s `*.a.example.com`: a name both match goes to whichever tenant's Ingress names it first"
        ]
    );
    let e =
        first_error("[[tenant]]\nname = \"a\"\nhosts = [\"a.example\", \"https://b.example/\"]\n");
    assert!(
        e.starts_with(
            "test.toml:3:23: tenant[0].hosts[1]: `https://b.example/` is not a host name"
        ),
        "{e}"
    );
    let c = parse("[[tenant]]\nname = \"a\"\nhosts = []\n").unwrap();
    assert_eq!(c.tenants[0].hosts, Some(Vec::new()));
    assert!(
        c.warnings[0].starts_with("test.toml:3:9: tenant[0].hosts: an empty list lets the tenant's Ingresses claim no host"),
        "{:?}",
        c.warnings
    );
}
