//! The A2A wire without a server: envelopes, params and task shapes.

use chrono::TimeZone;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn request(value: Value) -> Result<RpcRequest, (Value, RpcError)> {
    parse_request(value.to_string().as_bytes())
}

#[test]
fn an_envelope_gives_its_id_method_and_params() {
    let read =
        request(json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "t"}}));
    assert_eq!(
        read,
        Ok(RpcRequest {
            id: json!(7),
            method: "tasks/get".into(),
            params: json!({"id": "t"}),
        })
    );
}

#[test]
fn malformed_envelopes_get_the_json_rpc_codes() {
    let (id, e) = parse_request(b"{not json").unwrap_err();
    assert_eq!((id, e.code), (Value::Null, PARSE_ERROR));
    let (_, e) = request(json!([1, 2])).unwrap_err();
    assert_eq!(e.code, INVALID_REQUEST);
    // The id is echoed when it could be read.
    let (id, e) = request(json!({"jsonrpc": "1.0", "id": "a", "method": "x"})).unwrap_err();
    assert_eq!((id, e.code), (json!("a"), INVALID_REQUEST));
    let (_, e) = request(json!({"jsonrpc": "2.0", "id": 1})).unwrap_err();
    assert_eq!(e.code, INVALID_REQUEST);
    let (id, e) = request(json!({"jsonrpc": "2.0", "id": {"no": 1}, "method": "x"})).unwrap_err();
    assert_eq!((id, e.code), (Value::Null, INVALID_REQUEST));
}

#[test]
fn only_the_four_methods_are_served() {
    assert_eq!(Method::of("message/send"), Some(Method::Send));
    assert_eq!(Method::of("message/stream"), Some(Method::Stream));
    assert_eq!(Method::of("tasks/get"), Some(Method::Get));
    assert_eq!(Method::of("tasks/cancel"), Some(Method::Cancel));
    assert_eq!(Method::of("tasks/resubscribe"), None);
}

#[test]
fn answers_are_json_rpc_objects() {
    assert_eq!(
        result(&json!("r1"), json!({"kind": "task"})),
        json!({"jsonrpc": "2.0", "id": "r1", "result": {"kind": "task"}})
    );
    assert_eq!(
        error(&Value::Null, &RpcError::task_not_found("t9")),
        json!({"jsonrpc": "2.0", "id": null,
               "error": {"code": -32001, "message": "Task 't9' not found."}})
    );
}

fn message(parts: Value) -> Value {
    json!({"message": {"role": "user", "messageId": "m1", "parts": parts, "kind": "message"}})
}

#[test]
fn text_and_data_parts_become_one_user_message() {
    let params = message(json!([
        {"kind": "text", "text": "hello"},
        {"kind": "data", "data": {"city": "Oslo"}},
    ]));
    assert_eq!(
        send_params(&params),
        Ok(SendParams {
            text: "hello\n\n{\"city\":\"Oslo\"}".into(),
            context_id: None,
            blocking: true,
            task_id: None,
            decisions: None,
        })
    );
}

#[test]
fn the_context_and_blocking_flag_are_read() {
    let mut params = message(json!([{"kind": "text", "text": "hi"}]));
    params["message"]["contextId"] = json!("thread-1");
    params["configuration"] = json!({"blocking": false});
    let read = send_params(&params).unwrap();
    assert_eq!(read.context_id.as_deref(), Some("thread-1"));
    assert!(!read.blocking);
}

#[test]
fn a_data_part_with_decisions_answers_a_task() {
    let mut params =
        message(json!([{"kind": "data", "data": {"decisions": [{"type": "approve"}]}}]));
    params["message"]["taskId"] = json!("run-1");
    let read = send_params(&params).unwrap();
    assert_eq!(read.task_id.as_deref(), Some("run-1"));
    assert_eq!(
        read.decisions,
        Some(json!({"decisions": [{"type": "approve"}]}))
    );
    params["message"]["taskId"] = json!("");
    assert_eq!(send_params(&params).unwrap_err().code, INVALID_PARAMS);
}

