//! A cell's stage: what a fault's prepare phase sets up for its trials (private servers, a
//! namespace for the holder, forwarders, the holder's own URLs), what it needs on this machine
//! ([`Need`]), and the helpers each fault's prepare phase builds it with. Everything on a stage
//! is stopped by pid and removed when the cell ends (or, dropped, on an error or a Ctrl-C).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use lockbench_locks::{BackendConfig, BackendKind};

use crate::FaultError;
use crate::forward::Forwarder;
use crate::link::ReplicationLink;
use crate::netns::Namespace;
use crate::postgres::PrivatePostgres;
use crate::server::{Persistence, PrivateRedis};
use crate::zookeeper::PrivateZookeeper;

/// Something a cell needs on this machine beyond the backend's configured servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// redis-server on PATH, for private servers.
    RedisServer,
    /// The wall-clock shim (built with a C compiler).
    Shim,
    /// java and the zookeeper package, for a private ZooKeeper.
    Zookeeper,
    /// Root, ip and nft, for a network namespace.
    Netns,
    /// A PostgreSQL server installation, for a private Postgres.
    Postgres,
    /// PgBouncer, for a private pooler.
    Pgbouncer,
    /// A private cluster of three members of a consensus store.
    Cluster(crate::cluster::Consensus),
    /// Nothing this machine can give: the cell cannot be measured, for this reason.
    Impossible(&'static str),
}

/// What a cell's trials run on besides the lab's own client.
#[derive(Default)]
pub(crate) struct Stage {
    /// Private Redis servers (the cell locks on them instead of the configured ones).
    pub(crate) servers: Vec<PrivateRedis>,
    /// A private Postgres (a partition's, a vanished host's).
    pub(crate) postgres: Option<PrivatePostgres>,
    /// The clock-jump control's private ZooKeeper.
    pub(crate) zookeeper: Option<PrivateZookeeper>,
    /// A cluster cell's three private members.
    pub(crate) cluster: Option<crate::cluster::PrivateCluster>,
    /// A Sentinel cell's primary, replicas and Sentinels.
    pub(crate) sentinel: Option<crate::sentinel::SentinelSet>,
    /// A promotion cell's streaming standby of the private Postgres.
    pub(crate) standby: Option<PrivatePostgres>,
    /// A pooler's PgBouncer, in front of the private Postgres.
    pub(crate) pgbouncer: Option<crate::pgbouncer::PrivatePgbouncer>,
    /// The holder's namespace, when the variant isolates it.
    pub(crate) partition: Option<Partition>,
    /// A failover's replication link, between its primary and its replica.
    pub(crate) link: Option<ReplicationLink>,
    /// The holder's lock server URLs where they differ from the config's (a vanished host's:
    /// through its namespace, or with a per-connection keepalive).
    pub(crate) holder_urls: Option<Vec<String>>,
    /// A vanished host's forwarders to the configured lock servers (or a slow link's).
    pub(crate) forwarders: Vec<Forwarder>,
    /// A slow link's hold on the replies to the holder, which the fault sets and lifts.
    pub(crate) reply_delay: Option<crate::forward::ReplyDelay>,
}

impl Stage {
    /// True when the cell locks on servers of the lab's own (its keys go with them).
    pub(crate) fn private(&self) -> bool {
        !self.servers.is_empty()
            || self.postgres.is_some()
            || self.zookeeper.is_some()
            || self.cluster.is_some()
            || self.sentinel.is_some()
    }

    /// Where the holder's job is cut off: the private Postgres's port, or the first private
    /// Redis server's.
    pub(crate) fn server_port(&self) -> u16 {
        match &self.postgres {
            Some(pg) => pg.port(),
            None => self.servers.first().map_or(0, PrivateRedis::port),
        }
    }

    /// Stops every private server.
    pub(crate) async fn stop(&mut self) {
        if let Some(pooler) = &mut self.pgbouncer {
            pooler.stop().await;
        }
        for server in &mut self.servers {
            server.kill().await;
        }
        if let Some(pg) = &mut self.postgres {
            pg.stop().await;
        }
        if let Some(zk) = &mut self.zookeeper {
            zk.stop().await;
        }
        if let Some(cluster) = &mut self.cluster {
            cluster.stop().await;
        }
        if let Some(standby) = &mut self.standby {
            standby.stop().await;
        }
        if let Some(set) = &mut self.sentinel {
            set.stop().await;
        }
    }
}

/// A holder in a namespace of the lab's (a partition, a vanished host).
pub(crate) struct Partition {
    pub(crate) ns: Namespace,
    /// Carries the holder's connections to the resource across the namespace's edge.
    pub(crate) forwarder: Forwarder,
    /// The resource's URL as seen from inside the namespace.
    pub(crate) resource_url: String,
}

