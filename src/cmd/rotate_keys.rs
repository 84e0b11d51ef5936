//! `deepfleet rotate-keys`: re-seals a deployment's stored values under
//! the current encryption key, after a new key became `current` or after
//! encryption was turned on over values stored in clear. Safe beside
//! running workers, and idempotent: run it again after an interruption.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::redis::reseal::ResealReport;

use crate::settings::{Settings, SettingsError};

/// Arguments of `deepfleet rotate-keys`.
#[derive(Args)]
pub struct RotateKeysArgs {
    /// Redis URL (`redis://...`, `rediss://...`, or
    /// `redis+cluster://h1:p1,h2:p2`); re-seals every value under
    /// `key_prefix`.
    #[arg(long, env = "DEEPFLEET__STORE")]
    store: Option<String>,
    /// Re-seal this embedded state file (`deepfleet run --state`) instead
    /// of Redis.
    #[arg(long)]
    state: Option<PathBuf>,
}

pub async fn run(args: RotateKeysArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let keyring = settings.encryption.keyring()?.context(
        "rotate-keys needs the encryption keys: set encryption.keys (DEEPFLEET__ENCRYPTION__KEYS) \
         or encryption.keys_file, and encryption.current",
    )?;
    let current = keyring.current().to_owned();
    if let Some(path) = &args.state {
        // Opening a state file re-seals it under the current key.
        let store = EmbeddedStore::open_with(path, Some(keyring))
            .with_context(|| format!("opening the state file {}", path.display()))?;
        store.flush()?;
        println!("{}: sealed under key {current}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let url = args
        .store
        .or_else(|| settings.store.clone())
        .ok_or(SettingsError::NoStore)?;
    let store = deepfleet_settings::fleet::connect_store(&url, &settings).await?;
    let report = store.reseal().await?;
    println!("{}", summary(&report, &current));
    Ok(if report.unreadable > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line of what the pass did.
fn summary(report: &ResealReport, current: &str) -> String {
    let mut line = format!(
        "{} keys: {} values re-sealed under key {current}, {} already current, \
         {} rewritten meanwhile by the fleet, {} unreadable; {} event streams left to expire",
        report.keys,
        report.resealed,
        report.current,
        report.changed,
        report.unreadable,
        report.streams,
    );
    if report.unreadable > 0 {
        line.push_str(
            " (unreadable values name a key id the keyring lacks, or were altered; \
             see the warnings above)",
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_every_count() {
        let report = ResealReport {
            keys: 9,
            resealed: 5,
            current: 3,
            changed: 1,
            unreadable: 0,
            streams: 2,
        };
        assert_eq!(
            summary(&report, "k2"),
            "9 keys: 5 values re-sealed under key k2, 3 already current, \
             1 rewritten meanwhile by the fleet, 0 unreadable; 2 event streams left to expire"
        );
    }
}
