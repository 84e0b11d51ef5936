//! The scripted server's accept loop: HTTP/1.1 and HTTP/2 without TLS
//! (h2c, by prior knowledge) on one listener.
//!
//! `axum::serve` speaks HTTP/1.1 only here (and its HTTP/2 would allow a
//! connection 200 streams): a client with `http2_prior_knowledge` puts
//! every call of a worker on one connection, so the streams must be as
//! many as the calls a benchmark keeps in flight.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How many request bytes a connection may send before the server has
/// read them. With hyper's 1 MiB, tens of thousands of calls sending their
/// bodies at once get the window back in slivers and send in frames of a
/// few bytes, which h2 takes for a small-frame flood and answers with
/// `GOAWAY ENHANCE_YOUR_CALM`.
const CONNECTION_WINDOW: u32 = 1 << 30;

/// Pause after a failed accept (out of descriptors, most often), so the
/// loop does not spin while connections close.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `app` on `listener` until `stop` completes or the future is
/// dropped; the connections then close once their requests are answered
/// (a client's pooled connection must not reach a server that is gone).
pub(crate) async fn serve(listener: TcpListener, app: Router, stop: impl Future<Output = ()>) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(u32::MAX)
        .initial_connection_window_size(CONNECTION_WINDOW);
    let closing = CancellationToken::new();
    let _close_on_drop = closing.clone().drop_guard();
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        // Answers are small and awaited one by one: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let closing = closing.clone();
        tokio::spawn(async move {
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            // A connection's error (a client gone mid-request) ends that
            // connection only.
            tokio::select! {
                _ = connection.as_mut() => {}
                () = closing.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
}
