//! Faults the scripted server injects, the way real providers misbehave:
//! error statuses (429 storms with and without `Retry-After`, 500, 503),
//! answers that never come or stall half way, connections cut mid-body,
//! bodies that are not JSON, tool calls with broken arguments or no name,
//! answers with no choices, and answers far too large.
//!
//! A [`Faults`] plan serves one fault to the first `times` requests (or
//! to all of them), then steps aside so the script answers; faults are
//! applied after the request is recorded, whatever the protocol, streamed
//! or not. Each protocol module says what a fault looks like on its wire
//! ([`Wire`]); the rest is shared here.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::stream::{self, StreamExt};

/// Text of the answers injected faults replace.
const FAULT_MESSAGE: &str = "injected fault";
/// Most bytes of a normal answer a transformed one is built from.
const MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;

/// One way a provider misbehaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answers `status` (a 429, 500, 503...), with `Retry-After: secs`
    /// when given, in the protocol's error shape.
    Status {
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` header, in seconds.
        retry_after: Option<u64>,
    },
    /// Takes the request and never answers (no status line either).
    Hang,
    /// Sends the status, headers and half the answer, then nothing more,
    /// the connection kept open.
    Stall,
    /// Sends half the answer, then drops the connection.
    Truncate,
    /// Answers 200 with a body that is not JSON (a streamed answer: its
    /// first event's data).
    MalformedJson,
    /// A tool call whose arguments are not a JSON object.
    BadToolArguments,
    /// A tool call without a name.
    MissingToolName,
    /// An answer with no choices, content blocks or candidates.
    Empty,
    /// The script's answer with its text `bytes` long.
    Oversized {
        /// Length of the text.
        bytes: usize,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Status {
                status,
                retry_after: Some(secs),
            } => write!(f, "status={status},retry_after={secs}"),
            Fault::Status {
                status,
                retry_after: None,
            } => write!(f, "status={status}"),
            Fault::Hang => f.write_str("hang"),
            Fault::Stall => f.write_str("stall"),
            Fault::Truncate => f.write_str("truncate"),
            Fault::MalformedJson => f.write_str("malformed_json"),
            Fault::BadToolArguments => f.write_str("bad_tool_arguments"),
            Fault::MissingToolName => f.write_str("missing_tool_name"),
            Fault::Empty => f.write_str("empty"),
            Fault::Oversized { bytes } => write!(f, "oversized={bytes}"),
        }
    }
}

/// Parses what [`Fault`]'s `Display` writes: `status=429`,
/// `status=429,retry_after=2`, `hang`, `stall`, `truncate`,
/// `malformed_json`, `bad_tool_arguments`, `missing_tool_name`, `empty`,
/// `oversized=52428800`.
impl FromStr for Fault {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = |value: &str| {
            value
                .parse::<u64>()
                .map_err(|e| format!("fault {text:?}: {value:?} is not a number: {e}"))
        };
        if let Some(rest) = text.strip_prefix("status=") {
            let (status, retry_after) = match rest.split_once(",retry_after=") {
                Some((status, secs)) => (status, Some(number(secs)?)),
                None => (rest, None),
            };
            let status = u16::try_from(number(status)?)
                .map_err(|_| format!("fault {text:?}: not an HTTP status"))?;
            return Ok(Fault::Status {
                status,
                retry_after,
            });
        }
        if let Some(bytes) = text.strip_prefix("oversized=") {
            let bytes = usize::try_from(number(bytes)?)
                .map_err(|_| format!("fault {text:?}: too large"))?;
            return Ok(Fault::Oversized { bytes });
        }
        Ok(match text {
            "hang" => Fault::Hang,
            "stall" => Fault::Stall,
            "truncate" => Fault::Truncate,
            "malformed_json" => Fault::MalformedJson,
            "bad_tool_arguments" => Fault::BadToolArguments,
            "missing_tool_name" => Fault::MissingToolName,
            "empty" => Fault::Empty,
            _ => return Err(format!("unknown fault {text:?}")),
        })
    }
}

/// A fault and how many requests get it.
#[derive(Debug)]
pub struct Faults {
    fault: Fault,
    times: Option<u32>,
    served: AtomicU32,
}

impl Faults {
    /// `fault` on every request.
    pub fn always(fault: Fault) -> Self {
        Faults {
            fault,
            times: None,
            served: AtomicU32::new(0),
        }
    }

    /// `fault` on the first `times` requests, then the script's answers.
    pub fn times(fault: Fault, times: u32) -> Self {
        Faults {
            times: Some(times),
            ..Faults::always(fault)
        }
    }

    /// How many requests got the fault so far.
    pub fn served(&self) -> u32 {
        self.served.load(Ordering::SeqCst)
    }

    /// The fault for the next request, if it gets one (counted).
    pub(crate) fn take(&self) -> Option<Fault> {
        let Some(times) = self.times else {
            self.served.fetch_add(1, Ordering::SeqCst);
            return Some(self.fault.clone());
        };
        self.served
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < times).then_some(n + 1)
            })
            .ok()
            .map(|_| self.fault.clone())
    }
}

/// What a fault looks like on one protocol's wire.
pub(crate) trait Wire: Sync {
    /// An error answer of `status` in the protocol's shape.
    fn error(&self, status: u16, message: String, retry_after: Option<Duration>) -> Response;

    /// An answer broken as `fault` ([`Fault::BadToolArguments`],
    /// [`Fault::MissingToolName`] or [`Fault::Empty`]) says, streamed or
    /// not; a call in it is of `ls`.
    fn broken(&self, fault: &Fault, stream: bool) -> Response;
}

/// Answers a request under `fault`: `answer` renders the script's answer,
/// with its text replaced by `Some(bytes)` of it when the fault asks.
pub(crate) async fn respond(
    fault: Option<Fault>,
    wire: &dyn Wire,
    stream: bool,
    answer: impl FnOnce(Option<usize>) -> Response,
) -> Response {
    let Some(fault) = fault else {
        return answer(None);
    };
    match fault {
        Fault::Status {
            status,
            retry_after,
        } => wire.error(
            status,
            FAULT_MESSAGE.to_owned(),
            retry_after.map(Duration::from_secs),
        ),
        Fault::Hang => std::future::pending().await,
        Fault::BadToolArguments | Fault::MissingToolName | Fault::Empty => {
            wire.broken(&fault, stream)
        }
        Fault::Oversized { bytes } => answer(Some(bytes)),
        Fault::Stall => cut(answer(None), Ending::Stall).await,
        Fault::Truncate => cut(answer(None), Ending::Drop).await,
        Fault::MalformedJson => malformed(answer(None), stream).await,
    }
}

/// The oversized text of [`Fault::Oversized`].
pub(crate) fn filler(bytes: usize) -> String {
    "a".repeat(bytes)
}

/// How a cut answer ends after its first half.
enum Ending {
    /// The connection stays open and silent.
    Stall,
    /// The connection is dropped.
    Drop,
}

/// `response` with only the first half of its body, then `ending`.
async fn cut(response: Response, ending: Ending) -> Response {
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ANSWER_BYTES)
        .await
        .unwrap_or_default();
    let half = Bytes::copy_from_slice(&bytes[..bytes.len() / 2]);
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let head = stream::once(async move { Ok::<_, std::io::Error>(half) });
    let body = match ending {
        Ending::Stall => Body::from_stream(head.chain(stream::pending())),
        // An error from the body stream makes the server abort the
        // connection, as a crashed provider or proxy would.
        Ending::Drop => Body::from_stream(head.chain(stream::once(async {
            Err(std::io::Error::other("connection cut by an injected fault"))
        }))),
    };
    Response::from_parts(parts, body)
}

/// `response` made undecodable: a JSON body cut in half (a whole, short
/// body), or a stream whose first event's data is not JSON.
async fn malformed(response: Response, stream: bool) -> Response {
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ANSWER_BYTES)
        .await
        .unwrap_or_default();
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let body = if stream {
        let mut broken = b"data: {\"choices\": [{\"delta\": \n\n".to_vec();
        broken.extend_from_slice(&bytes);
        broken
    } else {
        bytes[..bytes.len() / 2].to_vec()
    };
    let body = Body::from_stream(stream::once(async move {
        Ok::<_, Infallible>(Bytes::from(body))
    }));
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn faults_print_as_they_parse() {
        for fault in [
            Fault::Status {
                status: 429,
                retry_after: Some(2),
            },
            Fault::Status {
                status: 503,
                retry_after: None,
            },
            Fault::Hang,
            Fault::Stall,
            Fault::Truncate,
            Fault::MalformedJson,
            Fault::BadToolArguments,
            Fault::MissingToolName,
            Fault::Empty,
            Fault::Oversized { bytes: 1024 },
        ] {
            assert_eq!(fault.to_string().parse::<Fault>(), Ok(fault));
        }
        assert!("status=lots".parse::<Fault>().is_err());
        assert!("flaky".parse::<Fault>().is_err());
    }

    #[test]
    fn a_limited_plan_steps_aside_after_its_faults() {
        let plan = Faults::times(Fault::Hang, 2);
        let served: Vec<bool> = (0..4).map(|_| plan.take().is_some()).collect();
        assert_eq!(served, [true, true, false, false]);
        assert_eq!(plan.served(), 2);
        let always = Faults::always(Fault::Empty);
        assert!((0..3).all(|_| always.take().is_some()));
    }
}
