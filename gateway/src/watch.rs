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
//! a busy neighbour in the same folder cannot delay a reload forever. An event that says a
//! write is complete closes the batch at once, with no quiet wait: a rename into a watched
//! folder (how editors, config management and the ConfigMap `..data` swap publish a file:
//! the renamed file is whole by then) or the close of a watched file opened for writing.
//! That takes a 25 ms wait off every such reload; a writer that closes a file and then
//! writes it again gets a second reload, which is what a slow writer got before. The files of the
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

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
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
    let (tx, mut rx) = mpsc::unbounded_channel::<Touch>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            for touch in classify(event) {
                let _ = tx.send(touch);
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
            if !watched.touches(&first.path, &mut touched) {
                continue;
            }
            let mut complete = watched.completes(&first);
            // Debounce, bounded: close on QUIET of silence or at MAX_WAIT, whichever is first,
            // or at once on a completed write (after taking what is already queued).
            let deadline = Instant::now() + MAX_WAIT;
            loop {
                let next = if complete {
                    match rx.try_recv() {
                        Ok(t) => t,
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => return,
                    }
                } else {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    match tokio::time::timeout(QUIET.min(left), rx.recv()).await {
                        Ok(Some(t)) => t,
                        Ok(None) => return,
                        Err(_) => break,
                    }
                };
                if watched.touches(&next.path, &mut touched) {
                    complete |= watched.completes(&next);
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

/// One path an event named, and whether it says a write there is complete.
struct Touch {
    path: PathBuf,
    end: End,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// More may follow (created, written, removed...).
    No,
    /// A file opened for writing was closed.
    Closed,
    /// Something was renamed to this path.
    Renamed,
}

/// The paths an event names, each marked with whether a write there is complete; none
/// for reads (opening, closing a file opened only for reading).
fn classify(event: notify::Event) -> Vec<Touch> {
    let end = match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => End::Closed,
        EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) => End::Renamed,
        EventKind::Access(_) => return Vec::new(),
        _ => End::No,
    };
    let last = event.paths.len().saturating_sub(1);
    event
        .paths
        .into_iter()
        .enumerate()
        // A paired rename lists (from, to): only the name it arrived at is whole.
        .map(|(i, path)| Touch {
            path,
            end: if i == last { end } else { End::No },
        })
        .collect()
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
    /// The access logs leafgate writes itself: one beside the config file would otherwise
    /// touch its folder at every flush, and have the files hashed again for nothing.
    own: BTreeSet<PathBuf>,
}

impl Watched {
    /// Records in `touched` the watched folder `path`'s event concerns; false if none.
    fn touches(&self, path: &Path, touched: &mut BTreeSet<PathBuf>) -> bool {
        let path = absolute(path);
        if self.own.contains(&path) && !self.files.contains(&path) {
            return false;
        }
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

    /// Whether `touch` (in a watched folder) completes a write worth reloading for now: a
    /// rename to any name there (a `..data` swap names no watched file), or the close of a
    /// watched file itself. Closing a neighbour, such as the temporary file about to be
    /// renamed over the config, does not.
    fn completes(&self, touch: &Touch) -> bool {
        match touch.end {
            End::No => false,
            End::Renamed => true,
            End::Closed => self.files.contains(&absolute(&touch.path)),
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
        self.own = snapshot.config.access_log.files().map(absolute).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange};

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        paths.iter().fold(notify::Event::new(kind), |e, p| {
            e.add_path(PathBuf::from(p))
        })
    }

    fn ends(kind: EventKind, paths: &[&str]) -> Vec<(PathBuf, End)> {
        classify(event(kind, paths))
            .into_iter()
            .map(|t| (t.path, t.end))
            .collect()
    }

    #[test]
    fn renames_and_closed_writes_end_a_write_reads_are_dropped() {
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert!(
            ends(renamed, &["/c/x.tmp", "/c/x.toml"])
                == vec![
                    (PathBuf::from("/c/x.tmp"), End::No),
                    (PathBuf::from("/c/x.toml"), End::Renamed)
                ]
        );
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(ends(closed, &["/c/x.toml"]) == vec![(PathBuf::from("/c/x.toml"), End::Closed)]);
        let written = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        assert!(ends(written, &["/c/x.toml"]) == vec![(PathBuf::from("/c/x.toml"), End::No)]);
        let created = EventKind::Create(CreateKind::File);
        assert!(ends(created, &["/c/x.toml"])[0].1 == End::No);
        let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
        assert!(ends(read, &["/c/x.toml"]).is_empty());
    }

    #[test]
    fn the_access_log_written_beside_the_config_touches_nothing() {
        let mut watched = Watched::default();
        watched.files.insert(PathBuf::from("/c/x.toml"));
        watched.dirs.insert(PathBuf::from("/c"));
        watched.own.insert(PathBuf::from("/c/access.log"));
        let mut touched = BTreeSet::new();
        assert!(!watched.touches(Path::new("/c/access.log"), &mut touched));
        assert!(touched.is_empty());
        // A neighbour (the `..data` swap, an editor's temporary file) still does.
        assert!(watched.touches(Path::new("/c/..data"), &mut touched));
        assert!(watched.touches(Path::new("/c/x.toml"), &mut touched));
    }

    #[test]
    fn only_the_watched_file_closing_completes_but_any_rename_does() {
        let mut watched = Watched::default();
        watched.files.insert(PathBuf::from("/c/x.toml"));
        watched.dirs.insert(PathBuf::from("/c"));
        let touch = |path: &str, end| Touch {
            path: PathBuf::from(path),
            end,
        };
        assert!(watched.completes(&touch("/c/x.toml", End::Closed)));
        assert!(!watched.completes(&touch("/c/x.toml.tmp", End::Closed)));
        assert!(watched.completes(&touch("/c/..data", End::Renamed)));
        assert!(!watched.completes(&touch("/c/x.toml", End::No)));
    }
}
