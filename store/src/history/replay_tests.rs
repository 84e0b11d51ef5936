//! Replay's unit tests.

use chrono::{DateTime, TimeZone, Utc};
use deepfleet_proto::{ContentBlock, Message, RunRecord, UserMessage};
use serde_json::json;

use super::*;
use crate::checkpoints::StepCommit;
use crate::history::{Conversation, ThreadUpdate, Timeline};
use crate::runs::ThreadSeed;

fn at() -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default()
}

fn message(text: &str) -> LoggedMessage {
    LoggedMessage {
        message: Message::User(UserMessage {
            content: vec![ContentBlock::text(text)],
            source: None,
        }),
        tokens: 1,
    }
}

fn file(text: &str) -> FileData {
    FileData::text(text, at())
}

fn commit(step: u64, log_len: u64, files: &[(&str, Option<&str>)]) -> Logged {
    commit_of("r1", step, log_len, files)
}

fn commit_of(run_id: &str, step: u64, log_len: u64, files: &[(&str, Option<&str>)]) -> Logged {
    let run = RunRecord::new(run_id, "t", "agent", at());
    let commit = StepCommit {
        thread_id: "t".into(),
        step,
        messages: Vec::new(),
        files: files
            .iter()
            .map(|(p, f)| ((*p).to_owned(), f.map(file)))
            .collect(),
        state: Some(Map::from_iter([("n".to_owned(), json!(step))])),
        pending: None,
        run,
        fan_in_expected: None,
        context: None,
    };
    Logged {
        log_len,
        change: Change::of_commit(&commit),
    }
}

#[test]
fn replays_prefixes_files_and_state_newest_first() {
    let log: Vec<_> = ["a", "b", "c", "d"].into_iter().map(message).collect();
    let history = [
        commit(0, 2, &[("/x", Some("1"))]),
        commit(1, 3, &[("/x", Some("2")), ("/y", Some("3"))]),
        commit(2, 4, &[("/x", None)]),
    ];
    let all = replay(&log, &history, &HistoryQuery::newest(10));
    assert_eq!(all.iter().map(|c| c.id).collect::<Vec<_>>(), [3, 2, 1]);
    assert_eq!(all[2].checkpoint.messages, log[..2]);
    assert_eq!(all[2].checkpoint.files["/x"], file("1"));
    assert_eq!(all[1].checkpoint.files["/x"], file("2"));
    assert!(!all[0].checkpoint.files.contains_key("/x"));
    assert_eq!(all[0].checkpoint.files.len(), 1);
    assert_eq!(all[1].checkpoint.state["n"], json!(1));
    let query = HistoryQuery {
        before: Some(3),
        ..HistoryQuery::newest(1)
    };
    let page = replay(&log, &history, &query);
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, 2);
    assert_eq!(page[0].checkpoint.messages, log[..3]);
    let by_id = HistoryQuery {
        id: Some(1),
        ..HistoryQuery::newest(10)
    };
    assert_eq!(replay(&log, &history, &by_id), all[2..]);
    let by_run = HistoryQuery {
        run_id: Some("other".into()),
        ..HistoryQuery::newest(10)
    };
    assert!(replay(&log, &history, &by_run).is_empty());
}

#[test]
fn seeds_set_fields_and_files_but_make_no_checkpoint() {
    let seed = ThreadSeed {
        messages: vec![message("hi")],
        files: BTreeMap::from([("/s".to_owned(), file("seed"))]),
        state: Map::from_iter([("todo".to_owned(), json!(1))]),
    };
    let Some(seeded) = Change::of_seed("r0", &seed) else {
        panic!("a seed with files is a change");
    };
    let mut first = commit(0, 2, &[]);
    first.change.state = None;
    let history = [
        Logged {
            log_len: 1,
            change: seeded,
        },
        first,
    ];
    let log = vec![message("hi"), message("ho")];
    let all = replay(&log, &history, &HistoryQuery::newest(10));
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].checkpoint.files["/s"], file("seed"));
    assert_eq!(all[0].checkpoint.state["todo"], json!(1));
    assert!(Change::of_seed("r", &ThreadSeed::default()).is_none());
}

