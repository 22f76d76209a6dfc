//! The baseline: a Docker action container per action container, driven through the `docker`
//! CLI with the steps and flags of OpenWhisk's Docker container factory (`docker run -d` with
//! cpu shares, memory = memory-swap, network, dropped capabilities, ulimit, pids limit and a
//! name; `docker inspect` for the address; /init retried until the proxy listens; /run;
//! `docker pause`/`unpause` while idle; `docker rm -f`). Images come from eval/baseline.

use std::{
    collections::HashSet,
    net::{IpAddr, SocketAddr},
    process::{Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{Action, Container, Platform, RunEndpoint, RunResult, wasm::sanitize};
use crate::http::{Client, ConnMode};

/// Port of OpenWhisk's action runtime proxy inside the container.
const PROXY_PORT: u16 = 8080;
/// How long a new container may take until its proxy accepts /init.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between /init attempts while the proxy is not listening yet.
const INIT_RETRY: Duration = Duration::from_millis(5);
/// Memory per container (OpenWhisk's default action memory) and its cpu share of an invoker
/// with 1024 MB of user memory (`ContainerPoolConfig.cpuShare`: 1024 / (1024 MB / 256 MB)).
const MEMORY_MB: u64 = 256;
const CPU_SHARES: u64 = 256;

pub struct DockerPlatform {
    image_prefix: String,
    gateway: IpAddr,
    next_id: AtomicU64,
    /// Containers created and not removed yet: removed when the platform is dropped.
    live: Live,
}

type Live = Arc<Mutex<HashSet<String>>>;

impl DockerPlatform {
    /// Checks the engine answers and every module has its image `<prefix>/<module>`.
    pub fn connect(image_prefix: &str, modules: &[String]) -> anyhow::Result<DockerPlatform> {
        docker(&["info", "--format", "{{.ServerVersion}}"])
            .context("no Docker engine answers (start one with eval/baseline/dockerd.sh start)")?;
        for module in modules {
            let image = format!("{image_prefix}/{module}");
            docker(&["image", "inspect", "--format", "{{.Id}}", &image]).with_context(|| {
                format!("image {image} is missing (build it with eval/baseline/build-images.sh)")
            })?;
        }
        let ipam = docker(&[
            "network",
            "inspect",
            "bridge",
            "--format",
            "{{(index .IPAM.Config 0).Subnet}} {{(index .IPAM.Config 0).Gateway}}",
        ])?;
        let gateway = bridge_gateway(&ipam)
            .with_context(|| format!("the bridge network's address (IPAM: {ipam:?})"))?;
        // The engine (and the shims it starts from now on) on the platforms' CPUs.
        for pid in engine_pids() {
            crate::affinity::pin_process(pid)?;
        }
        Ok(DockerPlatform {
            image_prefix: image_prefix.to_owned(),
            gateway,
            next_id: AtomicU64::new(0),
            live: Live::default(),
        })
    }
}

/// The host's address on the bridge network from `docker network inspect`'s "SUBNET GATEWAY":
/// the gateway when the engine reports one (an engine that has just created its bridge may
/// not), else Docker's default, the first host address of the subnet.
fn bridge_gateway(ipam: &str) -> anyhow::Result<IpAddr> {
    let mut fields = ipam.split_whitespace();
    let subnet = fields.next().context("no subnet")?;
    if let Some(gateway) = fields.next() {
        return gateway.parse().context("gateway");
    }
    let (network, _prefix) = subnet.split_once('/').context("subnet without a prefix")?;
    let network: std::net::Ipv4Addr = network.parse().context("IPv4 subnet")?;
    Ok(IpAddr::V4((u32::from(network) + 1).into()))
}

fn forget(live: &Live, id: &str) {
    live.lock().expect("live set").remove(id);
}

impl Drop for DockerPlatform {
    fn drop(&mut self) {
        let live: Vec<String> = self.live.lock().expect("live set").drain().collect();
        if !live.is_empty() {
            tracing::info!(containers = live.len(), "removing leftover containers");
            let mut args = vec!["rm", "-f"];
            args.extend(live.iter().map(String::as_str));
            if let Err(error) = docker(&args) {
                tracing::warn!(%error, "could not remove leftover containers");
            }
        }
    }
}

impl Platform for DockerPlatform {
    fn name(&self) -> &str {
        "docker"
    }

    fn create(&self, action: &Action) -> anyhow::Result<Box<dyn Container>> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let name = format!("wskeval_{n}_{}", sanitize(&action.name));
        let image = format!("{}/{}", self.image_prefix, action.module);
        let memory = format!("{MEMORY_MB}m");
        let shares = CPU_SHARES.to_string();
        let api_host = format!("__OW_API_HOST=http://{}:3233", self.gateway);
        let cpuset = crate::affinity::platform_cpuset();
        let mut run = vec!["run", "-d"];
        if let Some(cpus) = &cpuset {
            run.extend(["--cpuset-cpus", cpus.as_str()]);
        }
        run.extend([
            "--cpu-shares",
            &shares,
            "--memory",
            &memory,
            "--memory-swap",
            &memory,
            "--network",
            "bridge",
            "-e",
            &api_host,
            "--name",
            &name,
            "--cap-drop",
            "NET_RAW",
            "--cap-drop",
            "NET_ADMIN",
            "--ulimit",
            "nofile=1024:1024",
            "--pids-limit",
            "1024",
            &image,
        ]);
        let id = docker(&run)?.trim().to_owned();
        self.live.lock().expect("live set").insert(id.clone());
        let addr = SocketAddr::new(inspect_ip(&id)?, PROXY_PORT);
        let container = DockerContainer {
            id,
            endpoint: RunEndpoint {
                addr,
                path: "/run".into(),
                action: action.name.clone(),
            },
        };
        if let Err(error) = container.init() {
            let _ = docker(&["rm", "-f", &container.id]);
            forget(&self.live, &container.id);
            return Err(error);
        }
        Ok(Box::new(TrackedContainer {
            inner: container,
            live: Arc::clone(&self.live),
        }))
    }

    fn host_address(&self) -> IpAddr {
        self.gateway
    }

    fn suspends(&self) -> bool {
        true
    }

    fn own_memory(&self) -> Option<u64> {
        Some(
            engine_pids()
                .into_iter()
                .filter_map(crate::rss::rss_bytes)
                .sum(),
        )
    }

    fn own_cpu_ns(&self) -> Option<u64> {
        Some(
            engine_pids()
                .into_iter()
                .map(crate::cpu::process_cpu_ns)
                .sum(),
        )
    }
}

/// The engine's own processes (dockerd and containerd, not the shims).
fn engine_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| matches!(comm.trim(), "dockerd" | "containerd"))
        })
        .collect()
}

