//! The worker's ability to sandbox: where `bwrap` and `prlimit` are, the
//! user commands run as, and whether a sandbox starts here at all, found
//! out once per process by running one.
//!
//! A worker running as root drops each command to an unprivileged uid of
//! its own ([`UID_BASE`] and up, one per concurrent command): the
//! kernel exempts root from the process limit (`RLIMIT_NPROC`), so a fork
//! bomb run as root would not be stopped. A worker that is not root runs
//! commands as itself, and the limit then counts the worker's own threads
//! too.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, lchown};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use deepfleet_proto::{FileData, SandboxSpec};
use tokio::sync::OnceCell;
use tracing::{info, warn};

use super::SandboxError;
use super::bwrap::{self, Invocation, Layout, SystemEntry};
use super::process::{self, End, Outcome, Spawn};
use super::tree::{self, Changes};

/// The first uid commands of a root worker run as.
pub const UID_BASE: u32 = 60_000;
/// How many uids they rotate through: concurrent commands beyond this
/// share a uid, and so a process limit.
pub const UID_SLOTS: u32 = 1_000;
/// The probe's time limit.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// Where commands run, probed on first use.
pub struct SandboxHost {
    search_path: OsString,
    probed: OnceCell<Result<Launcher, String>>,
    next_uid: AtomicU32,
}

/// What a working sandbox needs.
#[derive(Debug, Clone)]
struct Launcher {
    bwrap: PathBuf,
    prlimit: PathBuf,
    system: Vec<SystemEntry>,
    /// Whether commands drop from root to a uid of their own.
    drop_root: bool,
}

/// One command to run, over a copy of the thread's files.
pub struct Request<'a> {
    /// The shell command.
    pub command: &'a str,
    /// Its wall-clock limit.
    pub timeout: Duration,
    /// The spec's limits.
    pub limits: &'a SandboxSpec,
    /// The thread's files.
    pub files: &'a BTreeMap<String, FileData>,
}

/// What came of a command.
#[derive(Debug)]
pub struct Ran {
    /// Its output and end.
    pub outcome: Outcome,
    /// What it did to the files.
    pub changes: Changes,
    /// Thread files it could not see.
    pub hidden: Vec<String>,
}

static SYSTEM: LazyLock<Arc<SandboxHost>> = LazyLock::new(|| {
    Arc::new(SandboxHost::searching(
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
    ))
});

impl SandboxHost {
    /// The process's host: `bwrap` and `prlimit` found on `PATH`, probed
    /// once for the whole process.
    pub fn system() -> Arc<SandboxHost> {
        Arc::clone(&SYSTEM)
    }

    /// A host finding `bwrap` and `prlimit` in `search_path` (a
    /// `PATH`-style list).
    pub fn searching(search_path: impl Into<OsString>) -> Self {
        SandboxHost {
            search_path: search_path.into(),
            probed: OnceCell::new(),
            next_uid: AtomicU32::new(0),
        }
    }

    /// Whether commands can run here; why not, if not. Probes on the
    /// first call only.
    pub async fn available(&self) -> Result<(), String> {
        self.launcher().await.map(drop).map_err(str::to_owned)
    }

    /// Logs whether commands can run here (once, at worker start).
    pub async fn announce(&self) {
        match self.launcher().await {
            Ok(l) => info!(
                bwrap = %l.bwrap.display(),
                drop_root = l.drop_root,
                "sandbox available: agents that declare a sandbox get `execute`"
            ),
            Err(reason) => warn!(
                reason,
                "sandbox unavailable: runs of agents that declare a sandbox will be refused"
            ),
        }
    }

    async fn launcher(&self) -> Result<&Launcher, &str> {
        self.probed
            .get_or_init(|| probe(&self.search_path))
            .await
            .as_ref()
            .map_err(String::as_str)
    }