#[test]
fn keeping_the_latest_folds_up_to_the_newest_commit_and_keeps_later_seeds() {
    let seed = ThreadSeed {
        messages: Vec::new(),
        files: BTreeMap::from([("/s".to_owned(), file("seed"))]),
        state: Map::new(),
    };
    let Some(seeded) = Change::of_seed("r1", &seed) else {
        panic!("a seed with files is a change");
    };
    let later = Logged {
        log_len: 4,
        change: seeded,
    };
    let history = [
        commit(0, 2, &[("/x", Some("1"))]),
        commit(1, 3, &[("/x", None), ("/y", Some("2"))]),
        later.clone(),
    ];
    let Some(kept) = keep_latest(&history) else {
        panic!("an older checkpoint is there to drop");
    };
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1], later);
    assert_eq!(
        (kept[0].log_len, kept[0].change.kind),
        (3, ChangeKind::Commit { step: 1 })
    );
    assert_eq!(
        kept[0].change.files,
        BTreeMap::from([("/y".to_owned(), Some(file("2")))])
    );
    let log: Vec<_> = ["a", "b", "c", "d"].into_iter().map(message).collect();
    let all = HistoryQuery::newest(10);
    assert_eq!(
        folded(replay(&log, &kept, &all)),
        folded(replay(&log, &history, &all)[..1].to_vec())
    );
    assert_eq!(replay(&log, &kept, &all)[0].parent, None);
    assert_eq!(keep_latest(&kept[..1]), None);
    assert_eq!(keep_latest(&[later]), None);
}

/// Checkpoints with their parents left out: a fold drops them.
fn folded(checkpoints: Vec<CheckpointState>) -> Vec<CheckpointState> {
    checkpoints
        .into_iter()
        .map(|c| CheckpointState { parent: None, ..c })
        .collect()
}

fn seed_of(run_id: &str, log_len: u64) -> Logged {
    let seed = ThreadSeed {
        messages: vec![message(run_id)],
        ..ThreadSeed::default()
    };
    let Some(change) = Change::of_seed(run_id, &seed) else {
        panic!("a seed of messages is a change");
    };
    Logged { log_len, change }
}

/// a(seed r1) b c (r1's two steps, checkpoints 1 and 2), d (r2's seed),
/// e (r2's step, checkpoint 3).
fn two_runs() -> Timeline {
    Timeline {
        step: 3,
        base: 0,
        log: ["a", "b", "c", "d", "e"].into_iter().map(message).collect(),
        history: vec![
            seed_of("r1", 1),
            commit_of("r1", 0, 2, &[("/x", Some("1"))]),
            commit_of("r1", 1, 3, &[("/y", Some("2"))]),
            seed_of("r2", 4),
            commit_of("r2", 2, 5, &[("/x", None)]),
        ],
    }
}

/// `update` applied to `timeline` as the stores apply it.
fn applied(mut timeline: Timeline, update: &ThreadUpdate) -> Timeline {
    assert_eq!(update.fence, timeline.fence());
    if let Some(base) = update.new_base() {
        timeline.base = base;
    }
    timeline.log.extend(update.messages().iter().cloned());
    timeline.step += 1;
    timeline.history.push(Logged {
        log_len: timeline.log.len() as u64,
        change: update.change(),
    });
    timeline
}

#[test]
fn a_fork_branches_at_the_log_end_and_leaves_the_old_checkpoints_as_they_were() {
    let before = two_runs();
    let old = before.checkpoints(&HistoryQuery::newest(10));
    let Some(to) = before.restore_checkpoint(1) else {
        panic!("checkpoint 1 is there");
    };
    assert_eq!(to.checkpoint.messages, before.log[..2]);
    let fork = ThreadUpdate::restoring("t", &before, to, CheckpointSource::Fork);
    assert_eq!(fork.new_base(), Some(5));
    let mut after = applied(before, &fork);
    // The next step on the new branch appends after it.
    after.log.push(message("f"));
    after.history.push(commit_of("r3", 4, 8, &[]));
    let all = after.checkpoints(&HistoryQuery::newest(10));
    assert_eq!(
        all.iter().map(|c| c.id).collect::<Vec<_>>(),
        [5, 4, 3, 2, 1]
    );
    assert_eq!(all[2..], old[..]);
    let fork_point = &all[1];
    assert_eq!(
        (fork_point.parent, fork_point.source),
        (Some(1), CheckpointSource::Fork)
    );
    assert_eq!(fork_point.checkpoint.messages, after.log[..2]);
    assert_eq!(fork_point.checkpoint.files, old[2].checkpoint.files);
    let next = &all[0];
    assert_eq!(
        (next.parent, next.source),
        (Some(4), CheckpointSource::Loop)
    );
    let texts: Vec<_> = next.checkpoint.messages.clone();
    assert_eq!(texts, [message("a"), message("b"), message("f")]);
    assert_eq!(all[3].parent, Some(1));
}

