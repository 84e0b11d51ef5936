//! Request bodies that share what an agent's requests repeat.
//!
//! Every request of an agent carries its system prompt and its tools'
//! schemas: most of a short conversation's body (about 9 of 10 KiB in the
//! bench's basic scenario). A call keeps its body for as long as it waits,
//! for its retries, so ten thousand calls in flight kept ten thousand
//! copies of the same bytes; and escaping the same tool descriptions into
//! JSON on every call was the largest cost of writing a body.
//!
//! The tools are therefore written once per tool list ([`SharedParts::tools`])
//! and handed to the protocol, which puts the bytes where its own list
//! would go. The body is then written by the protocol's serializer, and
//! the parts found in it verbatim (the tools, the system prompt) are
//! swapped for the one copy kept. What is sent is byte for byte what the
//! protocol writes: a part is only ever replaced where its bytes were
//! found, and the written tools are the protocol's own for the same list.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use memchr::memmem;
use moka::sync::Cache;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{ModelError, ModelRequest, ToolSpec};

/// Parts kept: a system prompt and a tool list for each agent a worker
/// runs at a time, with room to spare.
const KEPT_PARTS: u64 = 1024;

/// A system prompt shorter than this is not worth a shared copy.
const MIN_SHARED_BYTES: usize = 256;

/// Where a shared part comes from: the address of the request's `Arc`,
/// which an agent's requests share. A kept part holds a weak reference
/// to its source, so that address is not reused while the part is kept:
/// the same address is the same text or tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    System(usize),
    Tools(usize),
}

/// What keeps a source's address from being reused (its contents may be
/// dropped).
enum Owner {
    System { _text: Weak<str> },
    Tools { _list: Weak<[ToolSpec]> },
}

/// A kept part, with its searcher (building one costs more than a
/// search of a whole body with it) and where it was last found.
pub(crate) struct Kept {
    raw: Arc<RawValue>,
    bytes: Bytes,
    finder: memmem::Finder<'static>,
    /// Its distance from the start and from the end of the body it was
    /// last found in. An agent's bodies put a part at the same distance
    /// from one of them (the system prompt after the model's name, the
    /// tools before the fields that close the body), so comparing there
    /// first spares most bodies the search.
    from_start: AtomicUsize,
    from_end: AtomicUsize,
    _owner: Owner,
}

/// A kept part's bytes, for the bodies that share them.
struct RawBytes(Arc<RawValue>);

impl AsRef<[u8]> for RawBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.get().as_bytes()
    }
}

impl Kept {
    fn new(raw: Box<RawValue>, owner: Owner) -> Arc<Self> {
        let raw: Arc<RawValue> = Arc::from(raw);
        let bytes = Bytes::from_owner(RawBytes(Arc::clone(&raw)));
        let finder = memmem::Finder::new(&bytes).into_owned();
        Arc::new(Kept {
            raw,
            bytes,
            finder,
            from_start: AtomicUsize::new(usize::MAX),
            from_end: AtomicUsize::new(usize::MAX),
            _owner: owner,
        })
    }

    /// The part as JSON, for a body to be written with.
    pub(crate) fn raw(&self) -> Arc<RawValue> {
        Arc::clone(&self.raw)
    }

    /// Where the part lies in `body`: where it lay last time if its bytes
    /// are there, else where a search finds it.
    fn locate(&self, body: &[u8]) -> Option<usize> {
        let len = self.bytes.len();
        let there = |at: Option<usize>| {
            at.filter(|&at| body.get(at..at.saturating_add(len)) == Some(&self.bytes[..]))
        };
        let from_end = body
            .len()
            .checked_sub(self.from_end.load(Ordering::Relaxed))
            .and_then(|end| end.checked_sub(len));
        let at = there(Some(self.from_start.load(Ordering::Relaxed)))
            .or_else(|| there(from_end))
            .or_else(|| self.finder.find(body))?;
        self.from_start.store(at, Ordering::Relaxed);
        self.from_end
            .store(body.len() - at - len, Ordering::Relaxed);
        Some(at)
    }
}

