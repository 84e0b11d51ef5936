//! Reading the providers' rate-limit headers into an [`Observed`].
//!
//! - OpenAI (and compatible hosts): `x-ratelimit-{limit,remaining,reset}-
//!   {requests,tokens}`, resets as Go durations (`1s`, `6m0s`, `20ms`);
//! - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,
//!   output-tokens}-{limit,remaining,reset}`, resets as RFC 3339 times;
//! - a 429 blocks for its `Retry-After`, else until the soonest reset of
//!   an exhausted dimension, else for [`DEFAULT_BLOCK`].

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use super::{Dimension, Observed};
use crate::classify::parse_retry_after;

/// How long a 429 that says nothing of when to come back blocks.
pub const DEFAULT_BLOCK: Duration = Duration::from_secs(1);

/// What `headers` (of an answer with `status`) say of the account's
/// capacity, at `now`. Every answer is read, so this is one pass over its
/// headers, with no header name built per dimension.
pub fn observed(status: u16, headers: &HeaderMap, now: SystemTime) -> Observed {
    let mut openai = Observed::default();
    let mut anthropic = Observed::default();
    for (name, value) in headers {
        let name = name.as_str();
        let (seen, field, dimension, reset): (_, _, _, ResetFormat) =
            if let Some(rest) = name.strip_prefix("x-ratelimit-") {
                // `{field}-{dimension}`
                let Some((field, dimension)) = rest.split_once('-') else {
                    continue;
                };
                (&mut openai, field, openai_dimension(dimension), |v, _| {
                    go_duration(v)
                })
            } else if let Some(rest) = name.strip_prefix("anthropic-ratelimit-") {
                // `{dimension}-{field}`, where a dimension may hold a dash
                let Some((dimension, field)) = rest.rsplit_once('-') else {
                    continue;
                };
                (
                    &mut anthropic,
                    field,
                    anthropic_dimension(dimension),
                    rfc3339_in,
                )
            } else {
                continue;
            };
        let (Some(dimension), Ok(value)) = (dimension, value.to_str()) else {
            continue;
        };
        let d = dimension.index();
        // Of a repeated header, the first value that reads counts.
        match field {
            "limit" if seen.limit[d].is_none() => seen.limit[d] = count(value),
            "remaining" if seen.remaining[d].is_none() => seen.remaining[d] = count(value),
            "reset" if seen.reset[d].is_none() => seen.reset[d] = reset(value, now),
            _ => {}
        }
    }
    let mut observed = openai;
    for d in Dimension::ALL.map(Dimension::index) {
        observed.limit[d] = observed.limit[d].or(anthropic.limit[d]);
        observed.remaining[d] = observed.remaining[d].or(anthropic.remaining[d]);
        observed.reset[d] = observed.reset[d].or(anthropic.reset[d]);
    }
    if status == 429 {
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, now));
        let soonest_reset = Dimension::ALL
            .iter()
            .map(|d| d.index())
            .filter(|&d| observed.remaining[d] == Some(0))
            .filter_map(|d| observed.reset[d])
            .min();
        observed.blocked_for = Some(retry_after.or(soonest_reset).unwrap_or(DEFAULT_BLOCK));
    }
    observed
}

/// How a provider writes when a dimension is full again.
type ResetFormat = fn(&str, SystemTime) -> Option<Duration>;

/// The dimension an OpenAI header's suffix names; OpenAI meters calls and
/// tokens only.
fn openai_dimension(suffix: &str) -> Option<Dimension> {
    match suffix {
        "requests" => Some(Dimension::Requests),
        "tokens" => Some(Dimension::Tokens),
        _ => None,
    }
}

fn anthropic_dimension(name: &str) -> Option<Dimension> {
    match name {
        "requests" => Some(Dimension::Requests),
        "tokens" => Some(Dimension::Tokens),
        "input-tokens" => Some(Dimension::InputTokens),
        "output-tokens" => Some(Dimension::OutputTokens),
        _ => None,
    }
}

fn count(value: &str) -> Option<u64> {
    value.trim().parse().ok()
}

