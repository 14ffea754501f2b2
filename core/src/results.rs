//! Writing a results directory so that it appears complete or not at all.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Errors from creating a results directory.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The target exists and holds files: refusing to mix two runs.
    #[error(
        "--out {0}: the directory exists and is not empty; choose a new directory or remove it"
    )]
    NotEmpty(PathBuf),
    /// The target exists and is not a directory.
    #[error("--out {0}: exists and is not a directory")]
    NotADirectory(PathBuf),
    /// A file name that would escape the directory.
    #[error("results file name {0:?} must be a plain relative path")]
    BadName(String),
    /// The directory cannot be created where it was asked for (checked before any work).
    #[error("--out {}: cannot create a results directory in {} ({cause}); choose a writable place", path.display(), parent.display())]
    Unwritable {
        /// The directory asked for.
        path: PathBuf,
        /// The folder that refused it.
        parent: PathBuf,
        /// Why.
        cause: io::Error,
    },
    /// Writing failed.
    #[error("--out {}: {cause}", path.display())]
    Io {
        /// Where writing failed.
        path: PathBuf,
        /// Why (not a `source`: the message already says it, once).
        cause: io::Error,
    },
}

/// A results directory being assembled in memory, written by [`ResultsDir::commit`] into a
/// hidden sibling directory and renamed into place, so readers never see half a run.
#[derive(Debug)]
pub struct ResultsDir {
    target: PathBuf,
    files: Vec<(String, Vec<u8>)>,
}

impl ResultsDir {
    /// Checks that `target` is free (missing or an empty directory) before any work is done, so
    /// that a long run does not fail at its very end.
    pub fn new(target: &Path) -> Result<Self, ResultsError> {
        match fs::read_dir(target) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(ResultsError::NotEmpty(target.to_path_buf()));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) if target.exists() => {
                return Err(ResultsError::NotADirectory(target.to_path_buf()));
            }
            Err(cause) => {
                return Err(ResultsError::Io {
                    path: target.to_path_buf(),
                    cause,
                });
            }
        }
        // A place that refuses a folder refuses it now, not after an hour of work. The probe goes
        // into the nearest folder that exists, so that checking creates nothing that stays.
        let mut parent = parent_of(target);
        while !parent.is_dir() {
            match parent.parent() {
                Some(p) if !p.as_os_str().is_empty() => parent = p.to_path_buf(),
                _ => {
                    parent = PathBuf::from(".");
                    break;
                }
            }
        }
        let probe = parent.join(format!(".{}.probe-{}", name_of(target), std::process::id()));
        fs::create_dir(&probe)
            .and_then(|()| fs::remove_dir(&probe))
            .map_err(|cause| ResultsError::Unwritable {
                path: target.to_path_buf(),
                parent,
                cause,
            })?;
        Ok(Self {
            target: target.to_path_buf(),
            files: Vec::new(),
        })
    }

    /// Stages a file; `name` may contain `/` for subdirectories.
    pub fn add(&mut self, name: &str, bytes: Vec<u8>) -> Result<(), ResultsError> {
        let path = Path::new(name);
        if name.is_empty()
            || path.is_absolute()
            || path
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(ResultsError::BadName(name.to_string()));
        }
        self.files.push((name.to_string(), bytes));
        Ok(())
    }

    /// Names of the staged files, in the order they were added.
    pub fn file_names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(n, _)| n.as_str())
    }

    /// Writes every staged file, then moves the directory into place. On error nothing is left
    /// at the target.
    pub fn commit(self) -> Result<PathBuf, ResultsError> {
        let parent = parent_of(&self.target);
        fs::create_dir_all(&parent).map_err(|cause| ResultsError::Io {
            path: parent.clone(),
            cause,
        })?;
        remove_stale_staging(&self.target);
        let staging = staging_for(&self.target);
        let written = (|| {
            if staging.exists() {
                fs::remove_dir_all(&staging)?;
            }
            fs::create_dir(&staging)?;
            for (file, bytes) in &self.files {
                let path = staging.join(file);
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir)?;
                }
                fs::write(&path, bytes)?;
            }
            // An empty target directory (checked in `new`) is replaced; rename needs it gone.
            if self.target.is_dir() {
                fs::remove_dir(&self.target)?;
            }
            fs::rename(&staging, &self.target)
        })();
        if let Err(cause) = written {
            let _ = fs::remove_dir_all(&staging);
            return Err(ResultsError::Io {
                path: self.target,
                cause,
            });
        }
        Ok(self.target)
    }
}

/// Writes `bytes` to `path` whole or not at all: into its hidden sibling [`staging_for`], then
/// renamed over it, so that a reader (or a process killed halfway) never sees half a file. On a
/// failure the sibling is removed and `path` is as it was.
pub fn write_whole(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let aside = staging_for(path);
    let written = fs::write(&aside, bytes).and_then(|()| fs::rename(&aside, path));
    if written.is_err() {
        let _ = fs::remove_file(&aside);
    }
    written
}

/// The hidden sibling `.NAME.partial-PID` that this process stages `target` in.
pub fn staging_for(target: &Path) -> PathBuf {
    parent_of(target).join(format!(
        ".{}.partial-{}",
        name_of(target),
        std::process::id()
    ))
}

