//! A container of a rendered Deployment run from the unpacked image under
//! bubblewrap, as the kubelet would start it: the image's entrypoint (or
//! the container's `command`) with the container's `args` (or the image's
//! cmd), the image's environment under the container's, the pod's user,
//! the root filesystem read-only when the container asks for it, the
//! volumes at their mount paths, the working directory of the image. The
//! process is PID 1 of its own PID namespace, as in a pod; the network is
//! the host's, so it reaches the local RabbitMQ and Redis and the probes
//! reach its ports on 127.0.0.1.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::chart::{Container, Source};
use crate::oci::ImageConfig;

/// A sandboxed container process; killed if the test ends before it
/// exits, and its log's end printed when the test fails.
pub struct Pod {
    name: String,
    child: Child,
    info: PathBuf,
    log: PathBuf,
}

/// The argv the container runtime runs (Kubernetes' command/args rules).
fn argv(image: &ImageConfig, container: &Container) -> Vec<String> {
    match (&container.command, &container.args) {
        (Some(command), args) => [command.clone(), args.clone().unwrap_or_default()].concat(),
        (None, Some(args)) => [image.entrypoint.clone(), args.clone()].concat(),
        (None, None) => [image.entrypoint.clone(), image.cmd.clone()].concat(),
    }
}

/// The image's environment, each variable the container sets replacing it.
fn environment(image: &ImageConfig, container: &Container) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = image
        .env
        .iter()
        .filter(|(name, _)| container.env.iter().all(|(n, _)| n != name))
        .cloned()
        .collect();
    env.extend(container.env.iter().cloned());
    env
}

/// The pod's user, else the image's (`uid[:gid]`, numeric).
fn user(image: &ImageConfig, container: &Container) -> (u32, u32) {
    container.run_as.unwrap_or_else(|| {
        let (uid, gid) = image
            .user
            .split_once(':')
            .unwrap_or((&image.user, &image.user));
        (uid.parse().unwrap(), gid.parse().unwrap())
    })
}

impl Pod {
    /// Starts `container` of the image unpacked at `rootfs`; its volumes
    /// and log go under `dir`.
    pub fn start(
        name: &str,
        rootfs: &Path,
        image: &ImageConfig,
        container: &Container,
        dir: &Path,
    ) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let (uid, gid) = user(image, container);
        let mut cmd = Command::new("sh");
        // bwrap reports the sandboxed process's PID on --info-fd; SIGTERM
        // goes there, as the kubelet sends it to the container's PID 1.
        cmd.args(["-c", r#"exec 3>"$0"; exec bwrap --info-fd 3 "$@""#]);
        let info = dir.join("info.json");
        cmd.arg(&info);
        cmd.args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
        ])
        .args(["--uid", &uid.to_string(), "--gid", &gid.to_string()])
        .args(["--hostname", name, "--as-pid-1", "--die-with-parent"])
        .arg(if container.read_only_root {
            "--ro-bind"
        } else {
            "--bind"
        })
        .arg(rootfs)
        .arg("/")
        .args(["--proc", "/proc", "--dev", "/dev"]);
        // A container runtime makes the mount points; the read-only root
        // would refuse bwrap's own mkdir.
        for point in ["proc", "dev"] {
            std::fs::create_dir_all(rootfs.join(point)).unwrap();
        }
        for (i, mount) in container.mounts.iter().enumerate() {
            let source = dir.join(format!("volume-{i}"));
            std::fs::create_dir_all(&source).unwrap();
            if let Source::Files(files) = &mount.source {
                for (path, text) in files {
                    let file = source.join(path);
                    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                    std::fs::write(file, text).unwrap();
                }
            }
            std::fs::create_dir_all(rootfs.join(mount.path.trim_start_matches('/'))).unwrap();
            cmd.arg(if mount.read_only {
                "--ro-bind"
            } else {
                "--bind"
            })
            .arg(&source)
            .arg(&mount.path);
        }
        cmd.arg("--clearenv");
        for (key, value) in environment(image, container) {
            cmd.args(["--setenv", &key, &value]);
        }
        cmd.args(["--chdir", &image.working_dir, "--"]);
        cmd.args(argv(image, container));
        let log = dir.join("log");
        let out = std::fs::File::create(&log).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        Pod {
            name: name.to_owned(),
            child: cmd.spawn().unwrap(),
            info,
            log,
        }
    }

    /// Fails at once when the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(exit) = self.child.try_wait().unwrap() {
            panic!("{} exited ({exit})", self.name);
        }
    }

    /// The sandboxed process's PID, from bwrap's `--info-fd`.
    fn pid(&mut self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&self.info).unwrap_or_default();
            if let Ok(info) = serde_json::from_str::<serde_json::Value>(&text) {
                return u32::try_from(info["child-pid"].as_u64().unwrap()).unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "no child-pid from bwrap: {text:?}"
            );
            self.assert_running();
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends SIGTERM to the container's process, as the kubelet does, and
    /// returns its exit code; fails past `grace` (the pod's termination
    /// grace period, after which the kubelet would kill it).
    pub fn terminate(&mut self, grace: Duration) -> Option<i32> {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success(), "kill -TERM {pid}");
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{} did not exit within {grace:?} of SIGTERM", self.name);
    }

    /// The last `bytes` of the process's output.
    fn log_tail(&self, bytes: u64) -> String {
        let Ok(mut file) = std::fs::File::open(&self.log) else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(bytes)));
        let mut tail = Vec::new();
        let _ = file.read_to_end(&mut tail);
        String::from_utf8_lossy(&tail).into_owned()
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- {} (end of its log)\n{}",
                self.name,
                self.log_tail(8000)
            );
        }
    }
}
