//! The names a spec gives (agents, subagents, declared tools): what the
//! model, the queue and the API all accept, so one rule checks them.

use crate::spec_error::SpecError;

/// Longest name accepted.
const MAX_LEN: usize = 64;

/// Checks that `name` (found at `field`) is 1-64 ASCII letters, digits,
/// `-` or `_`.
pub(crate) fn check_name(field: &str, name: &str) -> Result<(), SpecError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(SpecError::field(
            field,
            format!("'{name}' must be 1-64 characters of letters, digits, '-' or '_'"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_plain_words() {
        assert!(check_name("name", "web-search_2").is_ok());
        for bad in ["", "a b", "ä", "a/b", &"x".repeat(65)] {
            let err = check_name("tools[0].name", bad).unwrap_err();
            assert!(err.to_string().contains("tools[0].name"), "{err}");
        }
    }
}
