//! `execute` in real runs: one tree with the file tools, no host secrets
//! or network, limits that hold, large output offloaded, and a worker
//! that cannot sandbox refusing the run. Needs bubblewrap: without it the
//! scenarios are skipped with a note, and fail under `CI=true`
//! (`scripts/services.sh` installs it).

use std::sync::Arc;

use deepfleet_proto::ResultStatus;
use deepfleet_testkit::fleet::services;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use deepfleet_worker::sandbox::SandboxHost;
use serde_json::json;

use crate::support::{replay_model, scenario, spec, task};

/// Whether this machine cannot sandbox (and the scenario should stop);
/// under CI that fails the test.
pub async fn sandbox_missing() -> bool {
    let Err(reason) = SandboxHost::system().available().await else {
        return false;
    };
    assert!(
        !services::in_ci(),
        "the sandbox scenarios need bubblewrap (apt-get install bubblewrap): {reason}"
    );
    eprintln!("skipping: no sandbox here: {reason}");
    true
}

fn execute(command: &str) -> Call {
    Call::new("execute", json!({"command": command}))
}

/// Writes a script, runs it (the script writes a file), then reads the
/// file it wrote, and answers with what was read.
fn script_then_read() -> String {
    let script =
        "mkdir -p /out\nprintf 'one\\ntwo\\nthree\\n' > /out/words.txt\nwc -l < /out/words.txt\n";
    ScriptBuilder::new()
        .call(When::at_turn(0), [Call::write_file("/count.sh", script)])
        .call(
            When::at_turn(1).last_tool("^Updated file /count.sh$"),
            [execute("sh /count.sh")],
        )
        .call(
            When::at_turn(2).last_tool(r"^3\n\[Command succeeded with exit code 0\]$"),
            [Call::read_file("/out/words.txt")],
        )
        .answer(When::at_turn(3), "{{last_tool}}")
        .build()
}

