//! The `Authorization` value a leaf's requests carry: a fixed bearer token, or one read
//! from a `tokenFile` and re-read as soon as the file changes.
//!
//! Projected service-account tokens are rotated by the kubelet swapping a symlink (or
//! rewriting the file), so every request looks at the file's identity (device, inode,
//! size, modification time; one `stat`) and reads it again only when that changed: the
//! first request after a rotation already carries the new token. A file that cannot be
//! read keeps the last token it gave, with a warning, rather than failing every request
//! during a rotation's brief gap. It must not know about TLS or requests.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use http::HeaderValue;
use tracing::warn;

use crate::config::LeafAuth;

/// Why a leaf has no usable token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the token in {path} is empty or has characters a header cannot carry")]
    Invalid { path: PathBuf },
}

/// What identifies one version of a token file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    fn of(path: &Path) -> std::io::Result<Stamp> {
        let m = std::fs::metadata(path)?;
        Ok(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        })
    }
}

/// A leaf's credentials for the `Authorization` header.
pub struct Credentials(Kind);

enum Kind {
    None,
    Fixed(HeaderValue),
    File {
        path: PathBuf,
        current: Mutex<Option<(Stamp, HeaderValue)>>,
    },
}

impl Credentials {
    pub fn new(auth: &LeafAuth) -> Result<Credentials, TokenError> {
        let creds = Credentials(match auth {
            LeafAuth::None => Kind::None,
            LeafAuth::Token(t) => Kind::Fixed(bearer(t).ok_or(TokenError::Invalid {
                path: PathBuf::from("token"),
            })?),
            LeafAuth::TokenFile(path) => Kind::File {
                path: path.clone(),
                current: Mutex::new(None),
            },
        });
        // A token file that cannot be read now fails the build, not the first request.
        creds.authorization()?;
        Ok(creds)
    }

    /// The `Authorization` value for the next request, `None` when the leaf authenticates
    /// by client certificate alone.
    pub fn authorization(&self) -> Result<Option<HeaderValue>, TokenError> {
        match &self.0 {
            Kind::None => Ok(None),
            Kind::Fixed(v) => Ok(Some(v.clone())),
            Kind::File { path, current } => {
                let mut current = current.lock().unwrap_or_else(PoisonError::into_inner);
                let stamp = Stamp::of(path);
                if let (Ok(now), Some((seen, value))) = (&stamp, current.as_ref())
                    && now == seen
                {
                    return Ok(Some(value.clone()));
                }
                let fresh = stamp
                    .map_err(|e| read_error(path, e))
                    .and_then(|s| read(path).map(|v| (s, v)));
                match fresh {
                    Ok((stamp, value)) => {
                        *current = Some((stamp, value.clone()));
                        Ok(Some(value))
                    }
                    Err(e) => match current.as_ref() {
                        Some((_, value)) => {
                            warn!(error = %e, "keeping the previous leaf token");
                            Ok(Some(value.clone()))
                        }
                        None => Err(e),
                    },
                }
            }
        }
    }
}

fn read_error(path: &Path, source: std::io::Error) -> TokenError {
    TokenError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn read(path: &Path) -> Result<HeaderValue, TokenError> {
    let text = std::fs::read_to_string(path).map_err(|e| read_error(path, e))?;
    bearer(text.trim()).ok_or_else(|| TokenError::Invalid {
        path: path.to_path_buf(),
    })
}

/// `Bearer {token}`, marked sensitive so it never appears in debug output.
fn bearer(token: &str) -> Option<HeaderValue> {
    if token.is_empty() {
        return None;
    }
    let mut v = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    v.set_sensitive(true);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_or_swapped_token_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "one\n").unwrap();
        let creds = Credentials::new(&LeafAuth::TokenFile(path.clone())).unwrap();
        assert_eq!(creds.authorization().unwrap().unwrap(), "Bearer one");
        // Swapped in by rename, as a kubelet's atomic writer does: a new inode.
        let next = dir.path().join("token.next");
        std::fs::write(&next, "two\n").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert_eq!(creds.authorization().unwrap().unwrap(), "Bearer two");
        // Rewritten in place with a longer token.
        std::fs::write(&path, "three\n").unwrap();
        assert_eq!(creds.authorization().unwrap().unwrap(), "Bearer three");
        // Gone for a moment: the last token stays.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(creds.authorization().unwrap().unwrap(), "Bearer three");
    }

    #[test]
    fn an_empty_token_file_is_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "\n").unwrap();
        assert!(Credentials::new(&LeafAuth::TokenFile(path)).is_err());
    }
}
