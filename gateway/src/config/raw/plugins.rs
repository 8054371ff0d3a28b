//! The raw `[tenant.plugins]` table and its hooks, each a path or a table.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::config::model::plugins::{Isolation, OnError};
use crate::config::model::units::{ByteSize, HumanDuration};

/// The raw `[tenant.plugins]` table: a hook per world, and defaults for their limits.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTenantPlugins {
    pub pod_router: Option<Spanned<RawPlugin>>,
    pub address_rewriter: Option<Spanned<RawPlugin>>,
    pub log_filter: Option<Spanned<RawPlugin>>,
    pub table_formatter: Option<Spanned<RawPlugin>>,
    pub memory: Option<Spanned<ByteSize>>,
    pub deadline: Option<Spanned<HumanDuration>>,
    pub startup: Option<Spanned<HumanDuration>>,
    pub on_error: Option<OnError>,
    pub isolation: Option<Isolation>,
    pub max_calls: Option<Spanned<u64>>,
    pub instances: Option<Spanned<u64>>,
}

/// A hook: `"path.wasm"`, or `{ path, config, on_error, memory, deadline, startup,
/// isolation, max_calls }`.
#[derive(Debug, Default)]
pub struct RawPlugin {
    pub path: String,
    pub config: Option<toml::Value>,
    pub on_error: Option<OnError>,
    pub memory: Option<ByteSize>,
    pub deadline: Option<HumanDuration>,
    pub startup: Option<HumanDuration>,
    pub isolation: Option<Isolation>,
    pub max_calls: Option<u64>,
}

impl<'de> Deserialize<'de> for RawPlugin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            path: String,
            config: Option<toml::Value>,
            on_error: Option<OnError>,
            memory: Option<ByteSize>,
            deadline: Option<HumanDuration>,
            startup: Option<HumanDuration>,
            isolation: Option<Isolation>,
            max_calls: Option<u64>,
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPlugin;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a path to a .wasm component, or a table { path = \"...\", config = { ... } }",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPlugin, E> {
                Ok(RawPlugin {
                    path: v.to_string(),
                    ..RawPlugin::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawPlugin, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawPlugin {
                    path: t.path,
                    config: t.config,
                    on_error: t.on_error,
                    memory: t.memory,
                    deadline: t.deadline,
                    startup: t.startup,
                    isolation: t.isolation,
                    max_calls: t.max_calls,
                })
            }
        }
        deserializer.deserialize_any(V)
    }
}
