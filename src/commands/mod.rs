//! One module per subcommand.

pub mod bench;
pub mod simulate;
pub mod ttl;
pub mod validate;

pub mod shared;
