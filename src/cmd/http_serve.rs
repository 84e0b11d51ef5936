//! Serving an axum router on a TCP listener, for the API and the metrics
//! and health port alike.
//!
//! `axum::serve` leaves two things unset that a server facing clients it
//! does not control needs: a bound on how long a client may take to send
//! a request's head (without one, a client that sends a byte now and then
//! holds a connection and its task for ever), and `TCP_NODELAY` (without
//! it, a small response, such as an SSE event on a kept-alive connection,
//! can wait behind a delayed ACK). This loop is hyper's own server with
//! both set, and the same graceful shutdown.

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a failed accept (out of file descriptors) waits before the
/// next, rather than spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until `shutdown` is cancelled, then lets
/// the open connections finish their requests for at most `grace`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
    grace: Duration,
    header_read_timeout: Duration,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (stream, _) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY could not be set");
        }
        let service = TowerToHyperService::new(app.clone());
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "a connection ended with an error");
            }
        });
    }
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(?grace, "grace period over; closing the requests still open");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    async fn server(timeout: Duration) -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/ok", get(|| async { "ok" }));
        let stop = CancellationToken::new();
        tokio::spawn(serve(
            listener,
            app,
            stop.clone(),
            Duration::from_secs(1),
            timeout,
        ));
        (addr, stop)
    }

    #[tokio::test]
    async fn a_client_slow_to_send_its_head_is_let_go_and_others_are_served() {
        let (addr, stop) = server(Duration::from_millis(300)).await;
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /ok HTTP/1.1\r\nHost: localhost\r\n")
            .await
            .unwrap();
        let mut fast = TcpStream::connect(addr).await.unwrap();
        fast.write_all(b"GET /ok HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        fast.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // The slow one never finishes its head: the server closes it (a
        // 408 first, or at once), within a bound, not when the client
        // gives up.
        let started = Instant::now();
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "the slow connection was held open");
        assert!(started.elapsed() < Duration::from_secs(10));
        stop.cancel();
    }
}
