//! The flags' variables, held to the settings types: a flag that reads a
//! `DEEPFLEET__...` variable reads the variable of a setting.

use std::collections::BTreeSet;

use deepfleet_settings::{CONFIG_VARIABLE, Settings, names, variable};

#[test]
fn every_flag_variable_is_a_settings_variable() {
    use clap::CommandFactory;
    let variables: BTreeSet<String> = names::of::<Settings>()
        .unwrap()
        .iter()
        .map(|name| variable(name))
        .collect();
    let command = crate::Cli::command();
    let mut flags = 0;
    for sub in std::iter::once(&command).chain(command.get_subcommands()) {
        for arg in sub.get_arguments() {
            let Some(env) = arg.get_env().and_then(|env| env.to_str()) else {
                continue;
            };
            if env == CONFIG_VARIABLE {
                continue;
            }
            assert!(
                variables.contains(env),
                "--{} reads {env}, which sets no setting",
                arg.get_id()
            );
            flags += 1;
        }
    }
    assert!(flags >= 8, "only {flags} flags show their variable");
}
