//! Compiled components, once per content: an in-memory cache keyed by the sha256 of a
//! component's bytes, held weakly by the hooks alive, and an optional disk cache of
//! compiled artifacts shared across processes (`LEAFGATE_PLUGIN_CACHE`).
//!
//! Owns compiling and the one `unsafe` of the plugin runtime (loading a cached artifact).
//! Does not know worlds or instances: fitting a component to a world is `engine`'s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Names a directory for compiled plugin artifacts, reused across processes.
pub const CACHE_ENV: &str = "LEAFGATE_PLUGIN_CACHE";

/// A compiled component, shared by every hook that loads the same bytes. Keep it alive as
/// long as anything instantiates from it: the compile cache only points at it.
pub(crate) struct Compiled(Component);

impl std::ops::Deref for Compiled {
    type Target = Component;
    fn deref(&self) -> &Component {
        &self.0
    }
}

/// The process-wide compile cache.
#[derive(Default)]
pub(crate) struct CompileCache {
    /// Compiled components by sha256 of their bytes: a reload that names the same files
    /// compiles nothing. Held weakly: the hooks of the snapshots alive own them, and an
    /// entry no snapshot references any more is gone (its code freed) and pruned.
    compiled: Mutex<HashMap<[u8; 32], Weak<Compiled>>>,
    /// How many times each content was built (compiled or read from the disk cache)
    /// rather than found alive: what a reload costs, for tests and diagnostics.
    builds: Mutex<HashMap<[u8; 32], u64>>,
    /// One lock per content being built, so loads racing on the same new bytes (a reload
    /// and `leafgate check`, tenants sharing a plugin) compile it once, not once each.
    building: Mutex<HashMap<[u8; 32], Arc<Mutex<()>>>>,
}

impl CompileCache {
    /// Compiles `bytes` once per content; later calls with the same bytes share the result.
    /// With `LEAFGATE_PLUGIN_CACHE` set to a directory, compiled artifacts are also kept
    /// there across processes (restarts, `leafgate plugin run`, test runs).
    pub fn compile(&self, engine: &Engine, bytes: &[u8]) -> Result<Arc<Compiled>, String> {
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        let alive = || {
            self.compiled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&hash)
                .and_then(Weak::upgrade)
        };
        if let Some(c) = alive() {
            return Ok(c);
        }
        // Compiling takes long (milliseconds to seconds): done outside the cache's lock,
        // under this content's own, so a racing load waits and then finds the result.
        let slot = self
            .building
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(hash)
            .or_default()
            .clone();
        let result = {
            let _building = slot.lock().unwrap_or_else(PoisonError::into_inner);
            self.build(engine, hash, bytes, alive)
        };
        drop(slot);
        // Locks nobody holds or waits on any more go.
        self.building
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, s| Arc::strong_count(s) > 1);
        result
    }

    /// Builds (or finds, if a racing load just built it) the component of `bytes`.
    fn build(
        &self,
        engine: &Engine,
        hash: [u8; 32],
        bytes: &[u8],
        alive: impl Fn() -> Option<Arc<Compiled>>,
    ) -> Result<Arc<Compiled>, String> {
        if let Some(c) = alive() {
            return Ok(c);
        }
        let disk = std::env::var_os(CACHE_ENV).map(|dir| artifact_path(engine, &dir, &hash));
        let cached = disk
            .as_deref()
            .filter(|p| p.is_file())
            .and_then(|p| load_artifact(engine, p));
        let component = match cached {
            Some(c) => c,
            None => {
                let c = Component::from_binary(engine, bytes).map_err(|e| {
                    format!("not a WebAssembly component leafgate can compile: {e:#} (build it with `cargo build --target wasm32-wasip2`)")
                })?;
                if let Some(path) = &disk {
                    store_artifact(path, &c);
                }
                c
            }
        };
        *self
            .builds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(hash)
            .or_default() += 1;
        let compiled = Arc::new(Compiled(component));
        let mut cache = self.compiled.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|_, c| c.strong_count() > 0);
        cache.insert(hash, Arc::downgrade(&compiled));
        Ok(compiled)
    }

    /// True if a component compiled from `bytes` is still alive (referenced by a hook of
    /// a live snapshot), so loading the same bytes again compiles nothing.
    pub fn is_cached(&self, bytes: &[u8]) -> bool {
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        self.compiled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&hash)
            .is_some_and(|c| c.strong_count() > 0)
    }

    /// How many times a component was built from `bytes` in this process.
    pub fn builds_of(&self, bytes: &[u8]) -> u64 {
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        self.builds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&hash)
            .copied()
            .unwrap_or(0)
    }
}

/// Where the compiled artifact of the content `hash` lives in the cache directory `dir`:
/// named by the content and by the engine's compatibility hash, so an artifact compiled
/// with another configuration or wasmtime is never even opened.
fn artifact_path(engine: &Engine, dir: &std::ffi::OsStr, hash: &[u8; 32]) -> PathBuf {
    let mut h = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut h);
    let name: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    Path::new(dir).join(format!(
        "{name}-{:016x}.cwasm",
        std::hash::Hasher::finish(&h)
    ))
}

/// Loads a compiled artifact from the disk cache; `None` (recompile) if it does not load.
#[allow(
    unsafe_code,
    reason = "wasmtime can only load precompiled code unsafely; the cache holds only what this engine wrote"
)]
fn load_artifact(engine: &Engine, path: &Path) -> Option<Component> {
    // SAFETY: deserializing runs native code from the file. The cache directory
    // holds only what this module wrote (`serialize` of a component compiled by
    // this same engine configuration, keyed by its hash); whoever sets
    // LEAFGATE_PLUGIN_CACHE vouches for that directory like for the binary itself.
    // A stale or foreign file fails wasmtime's header checks and is recompiled.
    unsafe { Component::deserialize_file(engine, path) }.ok()
}

/// Writes a compiled artifact atomically (temp file + rename); a cache that cannot be
/// written is only slower, so failures are logged, not returned.
fn store_artifact(path: &Path, component: &Component) {
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let bytes = component.serialize()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    })();
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the plugin cache");
    }
}
