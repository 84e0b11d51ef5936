//! Calling a Lua script: its keys and arguments, and `EVALSHA` with a
//! reload on `NOSCRIPT`. The scripts themselves (one file each under
//! `store/lua/`) are loaded by the capability that runs them.

use deepfleet_proto::LoggedMessage;
use redis::{FromRedisValue, RedisResult, Script};

use super::codec::Codec;
use super::conn::Conn;
use crate::error::StoreError;

/// One script call: its keys (all in one slot) and arguments.
pub(crate) struct Call<'s> {
    script: &'s Script,
    keys: Vec<String>,
    args: Vec<String>,
}

impl<'s> Call<'s> {
    pub(crate) fn new(script: &'s Script, keys: Vec<String>) -> Self {
        Call {
            script,
            keys,
            args: Vec::new(),
        }
    }

    pub(crate) fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The payload this call sends: keys and arguments.
    pub(crate) fn bytes(&self) -> u64 {
        let len: usize = self.keys.iter().chain(&self.args).map(String::len).sum();
        u64::try_from(len).unwrap_or(u64::MAX)
    }

    /// EVALSHA, loading the script on NOSCRIPT (a restarted or failed-over
    /// server has an empty script cache).
    pub(crate) async fn invoke<T: FromRedisValue>(&self, mut conn: Conn) -> RedisResult<T> {
        let mut invocation = self.script.prepare_invoke();
        for key in &self.keys {
            invocation.key(key);
        }
        for arg in &self.args {
            invocation.arg(arg);
        }
        invocation.invoke_async(&mut conn).await
    }

    /// Appends a message count and the messages, as `commit_step.lua` and
    /// `create_run.lua` read them, encoded by `codec`; `log` names the
    /// log key in errors.
    pub(crate) fn messages(
        self,
        codec: &Codec,
        log: &str,
        messages: &[LoggedMessage],
    ) -> Result<Self, StoreError> {
        let call = self.arg(messages.len().to_string());
        messages.iter().try_fold(call, |call, message| {
            Ok(call.arg(codec.encode(log, message)?))
        })
    }
}
