//! The command line of one sandboxed command: `prlimit` setting the
//! resource limits, then `bwrap` building the sandbox, then `/bin/sh -c`.
//!
//! Pure: [`command_line`] turns the paths and limits into arguments, so
//! what the sandbox sees is tested without running it. The work tree is
//! bound read-write as `/`, so a thread file `/src/app.py` is
//! `/src/app.py` for commands too; the host's system directories are
//! bound read-only over it, `/proc`, `/dev` and `/tmp` are fresh, and
//! `/etc` is a read-only tmpfs with only what programs need to start
//! (no `shadow`, no host accounts). Every namespace is unshared (the
//! network too unless the spec allows it), the environment is cleared,
//! and the sandbox dies with the worker.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use deepfleet_proto::SandboxSpec;

/// The user commands run as inside the sandbox (any host uid maps to it).
pub const INSIDE_UID: u32 = 1_000;
/// Its home: scratch space, as nothing there is kept.
pub const HOME: &str = "/tmp";
/// The search path commands get.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
/// Processes `bwrap` itself holds under the command's process limit (the
/// outer one and the namespace's init).
pub const BWRAP_PROCESSES: u32 = 2;
/// The largest file a command may write (`RLIMIT_FSIZE`): the largest a
/// thread file read back may be.
pub const MAX_FILE_BYTES: u64 = crate::backend::disk::MAX_FILE_BYTES;
/// Open files per process.
const MAX_OPEN_FILES: u32 = 1_024;

/// `/etc` entries of the host every command gets, when they exist: the
/// dynamic linker's cache and Debian's alternatives (`awk`, `editor`, ...
/// are links through it).
const ETC_ALWAYS: &[&str] = &["alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d"];
/// `/etc` entries for name resolution and TLS, only with the network.
const ETC_NETWORK: &[&str] = &[
    "resolv.conf",
    "hosts",
    "nsswitch.conf",
    "gai.conf",
    "host.conf",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
];

/// A top-level system entry of the host, as the sandbox mirrors it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemEntry {
    /// A directory, bound read-only (`/usr`, or `/bin` before merged-usr).
    Dir(String),
    /// A symlink, recreated with the same target (`/bin -> usr/bin`).
    Link(String, PathBuf),
}

/// The host's system entries among `/usr`, `/bin`, `/sbin` and the
/// `/lib*` directories.
pub fn system_entries() -> Vec<SystemEntry> {
    ["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"]
        .into_iter()
        .filter_map(|name| {
            let host = Path::new("/").join(name);
            let meta = std::fs::symlink_metadata(&host).ok()?;
            if meta.file_type().is_symlink() {
                Some(SystemEntry::Link(
                    name.to_owned(),
                    std::fs::read_link(&host).ok()?,
                ))
            } else if meta.is_dir() {
                Some(SystemEntry::Dir(name.to_owned()))
            } else {
                None
            }
        })
        .collect()
}

/// Where one command's files are on the host.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The work tree, seen as `/`.
    pub tree: PathBuf,
    /// The generated `passwd` and `group` files.
    pub etc: PathBuf,
}

/// What runs, and under which limits.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The `prlimit` binary.
    pub prlimit: &'a Path,
    /// The `bwrap` binary.
    pub bwrap: &'a Path,
    /// The system entries to mirror.
    pub system: &'a [SystemEntry],
    /// The spec's limits.
    pub limits: &'a SandboxSpec,
    /// The shell command.
    pub command: &'a str,
}

