//! The config file, parsed once into types.
//!
//! `load` reads TOML (`raw`), checks its meaning (`validate`) and loads every file it names
//! (certificates, keys) into a typed [`Config`] (`model`); every problem is reported with
//! its key and line:column, all at once. Code past this module never sees a raw string
//! that should have been a type. This module builds nothing that serves traffic: that is
//! `snapshot`.
//!
//! Layers, each importing only those below it: `load` and `cache` (the entry points) ->
//! `validate` -> `raw` -> `model`, with `error` beside them. The model imports nothing
//! from `config`; raw imports from the model only the values it deserializes straight into
//! (enums, units). This file only re-exports.

mod cache;
mod error;
mod load;
mod model;
mod raw;
#[cfg(test)]
mod tests;
mod validate;

pub use cache::ParseCache;
pub use error::{ConfigError, ConfigErrors};
pub use model::units::{ByteRate, HumanDuration, RateLimit};
pub use model::*;
pub use validate::certified_key_from_pem;
