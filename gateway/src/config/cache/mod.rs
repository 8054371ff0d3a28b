//! A parse cache for `[[route]]` sections, held by the reloader between reloads, so a
//! reload of a large file parses only the sections that changed.
//!
//! `toml` spends most of a large file's parse on its thousands of `[[route]]` sections,
//! which a reload rarely changes. [`scan`] finds the sections; those whose exact text was
//! parsed before are blanked out (their bytes replaced by spaces, so every byte offset,
//! hence every span and every error's line:column, stays a file offset) and the rest of
//! the file is parsed in place. The cached raw routes go back in file order, their spans
//! shifted by how far their section moved. The result is the same `RawConfig` a whole-file
//! parse gives, and it is validated the same way.
//!
//! Any doubt parses the whole file instead: a route the scanner cannot place, a count that
//! does not match, any TOML or validation error (so errors read exactly as without the
//! cache).
//!
//! Next to each raw route the cache keeps the route it validated into, when validating it
//! read nothing but the route's own text and the [`RouteContext`] (default timeouts, the
//! listener and tenant names, the config's folder): not when it names upstream `tls`,
//! whose files on disk may change with no change to the config. The next file validated
//! under an equal context takes those as they are, and checks only what spans routes
//! (duplicates, route names) again.

mod scan;

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::error::ConfigErrors;
use super::load::{parse_toml, read_source, validate};
use super::model::{Config, RouteConfig};
use super::raw::{RawConfig, RawRoute, Shift};
use super::validate::{Prior, RouteContext};

/// The raw `[[route]]` sections of the last file parsed, by their exact text.
#[derive(Default)]
pub struct ParseCache {
    routes: HashMap<String, Cached, foldhash::fast::RandomState>,
    /// What the validated routes in `routes` were validated in.
    context: Option<RouteContext>,
}

/// A section's raw route with spans as parsed, when the section started at byte `at`, and
/// the route it validated into if that can be reused (see the module doc).
struct Cached {
    at: usize,
    route: Box<RawRoute>,
    valid: Option<Arc<RouteConfig>>,
}

/// Per raw route of a file, the validated route the cache holds for it.
type Validated = Vec<Option<Arc<RouteConfig>>>;

/// One `[[route]]` section of the file being parsed: its text and route taken from the
/// cache, or `None` when it is to be parsed.
type Slot = Option<(String, Cached)>;

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ParseCache({} routes)", self.routes.len())
    }
}