/// The program and arguments of `invocation` over `layout`.
pub fn command_line(invocation: &Invocation<'_>, layout: &Layout) -> (PathBuf, Vec<OsString>) {
    let limits = invocation.limits;
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |parts: &[&dyn AsRef<std::ffi::OsStr>]| {
        args.extend(parts.iter().map(|p| p.as_ref().to_owned()));
    };
    let memory = u64::from(limits.memory_mb) * 1024 * 1024;
    let processes = limits.max_processes + BWRAP_PROCESSES;
    push(&[
        &format!(
            "--cpu={}:{}",
            limits.cpu_secs,
            limits.cpu_secs.saturating_add(1)
        ),
        &format!("--as={memory}:{memory}"),
        &format!("--fsize={MAX_FILE_BYTES}:{MAX_FILE_BYTES}"),
        &format!("--nproc={processes}:{processes}"),
        &format!("--nofile={MAX_OPEN_FILES}:{MAX_OPEN_FILES}"),
        &"--core=0:0",
        &"--",
        &invocation.bwrap,
    ]);
    push(&[&"--unshare-all", &"--unshare-user"]);
    if limits.network {
        push(&[&"--share-net"]);
    }
    let uid = INSIDE_UID.to_string();
    push(&[
        &"--die-with-parent",
        &"--new-session",
        &"--uid",
        &uid,
        &"--gid",
        &uid,
        &"--hostname",
        &"sandbox",
        &"--bind",
        &layout.tree,
        &"/",
    ]);
    for entry in invocation.system {
        match entry {
            SystemEntry::Dir(name) => {
                let path = format!("/{name}");
                push(&[&"--ro-bind", &path, &path]);
            }
            SystemEntry::Link(name, target) => {
                push(&[&"--symlink", target, &format!("/{name}")]);
            }
        }
    }
    push(&[
        &"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp", &"--tmpfs", &"/etc",
    ]);
    let network: &[&str] = if limits.network { ETC_NETWORK } else { &[] };
    for name in ETC_ALWAYS.iter().chain(network) {
        let path = format!("/etc/{name}");
        push(&[&"--ro-bind-try", &path, &path]);
    }
    for name in ["passwd", "group"] {
        push(&[
            &"--ro-bind",
            &layout.etc.join(name),
            &format!("/etc/{name}"),
        ]);
    }
    push(&[
        &"--remount-ro",
        &"/etc",
        &"--chdir",
        &"/",
        &"--clearenv",
        &"--setenv",
        &"PATH",
        &PATH,
        &"--setenv",
        &"HOME",
        &HOME,
        &"--setenv",
        &"TMPDIR",
        &"/tmp",
        &"--setenv",
        &"LANG",
        &"C.UTF-8",
        &"--setenv",
        &"USER",
        &"user",
        &"--",
        &"/bin/sh",
        &"-c",
        &invocation.command,
    ]);
    (invocation.prlimit.to_owned(), args)
}

/// The `passwd` and `group` files of the sandbox: root and the one user.
pub fn accounts() -> [(&'static str, String); 2] {
    [
        (
            "passwd",
            format!(
                "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n\
                 user:x:{INSIDE_UID}:{INSIDE_UID}:sandbox user:{HOME}:/bin/sh\n"
            ),
        ),
        ("group", format!("root:x:0:\nuser:x:{INSIDE_UID}:\n")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn line(limits: &SandboxSpec) -> Vec<String> {
        let invocation = Invocation {
            prlimit: Path::new("/usr/bin/prlimit"),
            bwrap: Path::new("/usr/bin/bwrap"),
            system: &[
                SystemEntry::Dir("usr".to_owned()),
                SystemEntry::Link("bin".to_owned(), PathBuf::from("usr/bin")),
            ],
            limits,
            command: "echo hi",
        };
        let layout = Layout {
            tree: PathBuf::from("/w/tree"),
            etc: PathBuf::from("/w/etc"),
        };
        let (program, args) = command_line(&invocation, &layout);
        assert_eq!(program, Path::new("/usr/bin/prlimit"));
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn limits_come_first_then_an_isolated_sandbox_then_the_shell() {
        let limits = SandboxSpec {
            memory_mb: 64,
            max_processes: 8,
            cpu_secs: 5,
            ..SandboxSpec::default()
        };
        let args = line(&limits).join(" ");
        assert_eq!(
            args,
            "--cpu=5:6 --as=67108864:67108864 --fsize=10485760:10485760 --nproc=10:10 \
             --nofile=1024:1024 --core=0:0 -- /usr/bin/bwrap \
             --unshare-all --unshare-user --die-with-parent --new-session --uid 1000 --gid 1000 \
             --hostname sandbox --bind /w/tree / --ro-bind /usr /usr --symlink usr/bin /bin \
             --proc /proc --dev /dev --tmpfs /tmp --tmpfs /etc \
             --ro-bind-try /etc/alternatives /etc/alternatives \
             --ro-bind-try /etc/ld.so.cache /etc/ld.so.cache \
             --ro-bind-try /etc/ld.so.conf /etc/ld.so.conf \
             --ro-bind-try /etc/ld.so.conf.d /etc/ld.so.conf.d \
             --ro-bind /w/etc/passwd /etc/passwd --ro-bind /w/etc/group /etc/group \
             --remount-ro /etc --chdir / --clearenv --setenv PATH \
             /usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin --setenv HOME /tmp --setenv TMPDIR /tmp \
             --setenv LANG C.UTF-8 --setenv USER user -- /bin/sh -c echo hi"
        );
    }

    #[test]
    fn the_network_and_its_etc_files_come_only_when_the_spec_allows_it() {
        let off = line(&SandboxSpec::default());
        assert!(
            !off.iter()
                .any(|a| a == "--share-net" || a.contains("resolv.conf"))
        );
        let on = line(&SandboxSpec {
            network: true,
            ..SandboxSpec::default()
        });
        assert!(on.iter().any(|a| a == "--share-net"));
        assert!(on.iter().any(|a| a == "/etc/resolv.conf"));
        assert!(on.iter().any(|a| a == "--unshare-all"));
    }
}