#[test]
fn bad_messages_are_invalid_params_that_say_why() {
    let cases = [
        (json!({}), "params.message"),
        (
            json!({"message": {"role": "agent", "messageId": "m", "parts": []}}),
            "role",
        ),
        (
            json!({"message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}}),
            "messageId",
        ),
        (message(json!("text")), "parts must be a list"),
        (message(json!([])), "some text or data"),
        (
            message(json!([{"kind": "file", "file": {"uri": "x"}}])),
            "file parts",
        ),
        (message(json!([{"kind": "image"}])), "kind"),
        (message(json!([{"kind": "text"}])), "text must be a string"),
        (
            message(json!([{"kind": "data", "data": 3}])),
            "data must be an object",
        ),
    ];
    for (params, says) in cases {
        let e = send_params(&params).unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS, "{params}");
        assert!(e.message.contains(says), "{params}: {}", e.message);
    }
    let mut params = message(json!([{"kind": "text", "text": "x"}]));
    params["message"]["contextId"] = json!(5);
    assert_eq!(send_params(&params).unwrap_err().code, INVALID_PARAMS);
}

#[test]
fn a_task_id_is_a_non_empty_string() {
    assert_eq!(task_id(&json!({"id": "r"})), Ok("r".into()));
    for params in [json!({}), json!({"id": ""}), json!({"id": 3}), Value::Null] {
        assert_eq!(task_id(&params).unwrap_err().code, INVALID_PARAMS);
    }
}

#[test]
fn run_statuses_map_to_task_states() {
    let cases = [
        (None, false, "submitted", false),
        (None, true, "canceled", true),
        (Some(RunStatus::Pending), false, "submitted", false),
        (Some(RunStatus::Running), false, "working", false),
        (Some(RunStatus::Waiting), false, "working", false),
        (
            Some(RunStatus::AwaitingHuman),
            false,
            "input-required",
            true,
        ),
        (Some(RunStatus::Success), false, "completed", true),
        (Some(RunStatus::Cancelled), false, "canceled", true),
        (Some(RunStatus::Error), false, "failed", true),
        (Some(RunStatus::Timeout), false, "failed", true),
    ];
    for (status, cancelled, name, last) in cases {
        let state = TaskState::of(status, cancelled);
        assert_eq!(
            (state.as_str(), state.is_final()),
            (name, last),
            "{status:?}"
        );
    }
}

fn view(state: TaskState) -> TaskView {
    TaskView {
        id: "run-1".into(),
        context_id: "thread-1".into(),
        state,
        timestamp: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
        answer: (state == TaskState::Completed).then(|| "the answer".into()),
        error: (state == TaskState::Failed).then(|| "the model is down".into()),
    }
}

#[test]
fn a_completed_task_carries_its_answer_as_message_and_artifact() {
    assert_eq!(
        view(TaskState::Completed).task(),
        json!({
            "kind": "task",
            "id": "run-1",
            "contextId": "thread-1",
            "status": {
                "state": "completed",
                "timestamp": "2026-01-02T03:04:05.000Z",
                "message": {
                    "kind": "message", "role": "agent", "messageId": "run-1-completed",
                    "taskId": "run-1", "contextId": "thread-1",
                    "parts": [{"kind": "text", "text": "the answer"}],
                },
            },
            "artifacts": [{"artifactId": "run-1-answer", "name": "answer",
                           "parts": [{"kind": "text", "text": "the answer"}]}],
        })
    );
}

#[test]
fn a_working_task_has_no_message_and_no_artifact() {
    let working = view(TaskState::Working);
    assert_eq!(
        working.status_update(false),
        json!({"kind": "status-update", "taskId": "run-1", "contextId": "thread-1",
               "status": {"state": "working", "timestamp": "2026-01-02T03:04:05.000Z"},
               "final": false})
    );
    assert_eq!(working.artifact_update(), None);
    assert!(working.task().get("artifacts").is_none());
}

#[test]
fn a_failed_task_says_why() {
    let failed = view(TaskState::Failed).status_update(true);
    assert_eq!(failed["final"], true);
    assert_eq!(
        failed["status"]["message"]["parts"][0]["text"],
        "the model is down"
    );
    let update = view(TaskState::Completed).artifact_update().unwrap();
    assert_eq!(update["artifact"]["parts"][0]["text"], "the answer");
    assert_eq!(update["lastChunk"], true);
}
