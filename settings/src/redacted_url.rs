//! URLs as they may be shown: in errors, logs and `Debug` output, a
//! broker's or a store's password never appears.

/// `url` with the password of its user info replaced by `***`, for error
/// messages and logs.
pub fn redacted(url: &str) -> String {
    // After `scheme://`, or after `scheme:` in a mistyped URL.
    let Some(start) = url
        .find("://")
        .map(|i| i + 3)
        .or_else(|| url.find(':').map(|i| i + 1))
    else {
        return url.to_owned();
    };
    let (scheme, rest) = url.split_at(start);
    // The user info ends at the last `@` before the path.
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(
            redacted("amqps://fleet:s3cr@t@mq.example:5671/%2f"),
            "amqps://fleet:***@mq.example:5671/%2f"
        );
        assert_eq!(
            redacted("redis+cluster://:pw@h1:1,h2:2"),
            "redis+cluster://:***@h1:1,h2:2"
        );
        assert_eq!(redacted("rediss://cache:6380"), "rediss://cache:6380");
        assert_eq!(
            redacted("redis://user@cache:6379/0"),
            "redis://user@cache:6379/0"
        );
        assert_eq!(redacted("not a url"), "not a url");
        assert_eq!(redacted("amqp:fleet:s3cret@mq"), "amqp:fleet:***@mq");
    }
}