/// A Go duration as OpenAI writes resets: `1s`, `6m0s`, `1h2m3.5s`,
/// `20ms`; a bare number is seconds.
pub fn go_duration(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let mut total = 0.0_f64;
    let mut rest = value;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&end| end > 0)?;
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3_600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    (total.is_finite() && !value.is_empty()).then(|| Duration::from_secs_f64(total))
}

/// How far after `now` an RFC 3339 time lies (zero when past).
fn rfc3339_in(value: &str, now: SystemTime) -> Option<Duration> {
    let at = SystemTime::from(chrono::DateTime::parse_from_rfc3339(value.trim()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn go_durations_parse() {
        let cases = [
            ("1s", Some(1_000)),
            ("6m0s", Some(360_000)),
            ("20ms", Some(20)),
            ("1h2m3.5s", Some(3_723_500)),
            ("0.5", Some(500)),
            ("", None),
            ("soon", None),
            ("5x", None),
        ];
        for (text, ms) in cases {
            assert_eq!(
                go_duration(text).map(|d| d.as_millis()),
                ms.map(|ms: u64| u128::from(ms)),
                "{text}"
            );
        }
    }

    #[test]
    fn openai_headers_fill_requests_and_tokens() {
        let map = headers(&[
            ("x-ratelimit-limit-requests", "600"),
            ("x-ratelimit-remaining-requests", "599"),
            ("x-ratelimit-reset-requests", "100ms"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "149000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        let seen = observed(200, &map, SystemTime::now());
        assert_eq!(
            seen,
            Observed {
                limit: [Some(600), Some(150_000), None, None],
                remaining: [Some(599), Some(149_000), None, None],
                reset: [
                    Some(Duration::from_millis(100)),
                    Some(Duration::from_secs(360)),
                    None,
                    None
                ],
                blocked_for: None,
            }
        );
    }

    #[test]
    fn anthropic_headers_fill_all_four_with_rfc3339_resets() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let reset =
            chrono::DateTime::<chrono::Utc>::from(now + Duration::from_secs(30)).to_rfc3339();
        let map = headers(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", &reset),
            ("anthropic-ratelimit-input-tokens-limit", "40000"),
            ("anthropic-ratelimit-output-tokens-remaining", "7000"),
            ("anthropic-ratelimit-tokens-limit", "48000"),
        ]);
        let seen = observed(429, &map, now);
        assert_eq!(seen.limit, [Some(50), Some(48_000), Some(40_000), None]);
        assert_eq!(seen.remaining, [Some(0), None, None, Some(7_000)]);
        assert_eq!(seen.reset[0], Some(Duration::from_secs(30)));
        // No Retry-After: the exhausted requests' reset.
        assert_eq!(seen.blocked_for, Some(Duration::from_secs(30)));
    }

    #[test]
    fn other_and_malformed_headers_say_nothing() {
        let map = headers(&[
            ("content-type", "application/json"),
            ("x-ratelimit-limit", "600"),
            ("x-ratelimit-limit-images", "5"),
            ("x-ratelimit-remaining-input-tokens", "5"),
            ("x-ratelimit-remaining-requests", "many"),
            ("anthropic-ratelimit-tokens", "48000"),
            ("anthropic-ratelimit-images-limit", "3"),
        ]);
        assert!(observed(200, &map, SystemTime::now()).is_empty());
    }

    #[test]
    fn openai_headers_win_over_anthropic_ones_for_the_same_dimension() {
        let map = headers(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("x-ratelimit-limit-requests", "600"),
            ("anthropic-ratelimit-tokens-remaining", "10"),
        ]);
        let seen = observed(200, &map, SystemTime::now());
        assert_eq!(seen.limit[0], Some(600));
        assert_eq!(seen.remaining[1], Some(10));
    }

    #[test]
    fn a_429_blocks_for_retry_after_or_a_default() {
        let now = SystemTime::now();
        let map = headers(&[
            ("retry-after", "7"),
            ("x-ratelimit-remaining-requests", "0"),
        ]);
        assert_eq!(
            observed(429, &map, now).blocked_for,
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            observed(429, &HeaderMap::new(), now).blocked_for,
            Some(DEFAULT_BLOCK)
        );
        assert!(observed(200, &HeaderMap::new(), now).is_empty());
    }
}
