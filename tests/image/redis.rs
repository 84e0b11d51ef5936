//! A Redis of this test alone, on a fixed port so it can be stopped and
//! started again where the fleet expects it.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::wait::wait_for;

pub struct PrivateRedis {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

/// A free local port (bound, then released for a process to take).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl PrivateRedis {
    pub fn start() -> Self {
        let mut redis = PrivateRedis {
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        redis.up();
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn up(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for(Duration::from_secs(10), "redis to listen", || {
            TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        });
    }

    pub fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.down();
    }
}
