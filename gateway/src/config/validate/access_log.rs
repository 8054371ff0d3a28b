//! `[access_log]` and the listeners' `access_log` tables validated: each key a listener
//! leaves out is the top-level table's, each value checked where it is written (a
//! template's unknown field at its own line:column), an error in the top-level table
//! reported once.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use toml::Spanned;

use crate::config::model::{
    AccessLogConfig, AccessLogFormat, AccessLogPath, AccessLogs, TemplatePiece,
};
use crate::config::raw::{RawAccessLog, RawConfig};

use super::validator::Validator;

/// One table a key may come from: its place in the file, and whether its errors are
/// reported here (the top-level table's are reported once, with the default).
struct Layer<'r> {
    raw: &'r RawAccessLog,
    key: String,
    report: bool,
}

impl Validator<'_, '_> {
    /// The default access log and each listener's own.
    pub(super) fn access_logs(&mut self, raw: &RawConfig) -> AccessLogs {
        let global = raw.access_log.as_ref().map(|raw| Layer {
            raw,
            key: "access_log".into(),
            report: true,
        });
        let default = global
            .as_ref()
            .and_then(|g| self.access_log(&[g]))
            .map(Arc::new);
        let mut by_listener = BTreeMap::new();
        for (i, l) in raw.listeners.iter().enumerate() {
            let Some(own) = &l.access_log else { continue };
            let own = Layer {
                raw: own,
                key: format!("listener[{i}].access_log"),
                report: true,
            };
            let inherited = raw.access_log.as_ref().map(|raw| Layer {
                raw,
                key: "access_log".into(),
                report: false,
            });
            let layers: Vec<&Layer> = std::iter::once(&own).chain(inherited.as_ref()).collect();
            if let Some(config) = self.access_log(&layers) {
                by_listener.insert(l.name.get_ref().clone(), Arc::new(config));
            }
        }
        AccessLogs {
            default,
            by_listener,
        }
    }

