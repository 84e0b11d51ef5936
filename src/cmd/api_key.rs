//! `deepfleet api-key new --tenant T --role R`: a fresh API key and the
//! configuration line that admits it (`<sha256 hex> <tenant> <role>`, for
//! `[api.keys]` or the keys file). The key itself is printed once and
//! kept nowhere: only its hash is configured.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use deepfleet_proto::{Role, TenantId};
use deepfleet_scheduler::keys::key_line;

/// What `deepfleet api-key` does.
#[derive(Subcommand)]
pub enum ApiKeyCommand {
    /// Makes a key: prints it (line 1, for the client) and its
    /// configuration line (line 2, for the scheduler).
    New(NewArgs),
}

/// Arguments of `deepfleet api-key new`.
#[derive(Args)]
pub struct NewArgs {
    /// The tenant the key's calls belong to (letters, digits, `-`, `_`).
    #[arg(long)]
    tenant: TenantId,
    /// What the key may do: read, submit or admin.
    #[arg(long)]
    role: Role,
}

/// What every key starts with, so a leaked one is recognisable.
const KEY_PREFIX: &str = "dfk_";

pub fn run(command: &ApiKeyCommand) -> anyhow::Result<ExitCode> {
    match command {
        ApiKeyCommand::New(args) => {
            let key = new_key();
            println!("{key}");
            println!("{}", key_line(&key, &args.tenant, args.role));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A key of 244 random bits: two version-4 UUIDs, drawn from the
/// operating system's generator.
fn new_key() -> String {
    format!(
        "{KEY_PREFIX}{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_scheduler::keys::ApiKeys;

    #[test]
    fn a_new_key_is_admitted_by_its_line() {
        let key = new_key();
        assert!(key.starts_with(KEY_PREFIX) && key.len() > 40);
        assert_ne!(key, new_key());
        let line = key_line(&key, &TenantId::new("acme").unwrap(), Role::Submit);
        assert!(!line.contains(&key));
        let keys = ApiKeys::parse([("test", line.as_str())]).unwrap();
        let caller = keys.identify(Some(&key)).unwrap();
        assert_eq!(
            (caller.tenant.as_str(), caller.role),
            ("acme", Role::Submit)
        );
    }
}
