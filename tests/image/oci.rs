//! An image as a container runtime sees it: `podman save --format
//! oci-archive` unpacked into a root filesystem (layers applied in order,
//! whiteouts removing what lower layers put there), and the runtime half
//! of its config (entrypoint, cmd, environment, user, working directory).
//!
//! The archives are read with the system's `tar`; ownership is not kept,
//! so every file belongs to whoever runs the test, which is the image's
//! user inside the sandbox's user namespace.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Whiteout prefix of a layer entry: `.wh.NAME` deletes NAME below.
const WHITEOUT: &str = ".wh.";
/// Opaque whiteout: the directory holding it hides all it had below.
const OPAQUE: &str = ".wh..wh..opq";

/// The `config` part of an image configuration.
#[derive(Debug, Default)]
pub struct ImageConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<(String, String)>,
    pub user: String,
    pub working_dir: String,
    pub labels: serde_json::Map<String, Value>,
}

/// Saves `image` from podman's storage as an OCI archive at `archive`.
pub fn save(image: &str, archive: &Path) {
    let status = Command::new("podman")
        .args([
            "save",
            "--quiet",
            "--uncompressed",
            "--format",
            "oci-archive",
            "-o",
        ])
        .arg(archive)
        .arg(image)
        .status()
        .unwrap();
    assert!(status.success(), "podman save {image}: {status}");
}

/// Unpacks the OCI archive `archive` (one image) into `rootfs`, using
/// `scratch` for the archive's blobs, and returns the image's config.
pub fn unpack(archive: &Path, scratch: &Path, rootfs: &Path) -> ImageConfig {
    std::fs::create_dir_all(scratch).unwrap();
    std::fs::create_dir_all(rootfs).unwrap();
    untar(archive, scratch, &[]);
    let index = read_json(&scratch.join("index.json"));
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "one image per archive: {index}");
    let manifest = read_json(&blob(scratch, &manifests[0]));
    for layer in manifest["layers"].as_array().unwrap() {
        let media = layer["mediaType"].as_str().unwrap();
        assert!(
            media.starts_with("application/vnd.oci.image.layer.v1.tar"),
            "a layer of type {media}"
        );
        apply_layer(&blob(scratch, layer), rootfs);
    }
    config_of(&read_json(&blob(scratch, &manifest["config"])))
}

fn blob(scratch: &Path, descriptor: &Value) -> PathBuf {
    let digest = descriptor["digest"].as_str().unwrap();
    let (algorithm, hex) = digest.split_once(':').unwrap();
    scratch.join("blobs").join(algorithm).join(hex)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Extracts `archive` into `into` (GNU tar detects compression itself).
fn untar(archive: &Path, into: &Path, extra: &[&str]) {
    let status = Command::new("tar")
        .args(["--extract", "--no-same-owner", "--file"])
        .arg(archive)
        .arg("--directory")
        .arg(into)
        .args(extra)
        .status()
        .unwrap();
    assert!(status.success(), "tar -x {}: {status}", archive.display());
}

/// The entries of a layer, as stored (`./a/b`, `a/b/`, ...).
fn entries(layer: &Path) -> Vec<String> {
    let out = Command::new("tar")
        .args(["--list", "--file"])
        .arg(layer)
        .output()
        .unwrap();
    assert!(out.status.success(), "tar -t {}", layer.display());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Applies one layer over `rootfs`: its whiteouts first (they speak of
/// the layers below), then its files.
fn apply_layer(layer: &Path, rootfs: &Path) {
    for entry in entries(layer) {
        let path = Path::new(entry.trim_start_matches("./"));
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let dir = rootfs.join(path.parent().unwrap_or(Path::new("")));
        if name == OPAQUE {
            if let Ok(children) = std::fs::read_dir(&dir) {
                for child in children {
                    remove(&child.unwrap().path());
                }
            }
        } else if let Some(hidden) = name.strip_prefix(WHITEOUT) {
            remove(&dir.join(hidden));
        }
    }
    untar(layer, rootfs, &["--exclude=.wh.*"]);
}

fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).unwrap(),
        Ok(_) => std::fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn config_of(image: &Value) -> ImageConfig {
    let config = &image["config"];
    ImageConfig {
        entrypoint: strings(&config["Entrypoint"]),
        cmd: strings(&config["Cmd"]),
        env: strings(&config["Env"])
            .into_iter()
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap();
                (name.to_owned(), value.to_owned())
            })
            .collect(),
        user: config["User"].as_str().unwrap_or_default().to_owned(),
        working_dir: config["WorkingDir"].as_str().unwrap_or("/").to_owned(),
        labels: config["Labels"].as_object().cloned().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar(dir: &Path, out: &Path, entries: &[&str]) {
        let status = Command::new("tar")
            .arg("--create")
            .arg("--file")
            .arg(out)
            .arg("--directory")
            .arg(dir)
            .args(entries)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn whiteouts_remove_what_lower_layers_put_there() {
        let work = tempfile::tempdir().unwrap();
        let (lower, upper) = (work.path().join("lower"), work.path().join("upper"));
        for dir in ["etc/keep", "etc/gone", "opaque"] {
            std::fs::create_dir_all(lower.join(dir)).unwrap();
        }
        std::fs::write(lower.join("etc/file"), "old").unwrap();
        std::fs::write(lower.join("etc/gone/x"), "x").unwrap();
        std::fs::write(lower.join("opaque/old"), "old").unwrap();
        std::fs::create_dir_all(upper.join("etc")).unwrap();
        std::fs::create_dir_all(upper.join("opaque")).unwrap();
        std::fs::write(upper.join("etc/.wh.gone"), "").unwrap();
        std::fs::write(upper.join("etc/file"), "new").unwrap();
        std::fs::write(upper.join("opaque/.wh..wh..opq"), "").unwrap();
        std::fs::write(upper.join("opaque/new"), "new").unwrap();
        tar(&lower, &work.path().join("1.tar"), &["."]);
        tar(&upper, &work.path().join("2.tar"), &["etc", "opaque"]);

        let rootfs = work.path().join("rootfs");
        std::fs::create_dir_all(&rootfs).unwrap();
        apply_layer(&work.path().join("1.tar"), &rootfs);
        apply_layer(&work.path().join("2.tar"), &rootfs);
        assert!(rootfs.join("etc/keep").is_dir());
        assert!(!rootfs.join("etc/gone").exists());
        assert!(!rootfs.join("etc/.wh.gone").exists());
        assert_eq!(
            std::fs::read_to_string(rootfs.join("etc/file")).unwrap(),
            "new"
        );
        assert!(!rootfs.join("opaque/old").exists());
        assert!(!rootfs.join("opaque/.wh..wh..opq").exists());
        assert_eq!(
            std::fs::read_to_string(rootfs.join("opaque/new")).unwrap(),
            "new"
        );
    }
}
