//! The suite's fleets (the testkit's harness, with this suite's binary
//! and settings), the `scenario!` macro that runs one case on both modes,
//! and the small helpers every module uses.

use std::path::Path;

use deepfleet_proto::AgentSpec;
use deepfleet_testkit::fleet::FleetBuilder;
use deepfleet_testkit::fleet::services::{self, Service};
use deepfleet_testkit::script::{Call, ScriptBuilder, When, write_task};
use redis::AsyncCommands;

pub use deepfleet_testkit::fleet::{AMQP_URL, Fleet, REDIS_URL, task};

/// The test fleet's key for runtime context, shared by the test process
/// and its worker, scheduler and CLI processes.
pub static CONTEXT_KEY: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(deepfleet_store::sealed::ContextKey::generate_base64);

/// Runs a scenario once embedded and once on RabbitMQ + Redis with two
/// worker processes (ripgrep's `rgtest!`, for our two modes).
macro_rules! scenario {
    ($name:ident, |$fleet:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use pretty_assertions::assert_eq;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                #[allow(unused_mut)]
                let mut $fleet = $crate::support::fleet().embedded().unwrap();
                $body
                $fleet.shutdown().await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn distributed() {
                #[allow(unused_mut)]
                let Some(mut $fleet) =
                    $crate::support::distributed($crate::support::fleet(), 2).await
                else {
                    return;
                };
                $body
                $fleet.shutdown().await.unwrap();
            }
        }
    };
}
pub(crate) use scenario;

/// The suite's fleet: worker processes of the `deepfleet` binary under
/// test, the shared [`CONTEXT_KEY`], short retry backoffs.
pub fn fleet() -> FleetBuilder {
    FleetBuilder::new()
        .binary(env!("CARGO_BIN_EXE_deepfleet"))
        .context_key(&CONTEXT_KEY)
        .fast_retries()
}

/// `builder`'s fleet on RabbitMQ + Redis with `workers` worker
/// processes; `None` when the services are missing outside CI.
pub async fn distributed(builder: FleetBuilder, workers: usize) -> Option<Fleet> {
    if !require(&Service::FLEET).await {
        return None;
    }
    Some(builder.distributed(workers).await.unwrap())
}

/// Whether `services` are reachable. Under `CI=true` a missing service
/// fails the test, saying what to start; elsewhere the test is skipped
/// with a note.
pub async fn require(needed: &[Service]) -> bool {
    let Err(missing) = services::check(needed).await else {
        return true;
    };
    assert!(!services::in_ci(), "{missing}");
    eprintln!("skipping: {missing}");
    false
}

/// Writes a replay script and returns the spec's `model` string for it.
pub fn replay_model(dir: &Path, script: &str) -> String {
    let path = dir.join("script.yaml");
    std::fs::write(&path, script).expect("writing the script");
    format!("replay:{}", path.display())
}

/// A spec with `model` and defaults, tweaked by `yaml_extra` (YAML lines).
pub fn spec(name: &str, model: &str, yaml_extra: &str) -> AgentSpec {
    AgentSpec::from_yaml(&format!("name: {name}\nmodel: '{model}'\n{yaml_extra}"))
        .expect("a valid spec")
}

/// The script of a run asked to `Write two files`: two `write_file`
/// calls and an `ls` in one turn, then `answer`.
pub fn two_writes_and_ls(answer: &str) -> String {
    ScriptBuilder::new()
        .calls_then_answer(
            When::input("^Write two files$"),
            [
                Call::write_file("/a.txt", "alpha"),
                Call::write_file("/b.txt", "beta"),
                Call::ls("/"),
            ],
            answer,
        )
        .build()
}

/// A parent whose input matches `input` delegates writing `gamma` to
/// `/g.txt` and answers with its subagent's result.
pub fn delegating_one_write(input: &str) -> String {
    ScriptBuilder::new()
        .delegating(input, &[&write_task("gamma", "/g.txt")])
        .writing_subagents()
        .build()
}

/// Every value under `prefix` in the shared Redis, whatever its type:
/// `(type, key, value)`, a hash giving its fields and values, a stream its
/// entries' fields and values. Fails when nothing is there.
pub async fn redis_values(prefix: &str) -> Vec<(String, String, String)> {
    let client = redis::Client::open(REDIS_URL).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = conn.keys(format!("{prefix}:*")).await.unwrap();
    assert!(!keys.is_empty(), "the fleet wrote nothing under {prefix}");
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let values: Vec<String> = match kind.as_str() {
            "string" => vec![conn.get(&key).await.unwrap()],
            "hash" => {
                let map: Vec<(String, String)> = conn.hgetall(&key).await.unwrap();
                map.into_iter().flat_map(|(k, v)| [k, v]).collect()
            }
            "list" => conn.lrange(&key, 0, -1).await.unwrap(),
            "set" => conn.smembers(&key).await.unwrap(),
            "zset" => conn.zrange(&key, 0, -1).await.unwrap(),
            "stream" => {
                let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                entries.into_iter().flat_map(|(_, fields)| fields).collect()
            }
            other => panic!("unexpected key type {other} at {key}"),
        };
        out.extend(values.into_iter().map(|v| (kind.clone(), key.clone(), v)));
    }
    out
}

/// The task input of a recorded chat request, and whether it is the
/// run's first call (no tool result in it yet).
pub fn request_of(body: &serde_json::Value) -> (String, bool) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let input = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let first = !messages.iter().any(|m| m["role"] == "tool");
    (input, first)
}

/// The most runs open at once over a scripted server's request log,
/// among the runs whose input starts with `prefix`: a run of two model
/// calls is open from its first to its second.
pub fn most_open(requests: &[serde_json::Value], prefix: &str) -> usize {
    let mut open = std::collections::BTreeSet::new();
    let mut most = 0;
    for (input, first) in requests.iter().map(request_of) {
        if !input.starts_with(prefix) {
            continue;
        }
        if first {
            open.insert(input);
        } else {
            open.remove(&input);
        }
        most = most.max(open.len());
    }
    most
}

/// A connection to the shared broker, a channel on it, and an exclusive
/// server-named queue for replies: a submitter's side of the
/// submissions queue. The queue goes with the connection.
pub async fn reply_queue() -> (lapin::Connection, lapin::Channel, String) {
    let client = lapin::Connection::connect(AMQP_URL, lapin::ConnectionProperties::default())
        .await
        .unwrap();
    let channel = client.create_channel().await.unwrap();
    let exclusive = lapin::options::QueueDeclareOptions {
        exclusive: true,
        ..Default::default()
    };
    let replies = channel
        .queue_declare("".into(), exclusive, Default::default())
        .await
        .unwrap()
        .name()
        .to_string();
    (client, channel, replies)
}