/// `docker inspect` of the container's address on the bridge network.
fn inspect_ip(id: &str) -> anyhow::Result<IpAddr> {
    let ip = docker(&[
        "inspect",
        "--format",
        "{{.NetworkSettings.Networks.bridge.IPAddress}}",
        id,
    ])?;
    ip.trim()
        .parse()
        .with_context(|| format!("container {id} has no bridge address ({ip:?})"))
}

struct DockerContainer {
    id: String,
    /// The proxy's /run.
    endpoint: RunEndpoint,
}

impl DockerContainer {
    /// /init, retried while the proxy does not accept connections yet (as the invoker does).
    fn init(&self) -> anyhow::Result<()> {
        let body = serde_json::to_vec(&serde_json::json!({"value": {
            "name": self.endpoint.action, "main": "main", "binary": false, "code": "",
        }}))?;
        let started = Instant::now();
        loop {
            match Client::new(self.endpoint.addr, ConnMode::New).post("/init", &body) {
                Ok(response) if response.status == 200 => return Ok(()),
                Ok(response) => bail!(
                    "/init of container {} answered {}: {}",
                    self.id,
                    response.status,
                    response.text()
                ),
                Err(error) if started.elapsed() > START_TIMEOUT => {
                    return Err(error.context(format!(
                        "container {} did not accept /init within {START_TIMEOUT:?}",
                        self.id
                    )));
                }
                Err(_) => std::thread::sleep(INIT_RETRY),
            }
        }
    }
}

