//! `deepfleet keygen`: a fresh context key for a fleet, so the README's
//! first run works as written:
//! `export DEEPFLEET__CONTEXT_KEY=$(deepfleet keygen)`.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use deepfleet_store::sealed::ContextKey;

/// Arguments of `deepfleet keygen`.
#[derive(Args)]
pub struct KeygenArgs {
    /// Write the key to this file (created with mode 0600) instead of
    /// stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the file if it exists (the old key can no longer open the
    /// contexts sealed with it).
    #[arg(long)]
    force: bool,
}

pub fn run(args: &KeygenArgs) -> anyhow::Result<ExitCode> {
    let key = ContextKey::generate_base64();
    match &args.out {
        Some(path) => write_key(path, &key, args.force)?,
        None => println!("{key}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `key` and a newline to `path`, readable by its owner only. An
/// existing file is kept unless `force`: losing a fleet's key loses every
/// sealed context.
fn write_key(path: &Path, key: &str, force: bool) -> anyhow::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).mode(0o600);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).with_context(|| {
        format!(
            "creating {} (pass --force to replace an existing key)",
            path.display()
        )
    })?;
    // `mode` applies only to a new file: a replaced one is narrowed too.
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    writeln!(file, "{key}").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_key_file_is_private_and_holds_a_valid_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("context.key");
        write_key(&path, &ContextKey::generate_base64(), false).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        ContextKey::from_base64(text.trim()).unwrap();
    }

    #[test]
    fn an_existing_key_is_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("context.key");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = write_key(&path, "new", false).unwrap_err();
        assert!(format!("{refused:#}").contains("--force"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        write_key(&path, "new", true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
