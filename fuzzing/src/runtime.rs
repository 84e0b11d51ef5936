//! A fresh single-threaded runtime per input, so timers and tasks one
//! input spawns (a delayed retry, say) die with it and never reach the
//! next input.

use std::future::Future;

/// Runs `future` to completion on a new current-thread runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(future),
        Err(e) => panic!("no tokio runtime: {e}"),
    }
}