/// A hidden sibling of `target` for one role in replacing it (`next`, `old`), named so that
/// [`remove_stale_staging`] removes it once this process is gone.
fn sibling_for(target: &Path, role: &str) -> PathBuf {
    parent_of(target).join(format!(
        ".{}.{role}.partial-{}",
        name_of(target),
        std::process::id()
    ))
}

/// Puts a copy of the folder `source` (its visible entries: a step's own staging folder, hidden,
/// is left out) at `target`, replacing what was there. The copy is made whole beside `target`
/// first, then renamed into place: a reader sees the previous version or this one, never a mix.
pub fn publish_copy(source: &Path, target: &Path) -> Result<(), ResultsError> {
    let next = sibling_for(target, "next");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| ResultsError::Io { path, cause }
    };
    if next.exists() {
        fs::remove_dir_all(&next).map_err(io(&next))?;
    }
    copy_visible(source, &next).map_err(io(&next))?;
    replace_with(&next, target)
}

/// Renames the folder `dir` to `target`, replacing a folder already there: the old one is moved
/// aside first and removed after, so `target` is missing only between two renames.
pub fn replace_with(dir: &Path, target: &Path) -> Result<(), ResultsError> {
    let old = sibling_for(target, "old");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| ResultsError::Io { path, cause }
    };
    let had = target.exists();
    if had {
        fs::rename(target, &old).map_err(io(target))?;
    }
    fs::rename(dir, target).map_err(io(target))?;
    if had {
        fs::remove_dir_all(&old).map_err(io(&old))?;
    }
    Ok(())
}

fn copy_visible(source: &Path, target: &Path) -> io::Result<()> {
    fs::create_dir(target)?;
    for entry in fs::read_dir(source)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let to = target.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_visible(&entry.path(), &to)?;
        } else {
            fs::copy(entry.path(), &to)?;
        }
    }
    Ok(())
}

/// Removes the staging folders beside `target` (any `.NAME.partial-PID`) whose process is gone:
/// a command killed outright, before its own cleanup, leaves one. Returns what it removed.
pub fn remove_stale_staging(target: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent_of(target)) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix('.')
            .and_then(|n| n.rsplit_once(".partial-"))
            .and_then(|(_, pid)| pid.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
            && fs::remove_dir_all(entry.path()).is_ok()
        {
            removed.push(entry.path());
        }
    }
    removed
}

/// The folder a results directory goes into (`.` for a bare name).
fn parent_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The directory's own name, for its hidden staging sibling.
fn name_of(target: &Path) -> String {
    target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_processs_staging_is_removed_and_a_live_ones_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("run");
        // Past the kernel's default pid_max: no such process.
        let dead = dir.path().join(".other.partial-4194999");
        let live = dir.path().join(format!(
            ".x.partial-{}",
            std::os::unix::process::parent_id()
        ));
        let unrelated = dir.path().join(".partial-notes");
        for d in [&dead, &live, &unrelated] {
            fs::create_dir(d).unwrap();
        }
        assert_eq!(remove_stale_staging(&target), std::slice::from_ref(&dead));
        assert!(!dead.exists() && live.exists() && unrelated.exists());
    }

    #[test]
    fn commit_writes_all_files_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("run-1");
        let mut out = ResultsDir::new(&target).unwrap();
        out.add("manifest.json", b"{}".to_vec()).unwrap();
        out.add("histograms/a.hlog", b"x".to_vec()).unwrap();
        assert!(!target.exists(), "nothing appears before commit");
        out.commit().unwrap();
        assert_eq!(fs::read(target.join("manifest.json")).unwrap(), b"{}");
        assert_eq!(fs::read(target.join("histograms/a.hlog")).unwrap(), b"x");
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no staging directory remains");
    }

    #[test]
    fn refuses_a_directory_with_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("old.csv"), "x").unwrap();
        let err = ResultsDir::new(dir.path()).unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
    }

    #[test]
    fn accepts_an_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("empty");
        fs::create_dir(&target).unwrap();
        let mut out = ResultsDir::new(&target).unwrap();
        out.add("a.txt", b"1".to_vec()).unwrap();
        out.commit().unwrap();
        assert!(target.join("a.txt").exists());
    }

    #[test]
    fn refuses_an_unwritable_place_before_any_work() {
        let err = ResultsDir::new(Path::new("/proc/nope")).unwrap_err();
        assert!(matches!(err, ResultsError::Unwritable { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.starts_with("--out /proc/nope: cannot create"),
            "{text}"
        );
        assert!(
            std::error::Error::source(&err).is_none(),
            "the cause is said once"
        );
    }

    #[test]
    fn checking_a_deep_target_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a/b/c");
        ResultsDir::new(&target).unwrap();
        assert!(!dir.path().join("a").exists());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no probe left"
        );
    }

    #[test]
    fn a_file_written_whole_replaces_the_old_and_leaves_no_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.toml");
        fs::write(&path, "old").unwrap();
        write_whole(&path, "new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "only the file itself");
        // Into a folder that does not exist: refused, nothing made.
        let missing = dir.path().join("no/such/file");
        assert!(write_whole(&missing, "x").is_err());
        assert!(!dir.path().join("no").exists());
    }

    #[test]
    fn rejects_escaping_names() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = ResultsDir::new(&dir.path().join("r")).unwrap();
        assert!(out.add("../evil", vec![]).is_err());
        assert!(out.add("/abs", vec![]).is_err());
    }
}