/// The kept parts of one client's requests.
pub(crate) struct SharedParts {
    kept: Cache<Source, Arc<Kept>>,
}

impl Default for SharedParts {
    fn default() -> Self {
        SharedParts {
            kept: Cache::new(KEPT_PARTS),
        }
    }
}

impl SharedParts {
    /// The `tools` value of bodies offering `request`'s tools, as `write`
    /// writes it for a request of those tools alone: written once per
    /// tool list, then kept. `None` without tools.
    pub(crate) fn tools(
        &self,
        request: &ModelRequest,
        write: impl Fn(&ModelRequest) -> Result<Vec<u8>, ModelError>,
    ) -> Option<Arc<Kept>> {
        if request.tools.is_empty() {
            return None;
        }
        let source = Source::Tools(Arc::as_ptr(&request.tools).addr());
        if let Some(kept) = self.kept.get(&source) {
            return Some(kept);
        }
        let owner = Owner::Tools {
            _list: Arc::downgrade(&request.tools),
        };
        let kept = Kept::new(tools_part(request, write)?, owner);
        self.kept.insert(source, Arc::clone(&kept));
        Some(kept)
    }

    /// `body`, the JSON written of `request` with `tools` as its tools,
    /// with its system prompt and tools pointing at the kept copies where
    /// they appear in it.
    pub(crate) fn split(
        &self,
        mut body: Vec<u8>,
        request: &ModelRequest,
        tools: Option<&Kept>,
    ) -> RequestBody {
        let mut found: Vec<(usize, Bytes)> = Vec::with_capacity(2);
        if request.system.len() >= MIN_SHARED_BYTES {
            found.extend(self.find_system(&body, request));
        }
        if let Some(tools) = tools
            && let Some(at) = tools.locate(&body)
        {
            found.push((at, tools.bytes.clone()));
        }
        found.sort_unstable_by_key(|(at, _)| *at);
        let mut parts = Vec::with_capacity(2 * found.len() + 1);
        let mut from = 0;
        for (at, part) in found {
            if at < from {
                continue;
            }
            if at > from {
                parts.push(Bytes::copy_from_slice(&body[from..at]));
            }
            from = at + part.len();
            parts.push(part);
        }
        if from == 0 {
            // Kept while the call waits: no spare capacity.
            body.shrink_to_fit();
            return RequestBody {
                parts: Box::new([Bytes::from(body)]),
            };
        }
        if from < body.len() {
            parts.push(Bytes::copy_from_slice(&body[from..]));
        }
        RequestBody {
            parts: parts.into_boxed_slice(),
        }
    }

    /// Where the kept copy of `request`'s system prompt lies in `body`,
    /// kept now if it was not.
    fn find_system(&self, body: &[u8], request: &ModelRequest) -> Option<(usize, Bytes)> {
        let source = Source::System(Arc::as_ptr(&request.system).addr());
        if let Some(kept) = self.kept.get(&source)
            && let Some(at) = kept.locate(body)
        {
            return Some((at, kept.bytes.clone()));
        }
        let written = serde_json::value::to_raw_value(&*request.system).ok()?;
        let owner = Owner::System {
            _text: Arc::downgrade(&request.system),
        };
        let fresh = Kept::new(written, owner);
        let at = fresh.locate(body)?;
        let bytes = fresh.bytes.clone();
        self.kept.insert(source, fresh);
        Some((at, bytes))
    }
}

/// The `tools` value of a request offering `request`'s tools and nothing
/// else, as `write` writes it.
fn tools_part(
    request: &ModelRequest,
    write: impl Fn(&ModelRequest) -> Result<Vec<u8>, ModelError>,
) -> Option<Box<RawValue>> {
    #[derive(Deserialize)]
    struct Tools<'a> {
        #[serde(borrow)]
        tools: Option<&'a RawValue>,
    }
    let probe = ModelRequest {
        model: request.model.clone(),
        system: Arc::from(""),
        messages: Vec::new(),
        tools: Arc::clone(&request.tools),
        max_output_tokens: None,
        cache_key: None,
        cache_breakpoints: Vec::new(),
        purpose: request.purpose,
        sampling: crate::Sampling::default(),
        rate: crate::RateHint::default(),
    };
    let written = write(&probe).ok()?;
    let tools: Tools<'_> = serde_json::from_slice(&written).ok()?;
    Some(tools.tools?.to_owned())
}