    /// Runs `request` in a fresh sandbox over a temporary copy of its
    /// files, then reads back what the command did to them.
    pub async fn run(&self, request: Request<'_>) -> Result<Ran, SandboxError> {
        let launcher = self
            .launcher()
            .await
            .map_err(|r| SandboxError::Unavailable(r.to_owned()))?;
        let user = launcher.drop_root.then(|| self.next_user());
        run_in(launcher, user, request).await
    }

    fn next_user(&self) -> u32 {
        UID_BASE + self.next_uid.fetch_add(1, Ordering::Relaxed) % UID_SLOTS
    }
}

/// Finds the binaries and runs `exit 0` in a sandbox as commands would.
async fn probe(search_path: &OsString) -> Result<Launcher, String> {
    let find = |name: &str| {
        std::env::split_paths(search_path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("no `{name}` on the search path (install Debian's `bubblewrap` and `util-linux`)"))
    };
    let launcher = Launcher {
        bwrap: find("bwrap")?,
        prlimit: find("prlimit")?,
        system: bwrap::system_entries(),
        drop_root: std::fs::metadata("/proc/self")
            .map_err(|e| e.to_string())?
            .uid()
            == 0,
    };
    let limits = SandboxSpec::default();
    let request = Request {
        command: "exit 0",
        timeout: PROBE_TIMEOUT,
        limits: &limits,
        files: &BTreeMap::new(),
    };
    let user = launcher.drop_root.then_some(UID_BASE + UID_SLOTS);
    let ran = run_in(&launcher, user, request)
        .await
        .map_err(|e| e.to_string())?;
    match ran.outcome.end {
        End::Exited(0) => Ok(launcher),
        end => Err(format!(
            "a test sandbox did not start ({end}): {}",
            String::from_utf8_lossy(&ran.outcome.output).trim()
        )),
    }
}

async fn run_in(
    launcher: &Launcher,
    user: Option<u32>,
    request: Request<'_>,
) -> Result<Ran, SandboxError> {
    let work = tempfile::Builder::new()
        .prefix("deepfleet-sandbox-")
        .tempdir()
        .map_err(SandboxError::setup)?;
    let layout = Layout {
        tree: work.path().join("tree"),
        etc: work.path().join("etc"),
    };
    let files = request.files.clone();
    let prepared = {
        let layout = layout.clone();
        let root = work.path().to_owned();
        tokio::task::spawn_blocking(move || prepare(&root, &layout, &files, user))
            .await
            .map_err(SandboxError::setup)?
            .map_err(SandboxError::setup)?
    };
    let (before, hidden) = prepared;
    let invocation = Invocation {
        prlimit: &launcher.prlimit,
        bwrap: &launcher.bwrap,
        system: &launcher.system,
        limits: request.limits,
        command: request.command,
    };
    let (program, args) = bwrap::command_line(&invocation, &layout);
    let outcome = process::run(Spawn {
        program: &program,
        args: &args,
        cwd: work.path(),
        user,
        timeout: request.timeout,
        max_output: request.limits.max_output_bytes as usize,
    })
    .await
    .map_err(SandboxError::setup)?;
    let tree_dir = layout.tree.clone();
    let changes = tokio::task::spawn_blocking(move || {
        let changes = tree::collect(&tree_dir, &before);
        drop(work);
        changes
    })
    .await
    .map_err(SandboxError::setup)?;
    Ok(Ran {
        outcome,
        changes,
        hidden,
    })
}

/// The work directory: the tree of files and the generated accounts,
/// owned by the sandbox user.
fn prepare(
    root: &Path,
    layout: &Layout,
    files: &BTreeMap<String, FileData>,
    user: Option<u32>,
) -> std::io::Result<(tree::Before, Vec<String>)> {
    std::fs::create_dir(&layout.tree)?;
    std::fs::create_dir(&layout.etc)?;
    for (name, content) in bwrap::accounts() {
        std::fs::write(layout.etc.join(name), content)?;
    }
    let materialized = tree::materialize(&layout.tree, files, user)?;
    if let Some(uid) = user {
        for path in [root, &layout.tree, &layout.etc] {
            lchown(path, Some(uid), Some(uid))?;
        }
    }
    Ok(materialized)
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
