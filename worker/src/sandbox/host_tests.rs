//! The sandbox's promises, on this machine's bubblewrap. Without one the
//! tests are skipped with a note, and fail under `CI=true` (the test
//! setup, `scripts/services.sh`, installs it).

use super::*;
use chrono::Utc;
use pretty_assertions::assert_eq;

/// A host of its own whose commands run as uids from `first_slot` on, so
/// tests running at once do not share a process limit; `None` (skipped)
/// where this machine cannot sandbox, outside CI.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
async fn host(first_slot: u32) -> Option<SandboxHost> {
    let host = SandboxHost::searching(std::env::var_os("PATH").unwrap_or_default());
    match host.available().await {
        Ok(()) => {
            host.next_uid.store(first_slot, Ordering::Relaxed);
            Some(host)
        }
        Err(reason) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the sandbox tests need bubblewrap (apt-get install bubblewrap): {reason}"
            );
            eprintln!("skipping: no sandbox here: {reason}");
            None
        }
    }
}

async fn run(
    host: &SandboxHost,
    command: &str,
    limits: &SandboxSpec,
    files: &[(&str, &str)],
    timeout: Duration,
) -> Ran {
    let files: BTreeMap<String, FileData> = files
        .iter()
        .map(|(p, c)| ((*p).to_owned(), FileData::text(*c, Utc::now())))
        .collect();
    let request = Request {
        command,
        timeout,
        limits,
        files: &files,
    };
    host.run(request).await.unwrap()
}

fn text(ran: &Ran) -> String {
    String::from_utf8_lossy(&ran.outcome.output).into_owned()
}

const SECS_10: Duration = Duration::from_secs(10);

#[tokio::test]
async fn commands_see_the_thread_files_at_their_paths_and_their_changes_come_back() {
    let Some(host) = host(100).await else { return };
    let ran = run(
        &host,
        "cat /in.txt; cat in.txt; pwd; echo out > /out.txt; mkdir -p d; echo y > d/y; rm /in.txt; echo scratch > /tmp/t",
        &SandboxSpec::default(),
        &[("/in.txt", "hello\n")],
        SECS_10,
    )
    .await;
    assert_eq!(text(&ran), "hello\nhello\n/\n");
    assert_eq!(ran.outcome.end, End::Exited(0));
    assert_eq!(
        ran.changes,
        Changes {
            written: [
                ("/d/y".to_owned(), "y\n".to_owned()),
                ("/out.txt".to_owned(), "out\n".to_owned())
            ]
            .into(),
            deleted: vec!["/in.txt".to_owned()],
            notes: Vec::new(),
        }
    );
}

#[tokio::test]
async fn no_host_file_account_or_environment_variable_reaches_a_command() {
    let Some(host) = host(200).await else { return };
    let ran = run(
        &host,
        "cat /etc/shadow; ls /root /home /work; ls /etc; id; env | sort; tr '\\0' '\\n' < /proc/1/environ",
        &SandboxSpec::default(),
        &[],
        SECS_10,
    )
    .await;
    assert_eq!(
        text(&ran),
        "cat: /etc/shadow: No such file or directory\n\
         ls: cannot access '/root': No such file or directory\n\
         ls: cannot access '/home': No such file or directory\n\
         ls: cannot access '/work': No such file or directory\n\
         alternatives\ngroup\nld.so.cache\nld.so.conf\nld.so.conf.d\npasswd\n\
         uid=1000(user) gid=1000(user) groups=1000(user)\n\
         HOME=/tmp\nLANG=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\nPWD=/\nTMPDIR=/tmp\nUSER=user\n"
    );
}

#[tokio::test]
async fn no_address_is_reachable_without_the_network_setting() {
    let Some(host) = host(300).await else { return };
    let connect = "perl -MIO::Socket::INET -e 'for (@ARGV) { IO::Socket::INET->new(PeerAddr => $_, Timeout => 3) ? print \"$_ connected\\n\" : print \"$_ refused: $!\\n\" }' 127.0.0.1:6379 1.1.1.1:53";
    let ran = run(&host, connect, &SandboxSpec::default(), &[], SECS_10).await;
    assert_eq!(
        text(&ran),
        "127.0.0.1:6379 refused: Connection refused\n1.1.1.1:53 refused: Network is unreachable\n"
    );
    let ran = run(
        &host,
        "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '",
        &SandboxSpec::default(),
        &[],
        SECS_10,
    )
    .await;
    assert_eq!(text(&ran), "lo\n");
}

