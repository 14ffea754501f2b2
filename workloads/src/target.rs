//! What a step's latency applies to: a leaf the spec and the answers both name.

use serde::{Deserialize, Serialize};

/// What a step's latency applies to; profiles inject latency by target.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// A database call.
    Db,
    /// An external API call.
    Api,
    /// Local computation.
    Cpu,
}

impl Target {
    /// Its name in a spec (`db`, `api`, `cpu`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Db => "db",
            Target::Api => "api",
            Target::Cpu => "cpu",
        }
    }
}
