//! The client libraries lockbench's backends speak through, with the versions `Cargo.lock` pins:
//! the record names them beside each server's version, so that a reader knows which client's
//! behaviour was measured. A test holds each against `Cargo.lock`.

/// Redis and Redlock: the `redis` crate (redis-rs).
pub const REDIS: &str = "redis-rs 1.8.1";
/// Postgres advisory locks: the `sqlx` crate.
pub const POSTGRES: &str = "sqlx 0.9.0";
/// etcd: the `etcd-client` crate.
pub const ETCD: &str = "etcd-client 0.21.1";
/// ZooKeeper: the `zookeeper-client` crate.
pub const ZOOKEEPER: &str = "zookeeper-client 0.11.2";

#[cfg(test)]
mod tests {
    /// Each constant names the crate (redis-rs is the `redis` crate) and the version Cargo.lock
    /// pins, so a dependency bump that forgets this file fails here.
    #[test]
    fn every_client_is_the_version_cargo_lock_pins() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
            .expect("Cargo.lock at the workspace root");
        for (krate, named) in [
            ("redis", super::REDIS),
            ("sqlx", super::POSTGRES),
            ("etcd-client", super::ETCD),
            ("zookeeper-client", super::ZOOKEEPER),
        ] {
            let version = named.rsplit(' ').next().unwrap();
            let entry = format!("name = \"{krate}\"\nversion = \"{version}\"\n");
            assert!(
                lock.contains(&entry),
                "{named}: Cargo.lock pins another version of {krate}"
            );
        }
    }
}