impl ParseCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many route sections are cached.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The raw config of `source` with the cached sections reused, each section's text and
    /// validated route (if cached), or `None` (the cache left as it was) if `toml` rejects
    /// the rest or the sections do not add up.
    fn reuse(
        &mut self,
        source: &str,
        sections: &[Range<usize>],
    ) -> Option<(RawConfig, Vec<String>, Validated)> {
        let mut slots = Vec::with_capacity(sections.len());
        let mut blanked: Option<Vec<u8>> = None;
        for range in sections {
            match self.routes.remove_entry(&source[range.clone()]) {
                Some((text, cached)) => {
                    let bytes = blanked.get_or_insert_with(|| source.as_bytes().to_vec());
                    bytes[range.clone()].fill(b' ');
                    slots.push(Some((text, cached)));
                }
                None => slots.push(None),
            }
        }
        let parsed = match &blanked {
            // Spaces in place of whole lines of UTF-8 leave UTF-8.
            Some(bytes) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|rest| toml::from_str::<RawConfig>(rest).ok()),
            None => toml::from_str::<RawConfig>(source).ok(),
        };
        let fresh_count = slots.iter().filter(|s| s.is_none()).count();
        let mut raw = match parsed {
            Some(raw) if raw.routes.len() == fresh_count => raw,
            _ => {
                self.restore(slots);
                return None;
            }
        };
        let mut fresh = std::mem::take(&mut raw.routes).into_iter();
        let mut texts = Vec::with_capacity(sections.len());
        let mut valid = Vec::with_capacity(sections.len());
        for (slot, range) in slots.into_iter().zip(sections) {
            let route = match slot {
                Some((text, cached)) => {
                    texts.push(text);
                    valid.push(cached.valid);
                    let delta = range.start as isize - cached.at as isize;
                    if delta == 0 {
                        cached.route
                    } else {
                        cached.route.shift(delta)
                    }
                }
                None => {
                    texts.push(source[range.clone()].to_owned());
                    valid.push(None);
                    // Counted above: there is one fresh route per fresh slot.
                    fresh.next()?
                }
            };
            raw.routes.push(route);
        }
        Some((raw, texts, valid))
    }

    /// Puts back the sections `reuse` took out when it gives up.
    fn restore(&mut self, slots: Vec<Slot>) {
        for (text, cached) in slots.into_iter().flatten() {
            self.routes.insert(text, cached);
        }
    }

    /// Caches `routes`, the routes of the file whose sections are `sections` and whose
    /// texts are `texts`, in place of everything cached before, with the validated routes
    /// `valid` (one per route, or none at all) validated in `context`.
    #[allow(clippy::vec_box, reason = "the routes of a RawConfig, kept boxed")]
    fn fill(
        &mut self,
        texts: Vec<String>,
        sections: &[Range<usize>],
        routes: Vec<Box<RawRoute>>,
        valid: Validated,
        context: Option<RouteContext>,
    ) {
        self.routes.clear();
        self.routes.reserve(routes.len());
        let mut valid = valid.into_iter();
        for ((text, range), route) in texts.into_iter().zip(sections).zip(routes) {
            self.routes.insert(
                text,
                Cached {
                    at: range.start,
                    route,
                    valid: valid.next().flatten(),
                },
            );
        }
        self.context = context;
    }

    /// Forgets everything.
    fn clear(&mut self) {
        self.routes.clear();
        self.context = None;
    }
}

/// Per route of `raw`, the route `config` (its validation) holds for it, where a later
/// file may reuse it: every route of a valid config, in order, except those with upstream
/// `tls`, whose files may change under the same text. Nothing when `config` is invalid.
fn reusable(raw: &RawConfig, config: &Result<Config, ConfigErrors>) -> Validated {
    match config {
        Ok(c) if c.routes.len() == raw.routes.len() => raw
            .routes
            .iter()
            .zip(&c.routes)
            .map(|(r, valid)| r.tls.is_none().then(|| valid.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

impl Config {
    /// [`Config::load`] through `cache`: the reloader's way to read the file.
    pub fn load_cached(path: &Path, cache: &mut ParseCache) -> Result<Config, ConfigErrors> {
        Self::parse_cached(path, &read_source(path)?, cache)
    }

    /// [`Config::parse`], reusing the `[[route]]` sections `cache` holds from the last
    /// file and leaving this file's sections there for the next one. The result, errors
    /// included, is the same as `parse`'s.
    pub fn parse_cached(
        path: &Path,
        source: &str,
        cache: &mut ParseCache,
    ) -> Result<Config, ConfigErrors> {
        let Some(sections) = scan::route_sections(source) else {
            cache.clear();
            return Self::parse(path, source);
        };
        if !cache.is_empty()
            && let Some((raw, texts, valid)) = cache.reuse(source, &sections)
        {
            let context = cache.context.take();
            let prior = context.as_ref().map(|context| Prior {
                context,
                routes: &valid,
            });
            let (config, context) = validate(path, source, &raw, prior);
            // The raw routes are right whatever validation says of them: keep them.
            let valid = reusable(&raw, &config);
            cache.fill(texts, &sections, raw.routes, valid, Some(context));
            if config.is_ok() {
                return config;
            }
        }
        let raw = parse_toml(path, source)?;
        let (config, context) = validate(path, source, &raw, None);
        if raw.routes.len() == sections.len() {
            let texts = sections
                .iter()
                .map(|r| source[r.clone()].to_owned())
                .collect();
            let valid = reusable(&raw, &config);
            cache.fill(texts, &sections, raw.routes, valid, Some(context));
        } else {
            cache.clear();
        }
        config
    }
}

#[cfg(test)]
mod tests;