/// A request's body in parts, some of them shared with other requests.
#[derive(Debug, Clone)]
pub(crate) struct RequestBody {
    parts: Box<[Bytes]>,
}

impl RequestBody {
    /// The body of one attempt.
    pub(crate) fn to_reqwest(&self) -> reqwest::Body {
        match &*self.parts {
            [whole] => reqwest::Body::from(whole.clone()),
            parts => reqwest::Body::wrap(Parts {
                remaining: parts.iter().map(|p| p.len() as u64).sum(),
                parts: parts.iter().cloned().collect(),
            }),
        }
    }

    /// The body's bytes, copied into one buffer.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.parts.concat()
    }

    /// Its parts, shared or not.
    #[cfg(test)]
    pub(crate) fn parts(&self) -> &[Bytes] {
        &self.parts
    }
}

/// An attempt's body: the parts one after the other, its length known so
/// that it is sent with a `content-length`.
struct Parts {
    parts: VecDeque<Bytes>,
    remaining: u64,
}

impl http_body::Body for Parts {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.parts.pop_front();
        if let Some(part) = &next {
            self.remaining = self.remaining.saturating_sub(part.len() as u64);
        }
        Poll::Ready(next.map(|part| Ok(Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn request(system: &str) -> ModelRequest {
        ModelRequest {
            model: "m".to_owned(),
            system: Arc::from(system),
            messages: vec![deepfleet_proto::Message::user("hello")],
            tools: Arc::from(vec![ToolSpec {
                name: "read_file".to_owned(),
                description: "Reads a file.".repeat(40),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}})
                    .into(),
            }]),
            max_output_tokens: None,
            cache_key: None,
            cache_breakpoints: Vec::new(),
            purpose: crate::CallPurpose::Agent,
            sampling: crate::Sampling::default(),
            rate: crate::RateHint::default(),
        }
    }

    type Writer = Box<dyn Fn(&ModelRequest, Option<Arc<RawValue>>) -> Vec<u8>>;

    /// The three protocols' bodies, as their clients write them.
    fn writers() -> Vec<(&'static str, Writer)> {
        use crate::transport::WireProtocol;
        fn writer<P: WireProtocol>(protocol: P) -> Writer {
            Box::new(move |r, tools| {
                serde_json::to_vec(&protocol.request(r, false, tools)).unwrap()
            })
        }
        vec![
            ("openai", writer(crate::openai::ChatCompletions)),
            ("anthropic", writer(crate::anthropic::Messages)),
            ("gemini", writer(crate::gemini::GenerateContent)),
        ]
    }

    /// A body as the client writes it: with the kept tools, then split.
    fn encoded(parts: &SharedParts, write: &Writer, request: &ModelRequest) -> RequestBody {
        let tools = parts.tools(request, |probe| Ok(write(probe, None)));
        let body = write(request, tools.as_deref().map(Kept::raw));
        parts.split(body, request, tools.as_deref())
    }

    #[test]
    fn the_prompt_and_tools_are_shared_and_the_bytes_unchanged() {
        let first = request(&"You are careful. ".repeat(30));
        let mut second = first.clone();
        second.messages = vec![deepfleet_proto::Message::user("something else")];
        for (name, write) in writers() {
            // One client's parts: each protocol has its own.
            let parts = SharedParts::default();
            let a = encoded(&parts, &write, &first);
            let b = encoded(&parts, &write, &second);
            // Byte for byte what the protocol writes with its own list.
            assert_eq!(a.bytes(), write(&first, None), "{name}");
            assert_eq!(b.bytes(), write(&second, None), "{name}");
            let shared: Vec<&Bytes> = a
                .parts()
                .iter()
                .filter(|p| b.parts().iter().any(|q| q.as_ptr() == p.as_ptr()))
                .collect();
            assert_eq!(shared.len(), 2, "{name}: the prompt and the tools");
            let unshared: usize = b.parts().iter().map(Bytes::len).sum::<usize>()
                - shared.iter().map(|p| p.len()).sum::<usize>();
            assert!(unshared < 300, "{name}: {unshared} bytes of its own");
        }
    }

