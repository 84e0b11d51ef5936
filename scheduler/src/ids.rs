//! Ids a caller chooses (a new thread's, a new assistant's): they become
//! path segments, Redis key parts, log fields and what a console shows,
//! so each is bounded in length and holds only characters that read as
//! what they are: no control character (NUL included), no `/` (it could
//! not be named in a path), and no bidirectional formatting character
//! (which makes one id display as another).

/// The longest id a caller may choose.
pub const MAX_ID_LEN: usize = 128;

/// Why `id` cannot name a new `what` (`thread_id`, `assistant_id`), or
/// `Ok` when it can.
pub fn check_id(what: &str, id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(format!("{what}: 1 to {MAX_ID_LEN} bytes, not {}", id.len()));
    }
    if let Some(c) = id
        .chars()
        .find(|c| c.is_control() || *c == '/' || is_bidi(*c))
    {
        return Err(format!(
            "{what}: U+{:04X} is not allowed in an id (no control, bidirectional formatting \
             or '/' characters)",
            u32::from(c)
        ));
    }
    Ok(())
}

/// The characters that change the direction text is shown in.
fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_bounded_and_printable() {
        for fine in [
            "t1",
            "3f1a-uuid",
            "count",
            "threads:ünïcode",
            &"x".repeat(MAX_ID_LEN),
        ] {
            assert_eq!(check_id("thread_id", fine), Ok(()), "{fine}");
        }
        for bad in [
            "",
            "a\0b",
            "a\nb",
            "a/b",
            "abc\u{202E}cba",
            "x\u{2066}y",
            &"x".repeat(MAX_ID_LEN + 1),
        ] {
            let why = check_id("thread_id", bad).unwrap_err();
            assert!(why.starts_with("thread_id: "), "{why}");
        }
    }
}
