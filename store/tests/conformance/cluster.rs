//! A throw-away three-node Redis Cluster, started once per test binary.
//!
//! The cluster lives in a static so every test shares it, and statics are
//! never dropped: besides the `Drop` guard (which cleans up a start that
//! fails half-way), a small watchdog process kills the servers and removes
//! their directory once this test process has exited, passed or failed.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;

/// Running servers, killed on drop.
pub struct Cluster {
    pub ports: Vec<u16>,
    children: Vec<Child>,
    dir: TempDir,
}

impl Cluster {
    /// `redis+cluster://` URL of the nodes.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();

/// The shared cluster, started on first use; `Err` says why it could not
/// start.
pub fn shared() -> Result<&'static Cluster, &'static str> {
    CLUSTER
        .get_or_init(|| {
            let mut last = String::new();
            // Another test run may grab a port between our probe and the
            // server's bind, so try a few port sets.
            for _ in 0..3 {
                match start() {
                    Ok(cluster) => return Ok(cluster),
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
        .as_ref()
        .map_err(String::as_str)
}

fn start() -> Result<Cluster, String> {
    for binary in ["redis-server", "redis-cli"] {
        Command::new(binary)
            .arg("--version")
            .output()
            .map_err(|e| format!("{binary} is not available ({e}); install redis-server"))?;
    }
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let ports = free_ports(3)?;
    let mut cluster = Cluster {
        ports: ports.clone(),
        children: Vec::new(),
        dir,
    };
    let dir = cluster.dir.path().to_owned();
    for port in &ports {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes", "--cluster-config-file"])
            .arg(dir.join(format!("nodes-{port}.conf")))
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join(format!("redis-{port}.log")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn redis-server: {e}"))?;
        cluster.children.push(child);
    }
    cluster.children.push(watchdog(&cluster, &dir)?);
    for port in &ports {
        wait_for(&dir, *port, &["ping"], "PONG")?;
    }
    let nodes: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&nodes)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .map_err(|e| format!("redis-cli --cluster create: {e}"))?;
    if !created.status.success() {
        return Err(format!(
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&created.stdout)
        ));
    }
    for port in &ports {
        wait_for(&dir, *port, &["cluster", "info"], "cluster_state:ok")?;
    }
    Ok(cluster)
}

/// A process that outlives this one by at most a second: it kills the
/// servers and removes their directory once this process is gone.
fn watchdog(cluster: &Cluster, dir: &Path) -> Result<Child, String> {
    let pids: Vec<String> = cluster
        .children
        .iter()
        .map(|c| c.id().to_string())
        .collect();
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 1; done; kill {pids} 2>/dev/null; sleep 1; rm -rf '{dir}'",
        me = std::process::id(),
        pids = pids.join(" "),
        dir = dir.display(),
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn watchdog: {e}"))
}

/// Polls `redis-cli -p port args` until its output contains `want`.
fn wait_for(dir: &Path, port: u16, args: &[&str], want: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .output()
            .map_err(|e| format!("redis-cli: {e}"))?;
        if String::from_utf8_lossy(&out.stdout).contains(want) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let log =
                std::fs::read_to_string(dir.join(format!("redis-{port}.log"))).unwrap_or_default();
            return Err(format!("node {port}: no {want:?} after 20 s; log:\n{log}"));
        }
        sleep(Duration::from_millis(100));
    }
}

/// Ports `p` where `p` and its cluster bus port `p + 10000` are free.
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default()
        ^ std::process::id();
    // In 20000..50000, so the bus port stays below 65536.
    let mut ports = Vec::new();
    for offset in 0..30_000 {
        let port =
            u16::try_from(20_000 + (seed % 30_000 + offset) % 30_000).map_err(|e| e.to_string())?;
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(port) && free(port + 10_000) {
            ports.push(port);
            if ports.len() == n {
                return Ok(ports);
            }
        }
    }
    Err("no free ports".into())
}
