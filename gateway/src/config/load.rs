//! Loading a config file: read, parse (`raw`), validate into the typed [`Config`]. The
//! entry points ([`Config::load`], [`Config::parse`]) sit here, above every layer they
//! drive; the reloader's parse cache uses the same steps.

use std::collections::BTreeSet;
use std::path::Path;

use super::error::{ConfigError, ConfigErrors, Reporter};
use super::model::Config;
use super::raw::RawConfig;
use super::validate::{Prior, RouteContext, Validator};

/// The config file's text, or the error that says it cannot be read.
pub(super) fn read_source(path: &Path) -> Result<String, ConfigErrors> {
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
pub(super) fn parse_toml(path: &Path, source: &str) -> Result<RawConfig, ConfigErrors> {
    toml::from_str(source).map_err(|e| {
        let mut report = Reporter::new(path, source);
        report.toml(&e);
        ConfigErrors(report.errors)
    })
}

/// Checks `raw`, parsed from `source`, into a [`Config`]; every error at once. Routes in
/// `prior` are taken as validated when their context is this file's; the context is
/// returned for the next reload.
pub(super) fn validate(
    path: &Path,
    source: &str,
    raw: &RawConfig,
    prior: Option<Prior<'_>>,
) -> (Result<Config, ConfigErrors>, RouteContext) {
    let mut report = Reporter::new(path, source);
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let (mut config, context) = Validator {
        report: &mut report,
        base: &base,
        files: BTreeSet::new(),
    }
    .config(path, raw, prior);
    config.warnings = report.warnings.iter().map(ToString::to_string).collect();
    let config = if report.errors.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(report.errors))
    };
    (config, context)
}
