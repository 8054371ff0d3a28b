//! Reloads the gateway when the config file, or any file it names (certificates, keys,
//! plugins), changes on disk.
//!
//! Folders are watched rather than files, and so are their parents: editors rename a new
//! file over the old one, Kubernetes ConfigMap and Secret volumes swap a `..data` symlink
//! (the file is `config.toml -> ..data/config.toml`), and some tools replace the whole
//! folder; a watch on the old inode would miss all three. An event counts when it is in
//! the folder of a named file (any name: the `..data` swap never names the file itself) or
//! names that folder (replaced). A burst of events is debounced: the batch closes once no
//! event arrived for [`QUIET`], and never later than [`MAX_WAIT`] after its first event, so
//! a busy neighbour in the same folder cannot delay a reload forever. The files of the
//! touched folders are then hashed (through symlinks) and compared with the last hashes
//! seen: an event that changed nothing starts no reload. After every batch the touched
//! folders are watched again (a replaced folder is a new inode), and after every reload the
//! watched set is recomputed from the snapshot now serving.
//! This module decides when to reload, never what a reload does.
//!
//! `notify-debouncer-full` is not used: its batches close only after a quiet period per
//! file and it has no notion of content, so the two properties this module needs (a bounded
//! wait under a steady stream of neighbour events, no rebuild for unchanged content) would
//! be layered on top of it anyway; resolving the `..data` rename it tracks by file id is
//! what hashing through the symlink already does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::control::Control;

/// How long the files must be quiet before a batch of events closes.
pub const QUIET: Duration = Duration::from_millis(25);

/// The longest a batch stays open after its first event, however busy the folder is.
pub const MAX_WAIT: Duration = Duration::from_millis(200);

/// A file's content hash; `None` when it cannot be read (gone between two swaps).
type Hash = Option<[u8; 32]>;

/// Watches until `stop` is cancelled. Fails only if the platform's watcher cannot start.
pub fn spawn(gateway: Arc<dyn Control>, stop: CancellationToken) -> notify::Result<()> {
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
    watched.update(&mut watcher, &*gateway);
    watched.hashes = hash_files(watched.files.iter().cloned().collect())
        .into_iter()
        .collect();

    tokio::spawn(async move {
        loop {
            let first = tokio::select! {
                _ = stop.cancelled() => break,
                p = rx.recv() => match p { Some(p) => p, None => break },
            };
            let mut touched = BTreeSet::new();
            if !watched.touches(&first, &mut touched) {
                continue;
            }
            // Debounce, bounded: close on QUIET of silence or at MAX_WAIT, whichever is first.
            let deadline = Instant::now() + MAX_WAIT;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match tokio::time::timeout(QUIET.min(left), rx.recv()).await {
                    Ok(Some(p)) => {
                        watched.touches(&p, &mut touched);
                    }
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            watched.rewatch(&mut watcher, &touched);
            if !watched.rehash(&touched).await {
                debug!("watched files touched but unchanged; not reloading");
                gateway.metrics().reloads_skipped_unchanged.inc();
                continue;
            }
            debug!("watched files changed; reloading");
            // The outcome is logged and recorded by `reload` itself.
            let _ = gateway.reload().await;
            watched.update(&mut watcher, &*gateway);
            let new: Vec<PathBuf> = watched
                .files
                .iter()
                .filter(|f| !watched.hashes.contains_key(*f))
                .cloned()
                .collect();
            let hashed = tokio::task::spawn_blocking(move || hash_files(new))
                .await
                .unwrap_or_default();
            watched.hashes.extend(hashed);
        }
    });
    Ok(())
}

#[derive(Default)]
struct Watched {
    /// Every file the serving config names, and the config file itself (absolute).
    files: BTreeSet<PathBuf>,
    /// The folders of `files`.
    dirs: BTreeSet<PathBuf>,
    /// `dirs` and their parents: what the platform watcher watches.
    watching: BTreeSet<PathBuf>,
    /// The last hash seen of each of `files`.
    hashes: BTreeMap<PathBuf, Hash>,
}

impl Watched {
    /// Records in `touched` the watched folder `path`'s event concerns; false if none.
    fn touches(&self, path: &Path, touched: &mut BTreeSet<PathBuf>) -> bool {
        let path = absolute(path);
        if self.dirs.contains(&path) {
            touched.insert(path);
            return true;
        }
        match path.parent() {
            Some(dir) if self.dirs.contains(dir) => {
                touched.insert(dir.to_path_buf());
                true
            }
            _ => false,
        }
    }

    /// Watches the touched folders again: a folder replaced by a rename is a new inode,
    /// and the watch on the old one went with it.
    fn rewatch(&self, watcher: &mut RecommendedWatcher, touched: &BTreeSet<PathBuf>) {
        for dir in touched {
            let _ = watcher.unwatch(dir);
            if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                warn!(dir = %dir.display(), error = %e, "cannot watch a config folder again; use SIGHUP or POST /reload");
            }
        }
    }

    /// Hashes the files of the touched folders; true if any differs from its last hash.
    async fn rehash(&mut self, touched: &BTreeSet<PathBuf>) -> bool {
        let files: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|f| f.parent().is_some_and(|d| touched.contains(d)))
            .cloned()
            .collect();
        let hashed = tokio::task::spawn_blocking(move || hash_files(files))
            .await
            .unwrap_or_default();
        let mut changed = false;
        for (file, hash) in hashed {
            if self.hashes.insert(file, hash) != Some(hash) {
                changed = true;
            }
        }
        changed
    }

    /// Watches the folders of the config file and of every file the serving config names,
    /// and the parents of those folders.
    fn update(&mut self, watcher: &mut RecommendedWatcher, gateway: &dyn Control) {
        let snapshot = gateway.snapshot();
        let mut files: BTreeSet<PathBuf> =
            snapshot.config.files.iter().map(|f| absolute(f)).collect();
        files.insert(absolute(gateway.config_path()));
        let dirs: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();
        let watching: BTreeSet<PathBuf> = dirs
            .iter()
            .flat_map(|d| std::iter::once(d.as_path()).chain(d.parent()))
            .map(Path::to_path_buf)
            .collect();
        for gone in self.watching.difference(&watching) {
            let _ = watcher.unwatch(gone);
        }
        for new in watching.difference(&self.watching) {
            if let Err(e) = watcher.watch(new, RecursiveMode::NonRecursive) {
                warn!(dir = %new.display(), error = %e, "cannot watch a config folder; use SIGHUP or POST /reload");
            }
        }
        self.hashes.retain(|f, _| files.contains(f));
        self.files = files;
        self.dirs = dirs;
        self.watching = watching;
    }
}

/// Hashes each file's content, following symlinks (a ConfigMap's `..data` link included).
fn hash_files(files: Vec<PathBuf>) -> Vec<(PathBuf, Hash)> {
    files
        .into_iter()
        .map(|f| {
            let hash = std::fs::read(&f).ok().map(|b| Sha256::digest(&b).into());
            (f, hash)
        })
        .collect()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