scenario!(
    write_file_then_execute_then_read_file_see_one_tree,
    |fleet| {
        if sandbox_missing().await {
            fleet.shutdown().await.unwrap();
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(
            "coder",
            &replay_model(dir.path(), &script_then_read()),
            "sandbox: {}\n",
        );
        let results = fleet.run(&spec, &[task("t1", "count")]).await.unwrap();
        let r = &results[0];
        assert_eq!(r.error, None);
        assert_eq!(r.output, "@@ lines 1-3 of 3 @@\none\ntwo\nthree");
        assert_eq!(r.steps, 4);
        assert_eq!(
            r.files.get("/out/words.txt").map(String::as_str),
            Some("one\ntwo\nthree\n")
        );
    }
);

/// One command that looks for the host's secrets and network.
fn snooping() -> String {
    let command = "cat /etc/shadow; ls /root; env | sort; \
        perl -MIO::Socket::INET -e 'for (@ARGV) { IO::Socket::INET->new(PeerAddr => $_, Timeout => 3) ? print \"$_ connected\\n\" : print \"$_: $!\\n\" }' 127.0.0.1:6379 127.0.0.1:5672 1.1.1.1:443";
    ScriptBuilder::new()
        .calls_then_answer(When::always(), [execute(command)], "{{last_tool}}")
        .build()
}

// Workers of the distributed half hold the fleet's context key, queue and
// store settings in their environment, and Redis and RabbitMQ listen on
// 127.0.0.1: none of it reaches the command.
scenario!(commands_see_no_host_secret_and_reach_no_address, |fleet| {
    if sandbox_missing().await {
        fleet.shutdown().await.unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "snoop",
        &replay_model(dir.path(), &snooping()),
        "sandbox: {}\n",
    );
    let results = fleet
        .run(&spec, &[task("t1", "look around")])
        .await
        .unwrap();
    assert_eq!(
        results[0].output,
        "cat: /etc/shadow: No such file or directory\n\
         ls: cannot access '/root': No such file or directory\n\
         HOME=/tmp\nLANG=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\nPWD=/\n\
         TMPDIR=/tmp\nUSER=user\n\
         127.0.0.1:6379: Connection refused\n127.0.0.1:5672: Connection refused\n\
         1.1.1.1:443: Network is unreachable\n\
         [Command succeeded with exit code 0]"
    );
});

/// A command past its timeout, one past its memory, a fork bomb, then a
/// plain command: each turn goes on only if the last result says what it
/// must (the script has no rule otherwise, and the run fails).
fn over_the_limits() -> String {
    let bomb = "perl -e '$| = 1; while (1) { my $pid = fork; if (!defined $pid) { $failed++ or print qq(fork: $!\\n) } elsif ($pid == 0) { sleep 1000; exit } }'";
    ScriptBuilder::new()
        .call(
            When::at_turn(0),
            [Call::new(
                "execute",
                json!({"command": "echo before; sleep 1000", "timeout": 1}),
            )],
        )
        .call(
            When::at_turn(1).last_tool(r"^before\n\[Command timed out after 1 seconds and was killed\]$"),
            [execute("perl -e '$n = shift; $x = q(a) x ($n * 1024 * 1024); print qq(got it\\n)' 512")],
        )
        .call(
            When::at_turn(2).last_tool(r"^Out of memory!\n\[Command failed with exit code 1\]$"),
            [Call::new("execute", json!({"command": bomb, "timeout": 2}))],
        )
        .call(
            When::at_turn(3).last_tool(
                r"^fork: Resource temporarily unavailable\n\[Command timed out after 2 seconds and was killed\]$",
            ),
            [execute("echo alive")],
        )
        .answer(When::at_turn(4), "{{last_tool}}")
        .build()
}

scenario!(timeouts_memory_and_process_limits_stop_commands, |fleet| {
    if sandbox_missing().await {
        fleet.shutdown().await.unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let limits = "sandbox: {memory_mb: 64, max_processes: 8}\n";
    let spec = spec(
        "limits",
        &replay_model(dir.path(), &over_the_limits()),
        limits,
    );
    let results = fleet.run(&spec, &[task("t1", "misbehave")]).await.unwrap();
    let r = &results[0];
    assert_eq!(r.error, None);
    assert_eq!(r.output, "alive\n[Command succeeded with exit code 0]");
    assert_eq!(r.steps, 5);
});

fn long_output() -> String {
    ScriptBuilder::new()
        .calls_then_answer(When::always(), [execute("seq 1 30000")], "{{last_tool}}")
        .build()
}

// deepagents offloads `execute` like any tool not in its excluded list.
scenario!(
    large_output_is_capped_then_offloaded_with_a_preview,
    |fleet| {
        if sandbox_missing().await {
            fleet.shutdown().await.unwrap();
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(
            "long",
            &replay_model(dir.path(), &long_output()),
            "sandbox: {}\n",
        );
        let results = fleet.run(&spec, &[task("t1", "count far")]).await.unwrap();
        let r = &results[0];
        assert!(
            r.output
                .starts_with("Tool result too large, the result of this tool call"),
            "{}",
            r.output
        );
        assert!(r.output.contains("1  1\n2  2\n"), "{}", r.output);
        // The preview's tail: the last (cut) line, then the two status lines.
        let tail: Vec<&str> = r.output.lines().rev().take(2).collect();
        assert_eq!(
            tail,
            [
                "18520  [Output was truncated due to size limits]",
                "18519  [Command succeeded with exit code 0]"
            ],
            "{}",
            r.output
        );
        let (path, saved) = r
            .files
            .iter()
            .find(|(path, _)| path.starts_with("/large_tool_results/"))
            .expect("the offloaded result");
        assert!(r.output.contains(path.as_str()));
        assert!(saved.starts_with("1\n2\n3\n"));
        assert!(saved.ends_with(
            "\n[Command succeeded with exit code 0]\n[Output was truncated due to size limits]"
        ));
    }
);

fn runs_a_command() -> String {
    ScriptBuilder::new()
        .calls_then_answer(When::always(), [execute("echo hi")], "{{last_tool}}")
        .build()
}

/// Checks the run of a worker that cannot sandbox: refused at its first
/// step with the reason, not retried.
fn assert_refused(results: &[deepfleet_proto::ResultLine]) {
    let r = &results[0];
    assert_eq!(r.status, ResultStatus::Error);
    assert_eq!(r.steps, 0);
    assert_eq!(
        r.error.as_deref(),
        Some(
            "sandbox_unavailable: the agent declares a sandbox for `execute`, and this worker \
             cannot provide one: no `bwrap` on the search path (install Debian's `bubblewrap` \
             and `util-linux`)"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_a_sandbox_refuses_the_run_embedded() {
    let host = Arc::new(SandboxHost::searching("/nonexistent"));
    let mut fleet = crate::support::fleet().sandbox(host).embedded().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "refused",
        &replay_model(dir.path(), &runs_a_command()),
        "sandbox: {}\n",
    );
    assert_refused(&fleet.run(&spec, &[task("t1", "run")]).await.unwrap());
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_a_sandbox_refuses_the_run_distributed() {
    let Some(mut fleet) = crate::support::distributed(crate::support::fleet(), 0).await else {
        return;
    };
    fleet
        .spawn_worker_with(&[], &[("PATH", "/nonexistent")])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "refused",
        &replay_model(dir.path(), &runs_a_command()),
        "sandbox: {}\n",
    );
    assert_refused(&fleet.run(&spec, &[task("t1", "run")]).await.unwrap());
    fleet.shutdown().await.unwrap();
}