/// The command lines of the host's processes that run as `uid`.
fn processes_of(uid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.uid() == uid && entry.file_name().to_string_lossy().parse::<u32>().is_ok() {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

/// The processes still running as `uid` once those of a killed sandbox
/// had a few seconds to be reaped.
async fn gone(uid: u32) -> Vec<String> {
    for _ in 0..50 {
        if processes_of(uid).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    processes_of(uid)
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_with_everything_it_started() {
    let Some(host) = host(400).await else { return };
    let started = std::time::Instant::now();
    let ran = run(
        &host,
        "echo before; (setsid sleep 1234 &); sleep 1235 & sleep 1236",
        &SandboxSpec::default(),
        &[],
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(
        (text(&ran), ran.outcome.end),
        ("before\n".to_owned(), End::TimedOut)
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    if host.launcher().await.unwrap().drop_root {
        assert_eq!(gone(UID_BASE + 400).await, Vec::<String>::new());
    }
}

#[tokio::test]
async fn memory_past_the_limit_cannot_be_had() {
    let Some(host) = host(500).await else { return };
    let limits = SandboxSpec {
        memory_mb: 64,
        ..SandboxSpec::default()
    };
    let alloc = |mb: u32| {
        format!(
            "perl -e '$n = shift; $x = q(a) x ($n * 1024 * 1024); print qq(got $n MiB\\n)' {mb}"
        )
    };
    let ran = run(&host, &alloc(8), &limits, &[], SECS_10).await;
    assert_eq!(
        (text(&ran), ran.outcome.end),
        ("got 8 MiB\n".to_owned(), End::Exited(0))
    );
    let ran = run(&host, &alloc(256), &limits, &[], SECS_10).await;
    assert_eq!(text(&ran), "Out of memory!\n");
    assert_ne!(ran.outcome.end, End::Exited(0));
}

#[tokio::test]
async fn a_fork_bomb_stays_within_the_process_limit_and_dies_with_its_sandbox() {
    let Some(host) = host(600).await else { return };
    let drop_root = host.launcher().await.unwrap().drop_root;
    let uid = UID_BASE + 600;
    let limits = SandboxSpec {
        max_processes: 16,
        ..SandboxSpec::default()
    };
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watch = {
        let watching = std::sync::Arc::clone(&watching);
        std::thread::spawn(move || {
            let mut most = 0;
            while watching.load(Ordering::Relaxed) {
                most = most.max(processes_of(uid).len());
                std::thread::sleep(Duration::from_millis(20));
            }
            most
        })
    };
    // Forks for ever, each child holding its slot, and never gives up.
    let bomb = "perl -e '$| = 1; while (1) { my $pid = fork; if (!defined $pid) { $failed++ or print qq(fork: $!\\n) } elsif ($pid == 0) { sleep 1000; exit } }'";
    let ran = run(&host, bomb, &limits, &[], Duration::from_secs(3)).await;
    watching.store(false, Ordering::Relaxed);
    let most = watch.join().unwrap();
    assert_eq!(ran.outcome.end, End::TimedOut);
    assert_eq!(text(&ran), "fork: Resource temporarily unavailable\n");
    if drop_root {
        // bwrap's own two processes, and the command's sixteen.
        assert!((16..=18).contains(&most), "{most} processes at once");
        assert_eq!(gone(uid).await, Vec::<String>::new());
    }
    let after = run(&host, "echo alive", &SandboxSpec::default(), &[], SECS_10).await;
    assert_eq!(text(&after), "alive\n");
}

#[tokio::test]
async fn output_is_capped() {
    let Some(host) = host(700).await else { return };
    let limits = SandboxSpec {
        max_output_bytes: 1_000,
        ..SandboxSpec::default()
    };
    let ran = run(&host, "seq 1 100000", &limits, &[], SECS_10).await;
    assert_eq!(
        (ran.outcome.output.len(), ran.outcome.truncated),
        (1_000, true)
    );
    assert_eq!(ran.outcome.end, End::Exited(0));
}

/// A `bwrap` that cannot create namespaces (as in a container whose
/// seccomp profile forbids them) fails the probe with its own words.
#[tokio::test]
async fn a_bubblewrap_that_cannot_sandbox_fails_the_probe_with_its_message() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bwrap = dir.path().join("bwrap");
    std::fs::write(
        &bwrap,
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The sandbox user of a root worker must reach it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let prlimit = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("prlimit"))
        .find(|p| p.is_file())
        .expect("prlimit (util-linux) on PATH");
    std::os::unix::fs::symlink(prlimit, dir.path().join("prlimit")).unwrap();
    let host = SandboxHost::searching(dir.path());
    assert_eq!(
        host.available().await,
        Err("a test sandbox did not start (exit code 1): bwrap: No permissions to create a new namespace".to_owned())
    );
}

#[tokio::test]
async fn a_host_without_bubblewrap_says_so() {
    let host = SandboxHost::searching("/nonexistent");
    assert_eq!(
        host.available().await,
        Err(
            "no `bwrap` on the search path (install Debian's `bubblewrap` and `util-linux`)"
                .to_owned()
        )
    );
    let files = BTreeMap::new();
    let request = Request {
        command: "true",
        timeout: SECS_10,
        limits: &SandboxSpec::default(),
        files: &files,
    };
    assert!(matches!(
        host.run(request).await,
        Err(SandboxError::Unavailable(_))
    ));
}

/// Log lines written by a test's subscriber.
#[derive(Clone, Default)]
struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `announce` logs on `host` (a worker's first lines).
async fn announced(host: &SandboxHost) -> String {
    use tracing::instrument::WithSubscriber;
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .finish();
    host.announce().with_subscriber(subscriber).await;
    let bytes = logs.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// A worker says at start-up whether it can sandbox, and why not.
#[tokio::test]
async fn a_worker_says_at_start_up_whether_it_can_sandbox() {
    assert_eq!(
        announced(&SandboxHost::searching("/nonexistent")).await,
        " WARN sandbox unavailable: runs of agents that declare a sandbox will be refused \
         reason=\"no `bwrap` on the search path (install Debian's `bubblewrap` and `util-linux`)\"\n"
    );
    let Some(host) = host(800).await else { return };
    let line = announced(&host).await;
    assert!(
        line.starts_with(" INFO sandbox available: agents that declare a sandbox get `execute`"),
        "{line}"
    );
}
