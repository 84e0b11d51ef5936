//! The URL a webhook goes to, checked when the run is created, so a run
//! whose webhook could never be sent is refused (422) rather than
//! accepted and failed hours later.

use url::Url;

use super::error::WebhookError;

/// The longest URL taken: far past any real endpoint, short enough to
/// keep on every run's record.
const MAX_URL_BYTES: usize = 2048;

/// Checks a webhook URL: absolute, `http` or `https`, with a host.
pub fn check_url(text: &str) -> Result<Url, WebhookError> {
    let invalid = |why: &str| WebhookError::Url(format!("{why} (got {text:?})"));
    if text.len() > MAX_URL_BYTES {
        return Err(WebhookError::Url(format!(
            "a webhook URL may be at most {MAX_URL_BYTES} bytes"
        )));
    }
    let url = Url::parse(text).map_err(|e| invalid(&format!("not an absolute URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("a webhook URL must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("a webhook URL needs a host"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_http_urls_with_a_host_pass() {
        for ok in [
            "https://hooks.example.com/runs?x=1",
            "http://127.0.0.1:8080/hook",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("ftp://example.com/x", "http or https"),
            ("file:///etc/passwd", "http or https"),
            ("/relative/hook", "absolute"),
            ("w", "absolute"),
            ("https://", "absolute"),
        ] {
            let err = check_url(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert!(
            check_url(&long)
                .unwrap_err()
                .to_string()
                .contains("at most")
        );
    }
}