/// A container that tells its platform when it is gone.
struct TrackedContainer {
    inner: DockerContainer,
    live: Live,
}

impl Container for TrackedContainer {
    fn run(&self, params: &Value) -> anyhow::Result<RunResult> {
        self.inner.endpoint.run(params)
    }

    fn endpoint(&self) -> Option<&RunEndpoint> {
        Some(&self.inner.endpoint)
    }

    fn suspend(&self) -> anyhow::Result<()> {
        docker(&["pause", &self.inner.id]).map(drop)
    }

    fn resume(&self) -> anyhow::Result<()> {
        docker(&["unpause", &self.inner.id]).map(drop)
    }

    fn remove(self: Box<Self>) -> anyhow::Result<()> {
        let removed = docker(&["rm", "-f", &self.inner.id]).map(drop);
        forget(&self.live, &self.inner.id);
        removed
    }

    fn memory(&self) -> Option<u64> {
        let cgroup = cgroup_memory(&self.inner.id);
        let shim = shim_pid(&self.inner.id).and_then(crate::rss::rss_bytes);
        cgroup.map(|c| c + shim.unwrap_or(0))
    }

    fn cpu_ns(&self) -> Option<u64> {
        let shim = shim_pid(&self.inner.id).map_or(0, crate::cpu::process_cpu_ns);
        cgroup_cpu_ns(&self.inner.id).map(|cgroup| cgroup + shim)
    }
}

/// Runs the docker CLI; its stdout, or an error with its stderr.
fn docker(args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running the docker CLI")?;
    if !output.status.success() {
        bail!(
            "docker {} failed ({}): {}",
            args.first().copied().unwrap_or_default(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The container's memory as `docker stats` counts it: usage minus inactive page cache
/// (cgroup v1 with the cgroupfs driver, or cgroup v2).
fn cgroup_memory(id: &str) -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let stat_field = |stat: &str, name: &str| {
        stat.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    let v1 = format!("/sys/fs/cgroup/memory/docker/{id}");
    if let Some(usage) = read(&format!("{v1}/memory.usage_in_bytes")) {
        let usage: u64 = usage.trim().parse().ok()?;
        let inactive = read(&format!("{v1}/memory.stat"))
            .and_then(|s| stat_field(&s, "total_inactive_file"))
            .unwrap_or(0);
        return Some(usage.saturating_sub(inactive));
    }
    let v2 = format!("/sys/fs/cgroup/docker/{id}");
    let usage: u64 = read(&format!("{v2}/memory.current"))?.trim().parse().ok()?;
    let inactive = read(&format!("{v2}/memory.stat"))
        .and_then(|s| stat_field(&s, "inactive_file"))
        .unwrap_or(0);
    Some(usage.saturating_sub(inactive))
}

/// CPU time of the container's processes (its cgroup; cgroup v1 with the cgroupfs driver, or
/// cgroup v2), in ns.
fn cgroup_cpu_ns(id: &str) -> Option<u64> {
    let read = |path: String| std::fs::read_to_string(path).ok();
    if let Some(usage) = read(format!("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage")) {
        return usage.trim().parse().ok();
    }
    let stat = read(format!("/sys/fs/cgroup/docker/{id}/cpu.stat"))?;
    let usec: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())?;
    Some(usec * 1000)
}

/// The container's containerd shim (one per container), which the host pays for besides the
/// container's own cgroup.
fn shim_pid(id: &str) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let is_shim = args
            .first()
            .is_some_and(|a| a.windows(15).any(|w| w == b"containerd-shim"));
        if is_shim
            && args
                .windows(2)
                .any(|w| w[0] == b"-id" && w[1] == id.as_bytes())
        {
            return Some(pid);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bridge_gateway_is_reported_or_derived_from_the_subnet() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            bridge_gateway("172.17.0.0/16 172.17.0.1\n").unwrap(),
            ip("172.17.0.1")
        );
        assert_eq!(
            bridge_gateway("172.18.0.0/16 \n").unwrap(),
            ip("172.18.0.1")
        );
        assert!(bridge_gateway("\n").is_err());
    }
}
