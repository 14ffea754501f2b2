//! What a worker process and the lab say to each other once the plan is sent: one line per
//! message, the worker's on its stdout ([`Message`]), the lab's `go` on the worker's stdin
//! ([`Go`]). Written and read only through these types, so that the words have one definition.
//!
//! A lock worker says `connected`, `granted <ttl_ms> <token|->`, `wrote <n>` after each write
//! (and its check), then `done <how>`; or `timed-out` (`timed-out skipped` when it skips the run
//! after a failed acquisition). The pool process says `connected`, `granted <job>` or
//! `not-granted <job>` for each of its two jobs, `idle` once both are over, then `done closed`.

use lockbench_core::records::faults::JobEnd;
use std::fmt;
use std::io::Write as _;
use std::str::FromStr;
use std::time::Duration;

/// One line a worker process says to the lab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Connected to the lock and the resource; ready for its `go`, if it waits for one.
    Connected,
    /// A lock worker's grant: the TTL the backend granted (milliseconds on the wire) and the
    /// fencing token, if the backend gave one.
    Granted { ttl: Duration, token: Option<u64> },
    /// One of the pool process's jobs was granted the lock.
    JobGranted { job: String },
    /// One of the pool process's jobs was refused the lock.
    JobNotGranted { job: String },
    /// The `n`th write (and its check) is done: a pause may begin now.
    Wrote { n: u32 },
    /// The pool process's jobs are over; its idle connection lingers.
    Idle,
    /// The job ended and the worker is about to send its release (a worker asked to stop
    /// there has stopped itself when the line is read).
    Releasing,
    /// The job ended, and how.
    Done { how: JobEnd },
    /// No lock within the wait; `skipped` when the worker skipped the run after a failure.
    TimedOut { skipped: bool },
}

/// A line that is no message of the protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a worker message: {line:?}")]
pub struct UnknownMessage {
    /// The line as it was read.
    pub line: String,
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Connected => f.write_str("connected"),
            Message::Granted { ttl, token } => match token {
                Some(token) => write!(f, "granted {} {token}", ttl.as_millis()),
                None => write!(f, "granted {} -", ttl.as_millis()),
            },
            Message::JobGranted { job } => write!(f, "granted {job}"),
            Message::JobNotGranted { job } => write!(f, "not-granted {job}"),
            Message::Wrote { n } => write!(f, "wrote {n}"),
            Message::Idle => f.write_str("idle"),
            Message::Releasing => f.write_str("releasing"),
            Message::Done { how } => write!(f, "done {how}"),
            Message::TimedOut { skipped: false } => f.write_str("timed-out"),
            Message::TimedOut { skipped: true } => f.write_str("timed-out skipped"),
        }
    }
}

impl FromStr for Message {
    type Err = UnknownMessage;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownMessage {
            line: line.to_string(),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        let message = match words[..] {
            ["connected"] => Message::Connected,
            ["idle"] => Message::Idle,
            ["releasing"] => Message::Releasing,
            ["timed-out"] => Message::TimedOut { skipped: false },
            ["timed-out", "skipped"] => Message::TimedOut { skipped: true },
            ["wrote", n] => Message::Wrote {
                n: n.parse().map_err(|_| unknown())?,
            },
            ["done", how] => Message::Done {
                how: JobEnd::parse(how).ok_or_else(unknown)?,
            },
            ["granted", ttl_ms, token] => Message::Granted {
                ttl: Duration::from_millis(ttl_ms.parse().map_err(|_| unknown())?),
                token: match token {
                    "-" => None,
                    token => Some(token.parse().map_err(|_| unknown())?),
                },
            },
            // A job's name is a word, never a number (that would be a lock worker's TTL).
            ["granted", job] if job.parse::<u64>().is_err() => Message::JobGranted {
                job: job.to_string(),
            },
            ["not-granted", job] => Message::JobNotGranted {
                job: job.to_string(),
            },
            _ => return Err(unknown()),
        };
        Ok(message)
    }
}

/// Says `message` to the lab: one line on stdout, flushed at once (the lab times what follows
/// from it).
pub(crate) fn say(message: &Message) {
    let mut out = std::io::stdout().lock();
    // The lab reads these lines; if it is gone there is no one to tell.
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

/// The lab's word to a worker that waits for it: acquire now, waiting at most `wait` (whole
/// milliseconds on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Go {
    /// How long the worker may wait for the lock.
    pub wait: Duration,
}

impl fmt::Display for Go {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "go {}", self.wait.as_millis())
    }
}

impl FromStr for Go {
    type Err = UnknownMessage;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        line.trim()
            .strip_prefix("go ")
            .and_then(|ms| ms.parse().ok())
            .map(|ms| Go {
                wait: Duration::from_millis(ms),
            })
            .ok_or_else(|| UnknownMessage {
                line: line.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_it_was_written() {
        let messages = [
            (Message::Connected, "connected"),
            (
                Message::Granted {
                    ttl: Duration::from_millis(1500),
                    token: Some(7),
                },
                "granted 1500 7",
            ),
            (
                Message::Granted {
                    ttl: Duration::from_millis(0),
                    token: None,
                },
                "granted 0 -",
            ),
            (
                Message::JobGranted {
                    job: "holder".to_string(),
                },
                "granted holder",
            ),
            (
                Message::JobNotGranted {
                    job: "holder-2".to_string(),
                },
                "not-granted holder-2",
            ),
            (Message::Wrote { n: 12 }, "wrote 12"),
            (Message::Idle, "idle"),
            (
                Message::Done {
                    how: JobEnd::LostAtRelease,
                },
                "done lost-at-release",
            ),
            (Message::TimedOut { skipped: false }, "timed-out"),
            (Message::TimedOut { skipped: true }, "timed-out skipped"),
        ];
        for (message, line) in messages {
            assert_eq!(message.to_string(), line);
            assert_eq!(line.parse::<Message>(), Ok(message));
        }
        let go = Go {
            wait: Duration::from_millis(2500),
        };
        assert_eq!(go.to_string(), "go 2500");
        assert_eq!("go 2500\n".parse::<Go>(), Ok(go));
    }

    #[test]
    fn a_line_outside_the_protocol_is_refused_naming_it() {
        for line in [
            "",
            "hello",
            "granted",
            "granted 12",
            "granted 12 x",
            "wrote many",
            "done",
            "connected now",
        ] {
            let err = line.parse::<Message>().unwrap_err();
            assert_eq!(err.line, line);
            assert_eq!(err.to_string(), format!("not a worker message: {line:?}"));
        }
        assert!("stop 10".parse::<Go>().is_err());
    }
}
