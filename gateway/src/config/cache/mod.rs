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
//! cache). The cache holds raw routes only, never validated ones: what a route means
//! depends on the rest of the file (tenants, listeners, files on disk).

mod scan;

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use super::raw::{RawConfig, RawRoute, Shift};
use super::{Config, ConfigErrors, parse_toml, read_source, validate};

/// The raw `[[route]]` sections of the last file parsed, by their exact text.
#[derive(Default)]
pub struct ParseCache {
    routes: HashMap<String, Cached, foldhash::fast::RandomState>,
}

/// A section's raw route with spans as parsed, when the section started at byte `at`.
struct Cached {
    at: usize,
    route: Box<RawRoute>,
}

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

    /// The raw config of `source` with the cached sections reused, or `None` (the cache
    /// left as it was) if `toml` rejects the rest or the sections do not add up.
    fn reuse(
        &mut self,
        source: &str,
        sections: &[Range<usize>],
    ) -> Option<(RawConfig, Vec<String>)> {
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
        for (slot, range) in slots.into_iter().zip(sections) {
            let route = match slot {
                Some((text, cached)) => {
                    texts.push(text);
                    let delta = range.start as isize - cached.at as isize;
                    if delta == 0 {
                        cached.route
                    } else {
                        cached.route.shift(delta)
                    }
                }
                None => {
                    texts.push(source[range.clone()].to_owned());
                    // Counted above: there is one fresh route per fresh slot.
                    fresh.next()?
                }
            };
            raw.routes.push(route);
        }
        Some((raw, texts))
    }

    /// Puts back the sections `reuse` took out when it gives up.
    fn restore(&mut self, slots: Vec<Slot>) {
        for (text, cached) in slots.into_iter().flatten() {
            self.routes.insert(text, cached);
        }
    }

    /// Caches `routes`, the routes of the file whose sections are `sections` and whose
    /// texts are `texts`, in place of everything cached before.
    #[allow(clippy::vec_box, reason = "the routes of a RawConfig, kept boxed")]
    fn fill(&mut self, texts: Vec<String>, sections: &[Range<usize>], routes: Vec<Box<RawRoute>>) {
        self.routes.clear();
        self.routes.reserve(routes.len());
        for ((text, range), route) in texts.into_iter().zip(sections).zip(routes) {
            self.routes.insert(
                text,
                Cached {
                    at: range.start,
                    route,
                },
            );
        }
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
            cache.routes.clear();
            return Self::parse(path, source);
        };
        if !cache.is_empty()
            && let Some((raw, texts)) = cache.reuse(source, &sections)
        {
            let config = validate(path, source, &raw);
            // The raw routes are right whatever validation says of them: keep them.
            cache.fill(texts, &sections, raw.routes);
            if config.is_ok() {
                return config;
            }
        }
        let raw = parse_toml(path, source)?;
        let config = validate(path, source, &raw);
        if raw.routes.len() == sections.len() {
            let texts = sections
                .iter()
                .map(|r| source[r.clone()].to_owned())
                .collect();
            cache.fill(texts, &sections, raw.routes);
        } else {
            cache.routes.clear();
        }
        config
    }
}

#[cfg(test)]
mod tests;
