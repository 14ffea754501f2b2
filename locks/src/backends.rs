//! One module per backend.

pub mod etcd;
pub mod memory;
pub mod postgres;
pub mod redis;
pub mod redis_connection;
pub mod redlock;
pub mod zookeeper;
