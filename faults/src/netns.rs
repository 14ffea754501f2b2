//! A network namespace of the lab's own for a partitioned holder: a veth pair to the host, the
//! host end on a private /30, and an nftables table inside the namespace that drops the holder's
//! traffic to the lock server while the partition lasts (Jepsen's partition, without netem, which
//! this kernel lacks). Removed when dropped; nothing outside the namespace and its veth changes.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::FaultError;
use crate::register::Leftover;

/// The namespace, its veth pair and its addresses.
pub struct Namespace {
    name: String,
    host_veth: String,
    host_ip: Ipv4Addr,
    partitioned: bool,
    /// The file that claims its /30 among the labs on this machine.
    claim: PathBuf,
}

/// True when some interface already has an address in 10.213.`k`.0/30 (a namespace a killed lab
/// left behind, say): that /30 is not free, whoever claimed it.
fn in_use(k: u8) -> bool {
    Command::new("ip")
        .args([
            "-o",
            "-4",
            "addr",
            "show",
            "to",
            &format!("10.213.{k}.0/30"),
        ])
        .output()
        .map_or(true, |o| !o.stdout.is_empty())
}

/// Where labs claim their subnets (a partition needs root, which can write here).
const CLAIMS: &str = "/run/lockbench-faults";

/// Claims a free 10.213.K.0/30 for this process: a file `lockbench-faults-subnet-K` in
/// [`CLAIMS`] holding the claimer's pid, put in place whole by a hard link (which fails
/// if the file exists); a claim whose process is gone is taken over; a /30 an interface already
/// uses is skipped.
fn claim_subnet() -> Result<(u8, PathBuf), FaultError> {
    let pid = std::process::id().to_string();
    // Subnets are the machine's, whatever a lab's TMPDIR: the claims live in one place for all.
    let temp = PathBuf::from(CLAIMS);
    std::fs::create_dir_all(&temp)
        .map_err(|e| FaultError::Server(format!("{}: {e}", temp.display())))?;
    // One claim file per call: two lanes of one lab claim at once.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mine = temp.join(format!("lockbench-faults-subnet-claim-{pid}-{call}"));
    std::fs::write(&mine, &pid)
        .map_err(|e| FaultError::Server(format!("{}: {e}", mine.display())))?;
    let claimed = (0..=255u8).find_map(|k| {
        let path = temp.join(format!("lockbench-faults-subnet-{k}"));
        for _ in 0..2 {
            match std::fs::hard_link(&mine, &path) {
                Ok(()) if in_use(k) => {
                    let _ = std::fs::remove_file(&path);
                    return None;
                }
                Ok(()) => return Some((k, path)),
                Err(_) => {
                    let owner = std::fs::read_to_string(&path).unwrap_or_default();
                    let alive = owner.trim().is_empty()
                        || std::path::Path::new(&format!("/proc/{}", owner.trim())).exists();
                    if alive {
                        return None;
                    }
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        None
    });
    let _ = std::fs::remove_file(&mine);
    claimed.ok_or_else(|| {
        FaultError::Server("no 10.213.K.0/30 is free (every one is claimed or in use)".to_string())
    })
}

const TABLE: &str = "lockbench_partition";

/// Runs `args` (an `ip` or `nft` command), bounded by 10 s (coreutils' `timeout`).
fn run(args: &[&str]) -> Result<(), FaultError> {
    let out = Command::new("timeout")
        .arg("10")
        .args(args)
        .output()
        .map_err(|e| FaultError::Server(format!("{}: {e}", args.join(" "))))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(FaultError::Server(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Why a partition cannot run here, if it cannot.
pub fn unavailable() -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        return Some("needs root, to create a network namespace and its nftables table");
    }
    if crate::find_on_path("ip").is_none() || crate::find_on_path("nft").is_none() {
        return Some(
            "needs ip and nft (apt-get install iproute2 nftables; scripts/services.sh up installs them)",
        );
    }
    None
}

impl Namespace {
    /// Creates `lbf-<tag>` with a veth pair on a /30 of 10.213.0.0/16 no other lab here uses:
    /// the host end gets .1, the namespace end .2.
    pub fn create(tag: &str) -> Result<Self, FaultError> {
        let (subnet, claim) = claim_subnet()?;
        crate::register::record(Leftover::Claim {
            path: claim.clone(),
        });
        // Interface names hold 15 bytes: the run id's first six characters and the subnet, which
        // no other namespace of this machine has (two lanes of one lab share the run id).
        let short: String = tag.chars().take(6).collect();
        let ns = Namespace {
            name: format!("lbf-{tag}"),
            host_veth: format!("lbf{short}{subnet}h"),
            host_ip: Ipv4Addr::new(10, 213, subnet, 1),
            partitioned: false,
            claim,
        };
        let inner = format!("lbf{short}{subnet}n");
        let host_cidr = format!("{}/30", ns.host_ip);
        let inner_cidr = format!("10.213.{subnet}.2/30");
        crate::register::record(Leftover::Namespace {
            name: ns.name.clone(),
            host_veth: ns.host_veth.clone(),
        });
        run(&["ip", "netns", "add", &ns.name])?;
        // From here on a failure drops `ns`, which removes what exists.
        run(&[
            "ip",
            "link",
            "add",
            &ns.host_veth,
            "type",
            "veth",
            "peer",
            "name",
            &inner,
        ])?;
        run(&["ip", "link", "set", &inner, "netns", &ns.name])?;
        run(&["ip", "addr", "add", &host_cidr, "dev", &ns.host_veth])?;
        run(&["ip", "link", "set", &ns.host_veth, "up"])?;
        ns.exec(&["ip", "addr", "add", &inner_cidr, "dev", &inner])?;
        ns.exec(&["ip", "link", "set", &inner, "up"])?;
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    fn exec(&self, args: &[&str]) -> Result<(), FaultError> {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }

    /// The host end's address: what a server must listen on to be reached from inside.
    pub fn host_ip(&self) -> Ipv4Addr {
        self.host_ip
    }

    /// The namespace end's address: what a server inside listens on to be reached from the host.
    pub fn inner_ip(&self) -> Ipv4Addr {
        let [a, b, c, d] = self.host_ip.octets();
        Ipv4Addr::new(a, b, c, d + 1)
    }

    /// The command prefix that runs a program inside the namespace.
    pub fn prefix(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// The table and its two chains (output and input), empty.
    fn chains(&mut self) -> Result<(), FaultError> {
        self.exec(&["nft", "add", "table", "inet", TABLE])?;
        self.partitioned = true;
        self.exec(&[
            "nft",
            "add",
            "chain",
            "inet",
            TABLE,
            "out",
            "{ type filter hook output priority 0 ; }",
        ])?;
        self.exec(&[
            "nft",
            "add",
            "chain",
            "inet",
            TABLE,
            "in",
            "{ type filter hook input priority 0 ; }",
        ])
    }

    /// Drops every packet that enters or leaves the namespace other than on its loopback: a host
    /// that vanished sends nothing and answers nothing (no FIN, RST or keepalive ACK).
    pub fn vanish(&mut self) -> Result<(), FaultError> {
        self.chains()?;
        self.exec(&[
            "nft", "add", "rule", "inet", TABLE, "out", "oifname", "!=", "lo", "drop",
        ])?;
        self.exec(&[
            "nft", "add", "rule", "inet", TABLE, "in", "iifname", "!=", "lo", "drop",
        ])
    }

    /// Drops every packet between the namespace and `port` on the host end, both ways.
    pub fn partition(&mut self, port: u16) -> Result<(), FaultError> {
        let ip = self.host_ip.to_string();
        let port = port.to_string();
        self.chains()?;
        self.exec(&[
            "nft", "add", "rule", "inet", TABLE, "out", "ip", "daddr", &ip, "tcp", "dport", &port,
            "drop",
        ])?;
        self.exec(&[
            "nft", "add", "rule", "inet", TABLE, "in", "ip", "saddr", &ip, "tcp", "sport", &port,
            "drop",
        ])
    }

    /// Drops every packet between the namespace and the host but TCP to and from `keep` on the
    /// host end (the protected resource's forwarder): what runs inside (a cluster's member, the
    /// holder) keeps talking among itself on loopback and to the resource, and nothing else.
    pub fn isolate_except(&mut self, keep: &[u16]) -> Result<(), FaultError> {
        self.chains()?;
        let ip = self.host_ip.to_string();
        for chain in ["out", "in"] {
            let lo = if chain == "out" { "oifname" } else { "iifname" };
            self.exec(&[
                "nft", "add", "rule", "inet", TABLE, chain, lo, "lo", "accept",
            ])?;
            for port in keep {
                let port = port.to_string();
                let (addr, side) = if chain == "out" {
                    ("daddr", "dport")
                } else {
                    ("saddr", "sport")
                };
                self.exec(&[
                    "nft", "add", "rule", "inet", TABLE, chain, "ip", addr, &ip, "tcp", side,
                    &port, "accept",
                ])?;
            }
            self.exec(&["nft", "add", "rule", "inet", TABLE, chain, "drop"])?;
        }
        Ok(())
    }

    /// Heals the partition (deletes the table).
    pub fn heal(&mut self) -> Result<(), FaultError> {
        if !self.partitioned {
            return Ok(());
        }
        self.partitioned = false;
        self.exec(&["nft", "delete", "table", "inet", TABLE])
    }
}

/// True when a network namespace `name` exists.
pub(crate) fn exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Deletes namespace `name` (its nftables table and its veth end with it, and with that end the
/// host end) and the host end `host_veth` should it remain.
pub(crate) fn delete(name: &str, host_veth: &str) -> Result<(), FaultError> {
    let deleted = run(&["ip", "netns", "del", name]);
    let _ = Command::new("ip").args(["link", "del", host_veth]).output();
    deleted
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = delete(&self.name, &self.host_veth);
        let _ = std::fs::remove_file(&self.claim);
    }
}