impl Partition {
    /// Creates the namespace `tag` and a forwarder on its host end to the resource.
    pub(crate) async fn create(tag: &str, resource_url: &str) -> Result<Self, FaultError> {
        let ns = Namespace::create(tag)?;
        let forwarder = Forwarder::start(ns.host_ip(), resource_addr(resource_url)?, None).await?;
        let mut inside = url::Url::parse(resource_url)
            .map_err(|e| FaultError::Resource(format!("the resource URL: {e}")))?;
        let _ = inside.set_host(Some(&ns.host_ip().to_string()));
        let _ = inside.set_port(Some(forwarder.port()));
        Ok(Partition {
            ns,
            forwarder,
            resource_url: inside.to_string(),
        })
    }
}

/// What a fault's prepare phase builds the stage with.
pub(crate) struct StageSetup<'a> {
    /// The cell's backend; a stage of private servers points its URLs at them.
    pub(crate) config: &'a mut BackendConfig,
    pub(crate) stage: &'a mut Stage,
    /// The redis-server binary, when one was found.
    pub(crate) redis_server: Option<&'a Path>,
    /// Writes the wall-clock shim, once per run, and says where.
    pub(crate) shim: &'a mut (dyn FnMut() -> Result<PathBuf, FaultError> + Send),
}

impl StageSetup<'_> {
    /// Where the stage's servers listen: the holder's namespace's host end, or loopback.
    pub(crate) fn bind(&self) -> Ipv4Addr {
        self.stage
            .partition
            .as_ref()
            .map_or(Ipv4Addr::LOCALHOST, |p| p.ns.host_ip())
    }

    /// Starts `count` private Redis servers with `persistence` (the wall-clock shim preloaded
    /// when `shimmed`), and points the cell's URLs at them.
    pub(crate) async fn private_redis(
        &mut self,
        count: usize,
        persistence: Persistence,
        shimmed: bool,
    ) -> Result<(), FaultError> {
        let binary = self.redis_server.ok_or_else(|| {
            FaultError::Server("no redis-server on PATH for a private server".to_string())
        })?;
        let shim = if shimmed { Some((self.shim)()?) } else { None };
        let bind = self.bind();
        for _ in 0..count {
            let server = PrivateRedis::start(binary, persistence, shim.as_deref(), bind).await?;
            self.stage.servers.push(server);
        }
        self.config.urls = self.stage.servers.iter().map(PrivateRedis::url).collect();
        Ok(())
    }

    /// Starts a private Postgres on [`StageSetup::bind`] with `settings` (`name=value`), and
    /// points the cell's URL at it.
    pub(crate) async fn private_postgres(&mut self, settings: &[&str]) -> Result<(), FaultError> {
        let settings: Vec<String> = settings.iter().map(|s| s.to_string()).collect();
        let server = PrivatePostgres::start(self.bind(), &settings).await?;
        self.config.urls = vec![server.url()];
        self.stage.postgres = Some(server);
        Ok(())
    }

    /// Starts a private ZooKeeper with the wall-clock shim, and points the cell's URL at it.
    pub(crate) async fn private_zookeeper(&mut self) -> Result<(), FaultError> {
        let shim = (self.shim)()?;
        let server = PrivateZookeeper::start(&shim).await?;
        self.config.urls = vec![server.url()];
        self.stage.zookeeper = Some(server);
        Ok(())
    }

    /// Starts a private cluster of `kind`, and points the cell's URLs at every member; with
    /// the stage's namespace, the member that leads first runs inside it and the others on its
    /// host end, and only the holder is given the member inside.
    pub(crate) async fn private_cluster(
        &mut self,
        kind: crate::cluster::Consensus,
    ) -> Result<(), FaultError> {
        let cluster = match &self.stage.partition {
            Some(p) => crate::cluster::PrivateCluster::start_split(kind, &p.ns).await?,
            None => crate::cluster::PrivateCluster::start(kind).await?,
        };
        // Split, the holder is given every member and everyone else (the contender, the lab's
        // own client) the majority's: a session opened on the member about to be cut off would
        // expire with the holder's.
        if self.stage.partition.is_some() {
            self.config.urls = cluster.majority_urls();
            self.stage.holder_urls = Some(cluster.urls());
        } else {
            self.config.urls = cluster.urls();
        }
        self.stage.cluster = Some(cluster);
        Ok(())
    }

    /// Starts a private primary, two replicas and three Sentinels (with the stage's namespace,
    /// the primary inside it and the others on its host end); the cell finds the primary through
    /// the Sentinels, as real clients do.
    pub(crate) async fn private_sentinels(&mut self) -> Result<(), FaultError> {
        let binary = self.redis_server.ok_or_else(|| {
            FaultError::Server("no redis-server on PATH for private Sentinels".to_string())
        })?;
        let set = match &self.stage.partition {
            Some(p) => crate::sentinel::SentinelSet::start_split(binary, &p.ns).await?,
            None => crate::sentinel::SentinelSet::start(binary).await?,
        };
        self.config.urls = set.urls();
        self.config.sentinel_master = Some(crate::sentinel::MASTER.to_string());
        self.stage.sentinel = Some(set);
        Ok(())
    }

    /// Starts a private Postgres with a streaming standby; the cell's URL is the primary's.
    pub(crate) async fn private_postgres_with_standby(&mut self) -> Result<(), FaultError> {
        self.private_postgres(&[]).await?;
        let standby = match &self.stage.postgres {
            Some(primary) => primary.standby().await?,
            None => return Err(FaultError::Server("no primary for a standby".to_string())),
        };
        self.stage.standby = Some(standby);
        Ok(())
    }

    /// The holder reaches the configured servers through forwarders on its namespace's host end,
    /// which the namespace's cut cuts too.
    pub(crate) async fn reroute_holder(&mut self) -> Result<(), FaultError> {
        self.reroute_holder_through(None).await
    }

    /// The holder reaches the configured servers through forwarders on loopback that hold each
    /// reply for the stage's [`ReplyDelay`] (none until the fault sets one).
    pub(crate) async fn slow_holder_link(&mut self) -> Result<(), FaultError> {
        let delay = crate::forward::ReplyDelay::default();
        self.stage.reply_delay = Some(delay.clone());
        self.reroute_holder_through(Some(delay)).await
    }

    async fn reroute_holder_through(
        &mut self,
        delay: Option<crate::forward::ReplyDelay>,
    ) -> Result<(), FaultError> {
        let bind = self.bind();
        let mut urls = Vec::new();
        for url in &self.config.urls {
            let port = default_port(self.config.kind);
            let (rerouted, through) = reroute(url, port, bind, delay.clone()).await?;
            urls.push(rerouted);
            self.stage.forwarders.extend(through);
        }
        self.stage.holder_urls = Some(urls);
        Ok(())
    }
}