    #[test]
    fn a_part_that_moved_from_both_ends_is_searched_for() {
        let first = request(&"You are careful. ".repeat(30));
        let mut moved = first.clone();
        moved.messages = vec![deepfleet_proto::Message::user("a longer turn ".repeat(20))];
        moved.model = "a-longer-model-name".to_owned();
        moved.max_output_tokens = Some(1000);
        for (name, write) in writers() {
            // One client's parts: each protocol has its own.
            let parts = SharedParts::default();
            let a = encoded(&parts, &write, &first);
            let b = encoded(&parts, &write, &moved);
            assert_eq!(b.bytes(), write(&moved, None), "{name}");
            let shared = b
                .parts()
                .iter()
                .filter(|p| a.parts().iter().any(|q| q.as_ptr() == p.as_ptr()))
                .count();
            assert_eq!(shared, 2, "{name}: the prompt and the tools");
        }
    }

    #[test]
    fn another_tool_list_gets_its_own_written_tools() {
        let first = request(&"You are careful. ".repeat(30));
        let mut other = first.clone();
        other.tools = Arc::from(vec![ToolSpec {
            name: "ls".to_owned(),
            description: "Lists a directory.".to_owned(),
            parameters: json!({"type": "object"}).into(),
        }]);
        for (name, write) in writers() {
            let parts = SharedParts::default();
            encoded(&parts, &write, &first);
            let body = encoded(&parts, &write, &other);
            assert_eq!(body.bytes(), write(&other, None), "{name}");
        }
    }

    #[test]
    fn a_stale_or_short_part_is_not_shared() {
        let parts = SharedParts::default();
        let mut short = request("Be brief.");
        short.tools = Arc::from(Vec::new());
        let (_, write) = writers().remove(0);
        let body = encoded(&parts, &write, &short);
        assert_eq!(body.parts().len(), 1);
        // A kept part its source no longer has is searched for in vain,
        // then replaced.
        let long = request(&"Think first. ".repeat(40));
        let source = Source::System(Arc::as_ptr(&long.system).addr());
        let stale = RawValue::from_string("\"not this\"".to_owned()).unwrap();
        let owner = Owner::System {
            _text: Arc::downgrade(&long.system),
        };
        parts.kept.insert(source, Kept::new(stale, owner));
        let body = encoded(&parts, &write, &long);
        assert_eq!(body.bytes(), write(&long, None));
        assert_eq!(body.parts().len(), 5);
        assert_ne!(parts.kept.get(&source).unwrap().raw.get(), "\"not this\"");
    }

    /// What a server receives of a body in parts: the same bytes, with
    /// their length declared.
    #[tokio::test]
    async fn a_body_in_parts_is_sent_whole_with_its_length() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = socket.read(&mut chunk).await.unwrap();
                received.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&received);
                if let Some((head, body)) = text.split_once("\r\n\r\n")
                    && let Some(length) = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                    && body.len() >= length.parse::<usize>().unwrap()
                {
                    break;
                }
                assert!(n > 0, "the request ended early: {text}");
            }
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .await
                .unwrap();
            String::from_utf8(received).unwrap()
        });
        let body = RequestBody {
            parts: Box::new([
                Bytes::from_static(b"{\"a\":"),
                Bytes::from_static(b"\"shared\""),
                Bytes::from_static(b"}"),
            ]),
        };
        crate::transport::http_client(false)
            .unwrap()
            .post(url)
            .body(body.to_reqwest())
            .send()
            .await
            .unwrap();
        let received = server.await.unwrap();
        assert!(received.contains("content-length: 14\r\n"), "{received}");
        assert!(
            received.ends_with("\r\n\r\n{\"a\":\"shared\"}"),
            "{received}"
        );
    }
}
