//! Fixtures the capability scenarios share.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use deepfleet_proto::{
    ChildResult, ContentBlock, FileData, LoggedMessage, Message, ParentLink, PendingCall,
    PendingTools, RunRecord, RunStatus, ToolCall, Usage, UserMessage,
};
use deepfleet_store::StepCommit;
use serde_json::{Map, Value};

pub fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
}

pub fn record(thread: &str, run: &str) -> RunRecord {
    RunRecord::new(run, thread, "agent", at())
}

pub fn msg(text: &str) -> LoggedMessage {
    LoggedMessage {
        message: Message::User(UserMessage {
            content: vec![ContentBlock::text(text)],
            source: None,
        }),
        tokens: 3,
    }
}

pub fn file(content: &str) -> FileData {
    FileData::text(content, at())
}

pub fn commit(run: &RunRecord, step: u64) -> StepCommit {
    StepCommit {
        thread_id: run.thread_id.clone(),
        step,
        messages: Vec::new(),
        files: BTreeMap::new(),
        state: None,
        pending: None,
        run: run.clone(),
        fan_in_expected: None,
        context: None,
    }
}

pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

pub fn pending(call_id: &str) -> PendingTools {
    PendingTools {
        calls: vec![PendingCall {
            call: ToolCall {
                id: call_id.into(),
                name: "task".into(),
                arguments: "{}".into(),
            },
            result: None,
        }],
        children: Vec::new(),
        interrupt: None,
    }
}

pub fn child(call_id: &str, output: &str) -> ChildResult {
    ChildResult {
        tool_call_id: call_id.into(),
        status: RunStatus::Success,
        output: output.into(),
        files: BTreeMap::new(),
        usage: Usage::default(),
        by_caller: Default::default(),
        runs_left: 0,
        cost_nano_usd: 0,
    }
}

pub fn parent_of(thread: &str, run: &str, call: &str) -> ParentLink {
    ParentLink {
        run_id: run.into(),
        thread_id: thread.into(),
        tool_call_id: call.into(),
    }
}