/// The address of a Postgres URL, for a forwarder.
pub(crate) fn resource_addr(url: &str) -> Result<std::net::SocketAddr, FaultError> {
    server_addr(url, 5432)
}

/// The address a `scheme://host:port` URL names, `default_port` when it names none.
pub(crate) fn server_addr(
    url: &str,
    default_port: u16,
) -> Result<std::net::SocketAddr, FaultError> {
    let parsed =
        url::Url::parse(url).map_err(|e| FaultError::Resource(format!("the URL {url}: {e}")))?;
    let host = parsed.host_str().unwrap_or("127.0.0.1");
    let port = parsed.port().unwrap_or(default_port);
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| FaultError::Resource(format!("cannot resolve {host}:{port}")))
}

/// The port a backend's server listens on when its URL names none.
fn default_port(kind: BackendKind) -> u16 {
    match kind {
        BackendKind::Redis | BackendKind::Redlock => 6379,
        BackendKind::PgSession | BackendKind::PgXact => 5432,
        BackendKind::Etcd => 2379,
        BackendKind::Zookeeper => 2181,
        BackendKind::Memory => 0,
    }
}

/// A Postgres URL with the lab's per-connection keepalive in its startup options.
pub(crate) fn with_keepalive(url: &str) -> String {
    let (idle, interval, count) = crate::scenario::LAB_KEEPALIVE;
    let options = format!(
        "-c tcp_keepalives_idle={idle} -c tcp_keepalives_interval={interval} -c tcp_keepalives_count={count}"
    );
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.query_pairs_mut().append_pair("options", &options);
            parsed.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// `url` with each server address in it replaced by a forwarder's on `ip` that passes on to it,
/// and the forwarders. A URL is `scheme://host:port/...` or ZooKeeper's `host:port,host:port/chroot`.
async fn reroute(
    url: &str,
    port: u16,
    ip: Ipv4Addr,
    delay: Option<crate::forward::ReplyDelay>,
) -> Result<(String, Vec<Forwarder>), FaultError> {
    let mut forwarders = Vec::new();
    if url.contains("://") {
        let mut parsed = url::Url::parse(url)
            .map_err(|e| FaultError::Server(format!("the lock server URL {url}: {e}")))?;
        let target = server_addr(url, port)?;
        let forwarder = Forwarder::start(ip, target, delay.clone()).await?;
        let _ = parsed.set_host(Some(&ip.to_string()));
        let _ = parsed.set_port(Some(forwarder.port()));
        forwarders.push(forwarder);
        return Ok((parsed.to_string(), forwarders));
    }
    let (hosts, chroot) = url.split_at(url.find('/').unwrap_or(url.len()));
    let mut rerouted = Vec::new();
    for host in hosts.split(',') {
        let target = server_addr(&format!("tcp://{host}"), port)?;
        let forwarder = Forwarder::start(ip, target, delay.clone()).await?;
        rerouted.push(format!("{ip}:{}", forwarder.port()));
        forwarders.push(forwarder);
    }
    Ok((format!("{}{chroot}", rerouted.join(",")), forwarders))
}
