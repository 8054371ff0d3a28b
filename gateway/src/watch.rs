//! Reloads the gateway when the config file, or any file it names (certificates, keys,
//! plugins), changes on disk.
//!
//! Folders are watched rather than files: editors and `kubectl` ConfigMap mounts replace a
//! file by renaming a new one over it, which a watch on the old inode would miss. Events
//! for files the config does not name are ignored. A burst of events (an editor writing in
//! several steps) is debounced: the reload starts once no event arrived for [`QUIET`].
//! After every reload the watched set is recomputed from the snapshot now serving.
//! This module decides when to reload, never what a reload does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::gateway::Gateway;

/// How long the files must be quiet before a reload starts.
pub const QUIET: Duration = Duration::from_millis(25);

/// Watches until `stop` is cancelled. Fails only if the platform's watcher cannot start.
pub fn spawn(gateway: Arc<Gateway>, stop: CancellationToken) -> notify::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            for path in event.paths {
                let _ = tx.send(path);
            }
        }
    })?;
    let mut watched = Watched::default();
    watched.update(&mut watcher, &gateway);

    tokio::spawn(async move {
        loop {
            let first = tokio::select! {
                _ = stop.cancelled() => break,
                p = rx.recv() => match p { Some(p) => p, None => break },
            };
            let mut relevant = watched.names(&first);
            // Debounce: keep draining until the files have been quiet for QUIET.
            while let Ok(Some(p)) = tokio::time::timeout(QUIET, rx.recv()).await {
                relevant |= watched.names(&p);
            }
            if !relevant {
                continue;
            }
            debug!("watched files changed; reloading");
            // The outcome is logged and recorded by `reload` itself.
            let _ = gateway.reload().await;
            watched.update(&mut watcher, &gateway);
        }
    });
    Ok(())
}

#[derive(Default)]
struct Watched {
    files: BTreeSet<PathBuf>,
    dirs: BTreeSet<PathBuf>,
}

impl Watched {
    fn names(&self, path: &Path) -> bool {
        self.files.contains(path) || self.files.contains(&absolute(path))
    }

    /// Watches the folders of the config file and of every file the serving config names.
    fn update(&mut self, watcher: &mut RecommendedWatcher, gateway: &Gateway) {
        let snapshot = gateway.snapshot();
        let mut files: BTreeSet<PathBuf> =
            snapshot.config.files.iter().map(|f| absolute(f)).collect();
        files.insert(absolute(gateway.config_path()));
        let dirs: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();
        for gone in self.dirs.difference(&dirs) {
            let _ = watcher.unwatch(gone);
        }
        for new in dirs.difference(&self.dirs) {
            if let Err(e) = watcher.watch(new, RecursiveMode::NonRecursive) {
                warn!(dir = %new.display(), error = %e, "cannot watch a config folder; use SIGHUP or POST /reload");
            }
        }
        self.files = files;
        self.dirs = dirs;
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
