//! Reading an answer's body within its bounds, streamed or not: at most
//! `max_response_bytes` in all, and no gap of more than `idle_timeout`
//! between two chunks. The request timeout still bounds the whole
//! attempt; these two catch what it cannot: a runaway or hostile answer
//! that would grow the worker by gigabytes, and a stream that stalls
//! while its connection stays open.

use std::time::Duration;

use bytes::Bytes;

use crate::classify::classify_body_read;
use crate::{ErrorKind, ModelError};

/// The bounds of one answer's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyLimits {
    /// Longest wait for the next chunk.
    pub(crate) idle_timeout: Duration,
    /// Most bytes read in all.
    pub(crate) max_bytes: u64,
}

/// A response body read chunk by chunk within [`BodyLimits`].
pub(crate) struct BoundedBody {
    response: reqwest::Response,
    limits: BodyLimits,
    received: u64,
}

impl BoundedBody {
    /// The body of `response`; refused at once when its declared length is
    /// already over the cap.
    pub(crate) fn new(response: reqwest::Response, limits: BodyLimits) -> Result<Self, ModelError> {
        if let Some(length) = response.content_length()
            && length > limits.max_bytes
        {
            return Err(too_large(limits.max_bytes));
        }
        Ok(BoundedBody {
            response,
            limits,
            received: 0,
        })
    }

    /// The next chunk, `None` at the end of the body.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, ModelError> {
        let idle = self.limits.idle_timeout;
        let chunk = tokio::time::timeout(idle, self.response.chunk())
            .await
            .map_err(|_| {
                ModelError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the provider sent nothing for {:.1} s in the middle of its answer \
                         (idle_timeout_secs)",
                        idle.as_secs_f64()
                    ),
                )
            })?
            .map_err(|e| classify_body_read(&e))?;
        if let Some(chunk) = &chunk {
            self.received = self.received.saturating_add(chunk.len() as u64);
            if self.received > self.limits.max_bytes {
                return Err(too_large(self.limits.max_bytes));
            }
        }
        Ok(chunk)
    }

    /// The whole body; over the cap it is an error.
    pub(crate) async fn bytes(mut self) -> Result<Vec<u8>, ModelError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// At most `limit` bytes of the body, the rest left unread, and what
    /// came before a failure: an error answer's message is all a client
    /// needs of it, and its status says more than a cut body.
    pub(crate) async fn prefix(mut self, limit: usize) -> Vec<u8> {
        let mut body = Vec::new();
        while body.len() < limit {
            let Ok(Some(chunk)) = self.chunk().await else {
                break;
            };
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        body
    }
}

fn too_large(max_bytes: u64) -> ModelError {
    ModelError::new(
        ErrorKind::ResponseTooLarge,
        format!(
            "the provider's answer is larger than {max_bytes} bytes (max_response_bytes); \
             it was not read further"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A server that promises 100 bytes of answer, sends three and hangs
    /// up.
    async fn cut_short() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc";
            socket.write_all(head.as_bytes()).await.unwrap();
        });
        url
    }

    #[tokio::test]
    async fn an_answer_cut_short_is_a_transport_failure_another_attempt_can_get_past() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = cut_short().await;
        let response = reqwest::Client::new().get(&url).send().await.unwrap();
        let limits = BodyLimits {
            idle_timeout: Duration::from_secs(5),
            max_bytes: 1_000,
        };
        let error = BoundedBody::new(response, limits)
            .unwrap()
            .bytes()
            .await
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::Transport, "{error}");
        assert!(error.is_retryable());
    }
}
