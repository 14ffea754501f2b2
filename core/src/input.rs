//! The one way lockbench reads a file it is given: only a regular file, and only up to a bound
//! for its kind. `/dev/zero`, a named pipe or a directory is refused before it is opened (opening a
//! FIFO would wait for a writer; reading `/dev/zero` would never end), and so is a file larger than
//! its kind may be. Each refusal is one line naming the file and what was expected; the callers
//! turn it into their own error (a spec's, a flag's, a results directory's), exit 2.

use std::io::Read;
use std::path::Path;

/// What a file is read as, and the most it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A workload spec (TOML).
    Spec,
    /// A backend configuration (`--config`, TOML).
    Config,
    /// An empirical latency file a spec names (one sample per line).
    Samples,
    /// Observed job runs or calls: CSV, or an OTLP JSON trace.
    Observed,
    /// A file of a results directory (`manifest.json`, `results.json`, a CSV, a `.hlog`).
    Record,
}

impl InputKind {
    /// The largest file of this kind lockbench reads, bytes.
    pub fn max_bytes(self) -> u64 {
        const MIB: u64 = 1024 * 1024;
        match self {
            // A spec or a config is a page of TOML; a megabyte is a thousand pages.
            InputKind::Spec | InputKind::Config => MIB,
            // A million samples of a dozen characters.
            InputKind::Samples => 64 * MIB,
            // A month of a busy job's spans or calls.
            InputKind::Observed => 1024 * MIB,
            // The largest record of a full run is a few megabytes (its histograms).
            InputKind::Record => 1024 * MIB,
        }
    }

    /// What it is, in a message: "a spec file".
    pub fn what(self) -> &'static str {
        match self {
            InputKind::Spec => "a workload spec (a TOML file)",
            InputKind::Config => "a backend configuration (a TOML file)",
            InputKind::Samples => "an empirical latency file (one sample per line)",
            InputKind::Observed => "observed runs or calls (a CSV file or an OTLP JSON trace)",
            InputKind::Record => "a file of a results directory",
        }
    }
}

/// Why a file was not read, in one line (without the file's name, which the caller puts first).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// It does not exist.
    #[error("no such file; expected {0}")]
    Missing(&'static str),
    /// A directory, a device, a FIFO, a socket.
    #[error("not a regular file ({found}); expected {expected}")]
    NotAFile {
        /// What it is.
        found: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// Larger than its kind may be.
    #[error("{size} bytes, more than the {max} bytes {expected} may hold")]
    TooLarge {
        /// Its size, or what was read of it before the bound.
        size: u64,
        /// The bound.
        max: u64,
        /// What was expected.
        expected: &'static str,
    },
    /// Text that is not UTF-8.
    #[error("expected UTF-8 text, found an invalid byte at offset {0}")]
    NotText(usize),
    /// Any other failure to read it.
    #[error("cannot read it ({0})")]
    Unreadable(String),
}

/// What a path that is not a regular file is.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Reads `path` whole as `kind`: a regular file (symbolic links followed) of at most
/// [`InputKind::max_bytes`].
pub fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>, InputError> {
    let expected = kind.what();
    let max = kind.max_bytes();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => InputError::Missing(expected),
        _ => InputError::Unreadable(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(InputError::NotAFile {
            found: kind_of(&meta),
            expected,
        });
    }
    if meta.len() > max {
        return Err(InputError::TooLarge {
            size: meta.len(),
            max,
            expected,
        });
    }
    let file = std::fs::File::open(path).map_err(|e| InputError::Unreadable(e.to_string()))?;
    // A file that grows while it is read is still read no further than the bound.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(InputError::TooLarge {
            size: bytes.len() as u64,
            max,
            expected,
        });
    }
    Ok(bytes)
}

/// [`read_input`] as UTF-8 text.
pub fn read_input_text(path: &Path, kind: InputKind) -> Result<String, InputError> {
    let bytes = read_input(path, kind)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotText(e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_a_fifo_a_directory_and_an_oversized_file_are_refused_before_any_read() {
        let dir = tempfile::tempdir().unwrap();
        let refused = |path: &Path, kind| read_input(path, kind).unwrap_err();
        assert_eq!(
            refused(Path::new("/dev/zero"), InputKind::Spec),
            InputError::NotAFile {
                found: "a character device",
                expected: InputKind::Spec.what()
            }
        );
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Opening a FIFO without a writer would block: the check comes first, so this returns.
        assert!(matches!(
            refused(&fifo, InputKind::Observed),
            InputError::NotAFile {
                found: "a named pipe",
                ..
            }
        ));
        assert!(matches!(
            refused(dir.path(), InputKind::Record),
            InputError::NotAFile {
                found: "a directory",
                ..
            }
        ));
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; InputKind::Spec.max_bytes() as usize + 1]).unwrap();
        let err = refused(&big, InputKind::Spec);
        assert!(matches!(err, InputError::TooLarge { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "1048577 bytes, more than the 1048576 bytes a workload spec (a TOML file) may hold"
        );
        assert_eq!(
            refused(&dir.path().join("absent"), InputKind::Config),
            InputError::Missing(InputKind::Config.what())
        );
        let fine = dir.path().join("fine.toml");
        std::fs::write(&fine, "a = 1\n").unwrap();
        assert_eq!(read_input_text(&fine, InputKind::Spec).unwrap(), "a = 1\n");
    }
}
