//! This server as one instance among several (issue 32).
//!
//! SQLite is the single-instance default: `glassbox serve` takes an
//! exclusive lock on a file beside the database ([`SqliteLock`]), so a
//! second server on the same file is refused with a message. The lock is an
//! OS file lock (`flock`), released by the kernel when the process ends,
//! however it ends (`kill -9` included): a stale lock file never blocks a
//! restart. The CLI's other commands (`glassbox tool approve`, ...) do not
//! take it; they share the file with the server as before.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// The lock a serving process holds on its SQLite database for its life.
#[derive(Debug)]
pub struct SqliteLock {
    /// Held open: closing it (at exit) releases the lock.
    _file: File,
    pub path: PathBuf,
}

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the SQLite database `{db}` is already served by another `glassbox serve` \
         (it holds the lock `{lock}`). SQLite mode runs one server per database: stop \
         the other one, or use Postgres (--database-url postgres://...) to run several \
         instances on one database"
    )]
    Held { db: String, lock: String },
    #[error("cannot lock `{lock}` beside the SQLite database: {source}")]
    Io {
        lock: String,
        source: std::io::Error,
    },
}

/// The database file of a `sqlite:` URL (`None` for Postgres and for an
/// in-memory database).
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    use std::str::FromStr;
    if !url.starts_with("sqlite:") || url.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    let file = options.get_filename();
    let text = file.to_str().unwrap_or_default();
    if text.is_empty() || text.starts_with("file:sqlx-in-memory") {
        return None;
    }
    Some(file.to_path_buf())
}

impl SqliteLock {
    /// Takes the serve lock of the SQLite database at `db` (the file
    /// `<db>.serve.lock`, created 0600 when missing and never removed).
    pub fn take(db: &Path) -> Result<Self, LockError> {
        let mut name = db.as_os_str().to_owned();
        name.push(".serve.lock");
        let path = PathBuf::from(name);
        let shown = path.display().to_string();
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path).map_err(|source| LockError::Io {
            lock: shown.clone(),
            source,
        })?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file, path }),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Held {
                db: db.display().to_string(),
                lock: shown,
            }),
            Err(std::fs::TryLockError::Error(source)) => Err(LockError::Io {
                lock: shown,
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_file_of_urls() {
        for (url, want) in [
            ("sqlite://data/glassbox.db", Some("data/glassbox.db")),
            ("sqlite:///tmp/x.db?mode=rwc", Some("/tmp/x.db")),
            ("sqlite::memory:", None),
            ("postgres://u@h/db", None),
        ] {
            assert_eq!(
                sqlite_file(url).as_deref(),
                want.map(Path::new),
                "url: {url}"
            );
        }
    }

    #[test]
    fn a_second_lock_on_the_same_file_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = dir.path().join("g.db");
        let first = SqliteLock::take(&db).expect("first lock");
        let err = SqliteLock::take(&db).expect_err("second lock refused");
        assert!(matches!(err, LockError::Held { .. }), "{err}");
        assert!(err.to_string().contains("already served"), "{err}");
        drop(first);
        SqliteLock::take(&db).expect("free again once the holder is gone");
    }
}