    /// The access log `layers` say, the first one setting a key deciding it.
    fn access_log(&mut self, layers: &[&Layer<'_>]) -> Option<AccessLogConfig> {
        let before = self.report.errors.len();
        let first = |get: fn(&RawAccessLog) -> bool| layers.iter().copied().find(|l| get(l.raw));
        let template = first(|r| r.template.is_some());
        let format = match first(|r| r.format.is_some()) {
            Some(l) => self.format(l),
            None if template.is_some() => Some(AccessLogFormat::Template(Vec::new())),
            None => Some(AccessLogFormat::Json),
        };
        let format = match (format, template) {
            (Some(AccessLogFormat::Template(_)), Some(l)) => self.template(l),
            (Some(AccessLogFormat::Template(_)), None) => {
                let l = first(|r| r.format.is_some()).unwrap_or(layers[0]);
                let span = l.raw.format.as_ref().map(Spanned::span).unwrap_or(0..0);
                self.log_error(
                    l,
                    span,
                    "format",
                    "format = \"template\" needs a `template`, like \"{time} {client} {method} {path} {status} {duration_ms}\"".into(),
                );
                None
            }
            // A template inherited from `[access_log]` is not this listener's format's.
            (Some(f), Some(l)) if !l.report => Some(f),
            (Some(_), Some(l)) => {
                let span = l.raw.template.as_ref().map(Spanned::span).unwrap_or(0..0);
                self.log_error(
                    l,
                    span,
                    "template",
                    "a template is only read with format = \"template\"".into(),
                );
                None
            }
            (None, _) => None,
            (format, None) => format,
        };
        let path = match first(|r| r.path.is_some()) {
            Some(l) => self.log_path(l),
            None => Some(AccessLogPath::Stdout),
        };
        let sample = match first(|r| r.sample.is_some()) {
            Some(l) => self.sample(l),
            None => Some(1.0),
        };
        let exclude_paths = match first(|r| r.exclude_paths.is_some()) {
            Some(l) => self.exclude_paths(l),
            None => Vec::new(),
        };
        let query = first(|r| r.query.is_some())
            .and_then(|l| l.raw.query)
            .unwrap_or(false);
        if self.report.errors.len() != before {
            return None;
        }
        Some(AccessLogConfig {
            format: format?,
            path: path?,
            sample: sample?,
            exclude_paths,
            query,
        })
    }

    /// Reports an error at `span` under `layer`'s key, when the layer reports its own (an
    /// inherited key's error was reported with the top-level table, and fails the file).
    fn log_error(&mut self, layer: &Layer<'_>, span: Range<usize>, key: &str, message: String) {
        if layer.report {
            self.report
                .error(span, format!("{}.{key}", layer.key), message);
        }
    }

    fn format(&mut self, l: &Layer<'_>) -> Option<AccessLogFormat> {
        let f = l.raw.format.as_ref()?;
        match f.get_ref().as_str() {
            "json" => Some(AccessLogFormat::Json),
            "combined" => Some(AccessLogFormat::Combined),
            "template" => Some(AccessLogFormat::Template(Vec::new())),
            other => {
                self.log_error(
                    l,
                    f.span(),
                    "format",
                    format!(
                        "`{other}` is not a format: write \"json\", \"combined\" or \"template\""
                    ),
                );
                None
            }
        }
    }

    fn template(&mut self, l: &Layer<'_>) -> Option<AccessLogFormat> {
        let t = l.raw.template.as_ref()?;
        match TemplatePiece::parse_template(t.get_ref()) {
            Ok(pieces) => Some(AccessLogFormat::Template(pieces)),
            Err((at, why)) => {
                // Past the opening quote: the column of the field itself.
                let start = t.span().start + 1 + at;
                self.log_error(l, start..start + 1, "template", why);
                None
            }
        }
    }

    fn log_path(&mut self, l: &Layer<'_>) -> Option<AccessLogPath> {
        let p = l.raw.path.as_ref()?;
        match p.get_ref().as_str() {
            "stdout" => Some(AccessLogPath::Stdout),
            "" => {
                self.log_error(
                    l,
                    p.span(),
                    "path",
                    "an empty path: write \"stdout\" or a file".into(),
                );
                None
            }
            file => Some(AccessLogPath::File(self.base.join(Path::new(file)))),
        }
    }

    fn sample(&mut self, l: &Layer<'_>) -> Option<f64> {
        let s = l.raw.sample.as_ref()?;
        let v = *s.get_ref();
        if (0.0..=1.0).contains(&v) {
            Some(v)
        } else {
            self.log_error(
                l,
                s.span(),
                "sample",
                format!("{v} is not a share: write 0.0 to 1.0 (errors are always written)"),
            );
            None
        }
    }

    fn exclude_paths(&mut self, l: &Layer<'_>) -> Vec<String> {
        let Some(paths) = l.raw.exclude_paths.as_ref() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            let key = format!("{}.exclude_paths[{i}]", l.key);
            if l.report {
                out.extend(self.url_path(p, &key));
            } else {
                out.push(p.get_ref().clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::config::{AccessLogFormat, AccessLogPath, Config, LogField, TemplatePiece};

    const LISTENERS: &str = "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\
        [[listener]]\nname = \"api\"\nbind = \"127.0.0.1:0\"\n";

    fn parse(src: &str) -> Result<Config, String> {
        Config::parse(Path::new("/etc/leafgate/leafgate.toml"), src).map_err(|e| e.to_string())
    }

    #[test]
    fn no_table_writes_no_log() {
        let c = parse(LISTENERS).unwrap();
        assert!(!c.access_log.any());
    }

    #[test]
    fn a_listener_s_table_overrides_the_top_level_one_key_by_key() {
        let c = parse(&format!(
            "[access_log]\nformat = \"combined\"\npath = \"logs/access.log\"\nexclude_paths = [\"/healthz\"]\n\
             {LISTENERS}access_log = {{ format = \"template\", template = \"{{status}} {{path}}\", sample = 0.5 }}\n"
        ))
        .unwrap();
        let web = c.access_log.of("web").unwrap();
        assert_eq!(web.format, AccessLogFormat::Combined);
        assert_eq!(
            web.path,
            AccessLogPath::File(PathBuf::from("/etc/leafgate/logs/access.log"))
        );
        assert_eq!(web.sample, 1.0);
        assert!(!web.query);
        let api = c.access_log.of("api").unwrap();
        assert_eq!(
            api.format,
            AccessLogFormat::Template(vec![
                TemplatePiece::Field(LogField::Status),
                TemplatePiece::Text(" ".into()),
                TemplatePiece::Field(LogField::Path),
            ])
        );
        assert_eq!((api.sample, &api.path), (0.5, &web.path));
        assert_eq!(api.exclude_paths, ["/healthz"]);
        // A listener no table names (a Gateway API one) writes the top-level log.
        assert_eq!(c.access_log.of("gateway:10.0.0.1:80"), Some(web));
    }

    #[test]
    fn each_bad_value_is_an_error_at_its_line_and_column() {
        let e = parse(&format!(
            "[access_log]\nformat = \"template\"\ntemplate = \"{{time}} {{nope}}\"\n{LISTENERS}"
        ))
        .unwrap_err();
        assert!(
            e.starts_with(
                "/etc/leafgate/leafgate.toml:3:20: access_log.template: `{nope}` is not a field"
            ),
            "{e}"
        );
        for (bad, want) in [
            (
                "format = \"xml\"",
                "2:10: access_log.format: `xml` is not a format",
            ),
            (
                "sample = 1.5",
                "2:10: access_log.sample: 1.5 is not a share",
            ),
            (
                "format = \"template\"",
                "2:10: access_log.format: format = \"template\" needs a `template`",
            ),
            (
                "template = \"{status\"",
                "2:13: access_log.template: a `{` that no `}` closes",
            ),
            (
                "format = \"json\"\ntemplate = \"{status}\"",
                "3:12: access_log.template: a template is only read",
            ),
            (
                "exclude_paths = [\"healthz\"]",
                "2:18: access_log.exclude_paths[0]: `healthz` is not a path",
            ),
            ("path = \"\"", "2:8: access_log.path: an empty path"),
            (
                "colour = \"red\"",
                "2:1: access_log.colour: unknown field `colour`",
            ),
        ] {
            let e = parse(&format!("[access_log]\n{bad}\n{LISTENERS}")).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{bad}: {e}");
        }
        // An error of the top-level table is reported once, not again for the listener
        // that inherits it.
        let e = parse(&format!(
            "[access_log]\nsample = 2.0\n{LISTENERS}access_log = {{ format = \"combined\" }}\n"
        ))
        .unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = parse(&format!("{LISTENERS}access_log = {{ sample = -1.0 }}\n")).unwrap_err();
        assert!(e.contains("listener[1].access_log.sample"), "{e}");
    }
}