#[test]
fn an_update_replaces_files_and_state_and_appends_messages() {
    let before = two_runs();
    let current = before.checkpoints(&HistoryQuery::newest(1)).remove(0);
    let mut checkpoint = current.checkpoint.clone();
    checkpoint.step = before.step;
    let mut update = ThreadUpdate::of("t", &checkpoint);
    update.files.insert("/z".into(), file("3"));
    update.state.insert("todos".into(), json!([1]));
    update.conversation = Conversation::Append(vec![message("u")]);
    assert_eq!(update.parent, Some(3));
    let after = applied(before, &update);
    let newest = after.checkpoints(&HistoryQuery::newest(1)).remove(0);
    assert_eq!((newest.id, newest.source), (4, CheckpointSource::Update));
    assert_eq!(newest.checkpoint.messages.len(), 6);
    assert_eq!(newest.checkpoint.files.len(), 2);
    assert_eq!(newest.checkpoint.state["todos"], json!([1]));
}

#[test]
fn before_a_run_is_the_state_before_its_seed_and_only_while_its_changes_are_the_newest() {
    let timeline = two_runs();
    let Some(before_r2) = timeline.restore_before_run("r2") else {
        panic!("r2's changes are the newest");
    };
    assert_eq!(before_r2.parent, Some(2));
    assert_eq!(before_r2.checkpoint.messages, timeline.log[..3]);
    assert_eq!(before_r2.checkpoint.files.len(), 2);
    // r2 came after r1: r1 is not rolled back alone.
    assert!(timeline.restore_before_run("r1").is_none());
    let only_r1 = Timeline {
        history: timeline.history[..3].to_vec(),
        ..timeline.clone()
    };
    let Some(before_r1) = only_r1.restore_before_run("r1") else {
        panic!("r1's changes are the newest");
    };
    assert_eq!(before_r1.parent, None);
    assert!(before_r1.checkpoint.messages.is_empty() && before_r1.checkpoint.files.is_empty());
    assert!(timeline.restore_before_run("r9").is_none());
    // Rolling r2 back, then r2's rollback is the newest change: r1 can no
    // longer be rolled back alone.
    let rollback = ThreadUpdate::restoring("t", &timeline, before_r2, CheckpointSource::Rollback);
    let after = applied(timeline, &rollback);
    let now = after.checkpoints(&HistoryQuery::newest(1)).remove(0);
    assert_eq!(now.checkpoint.messages, after.log[..3]);
    assert_eq!(
        (now.parent, now.source),
        (Some(2), CheckpointSource::Rollback)
    );
    assert!(after.restore_before_run("r2").is_none());
}

#[test]
fn keeping_the_latest_after_a_branch_keeps_its_base() {
    let before = two_runs();
    let Some(to) = before.restore_checkpoint(1) else {
        panic!("checkpoint 1 is there");
    };
    let fork = ThreadUpdate::restoring("t", &before, to, CheckpointSource::Fork);
    let mut after = applied(before, &fork);
    after.log.push(message("f"));
    after.history.push(commit_of("r3", 4, 8, &[]));
    let Some(kept) = keep_latest(&after.history) else {
        panic!("older checkpoints are there to drop");
    };
    let all = HistoryQuery::newest(10);
    let newest = replay(&after.log, &after.history, &all);
    assert_eq!(
        folded(replay(&after.log, &kept, &all)),
        folded(newest[..1].to_vec())
    );
    // Kept at a fork: the fork's parent is gone too.
    let at_fork = &after.history[..after.history.len() - 1];
    let Some(kept) = keep_latest(at_fork) else {
        panic!("older checkpoints are there to drop");
    };
    let only = replay(&after.log, &kept, &all);
    assert_eq!(
        (only.len(), only[0].parent, only[0].source),
        (1, None, CheckpointSource::Fork)
    );
}
