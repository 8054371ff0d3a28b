//! The config file, parsed once into types.
//!
//! `load` reads TOML (`raw`), checks its meaning and loads every file it names
//! (certificates, keys) into a typed [`Config`]; every problem is reported with its key and
//! line:column, all at once. Code past this module never sees a raw string that should have
//! been a type. This module builds nothing that serves traffic: that is `snapshot`.

mod cache;
pub mod cidr;
mod error;
mod kubeconfig;
mod kubernetes;
mod model;
mod pem;
pub mod plugins;
mod raw;
pub mod units;
mod validate;

use std::collections::BTreeSet;
use std::path::Path;

pub use cache::ParseCache;
pub use error::{ConfigError, ConfigErrors};
pub use kubernetes::{
    DEFAULT_INGRESS_CLASS, ElectionTimings, IngressConfig, KubernetesConfig, NodeAddressType,
    PublishAddress, Taint, VirtualNodeConfig, VirtualNodeKind,
};
pub use model::*;
pub use pem::certified_key_from_pem;
pub use raw::{ListenerKind, UpstreamProtocol};
pub use units::{ByteRate, ByteSize, HumanDuration, RateLimit};

use error::Reporter;
use raw::RawConfig;
use validate::{Prior, RouteContext, Validator};

/// The config file's text, or the error that says it cannot be read.
fn read_source(path: &Path) -> Result<String, ConfigErrors> {
    std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_path_buf(),
            position: None,
            key: String::new(),
            message: format!("cannot read the config file: {e}"),
        }])
    })
}

impl Config {
    /// Reads, parses and validates the config file, loading every file it names.
    pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
        Self::parse(path, &read_source(path)?)
    }

    /// Parses and validates `source`; relative paths in it resolve against `path`'s folder.
    pub fn parse(path: &Path, source: &str) -> Result<Config, ConfigErrors> {
        let raw = parse_toml(path, source)?;
        validate(path, source, &raw, None).0
    }
}

/// The file as written, or its TOML error (with key and line:column).
fn parse_toml(path: &Path, source: &str) -> Result<RawConfig, ConfigErrors> {
    toml::from_str(source).map_err(|e| {
        let mut report = Reporter::new(path, source);
        report.toml(&e);
        ConfigErrors(report.errors)
    })
}

/// Checks `raw`, parsed from `source`, into a [`Config`]; every error at once. Routes in
/// `prior` are taken as validated when their context is this file's; the context is
/// returned for the next reload.
fn validate(
    path: &Path,
    source: &str,
    raw: &RawConfig,
    prior: Option<Prior<'_>>,
) -> (Result<Config, ConfigErrors>, RouteContext) {
    let mut report = Reporter::new(path, source);
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let (config, context) = Validator {
        report: &mut report,
        base: &base,
        files: BTreeSet::new(),
    }
    .config(path, raw, prior);
    let config = if report.errors.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(report.errors))
    };
    (config, context)
}

#[cfg(test)]
mod tests {
    use super::validate::parse_backend;
    use super::*;
    use std::time::Duration;

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
        let e =
            first_error("[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\nbandwidth = \"fast\"\n");
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
    fn backends() {
        assert_eq!(
            parse_backend("https://h:443").unwrap().to_string(),
            "https://h:443"
        );
        assert!(!parse_backend("127.0.0.1:80").unwrap().tls);
        assert!(parse_backend("h").is_err());
        assert!(parse_backend("http://h:1/path").is_err());
    }
}
