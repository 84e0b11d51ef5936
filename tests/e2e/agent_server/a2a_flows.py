"""The helper assistant as an A2A agent on a deepfleet scheduler, through
the official a2a-sdk client (its v0.3 JSON-RPC transport, chosen from the
agent card's protocolVersion), plus the JSON-RPC details a client hides.

Usage: python a2a_flows.py URL. Exits non-zero on the first failed check.
"""
import asyncio
import json
import sys
import uuid

import httpx

from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

CARD = "/.well-known/agent-card.json?assistant_id=helper"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def request(text, context_id=None):
    message = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=str(uuid.uuid4()))
    if context_id:
        message.context_id = context_id
    return SendMessageRequest(message=message)


def answer(task):
    return [part.text for artifact in task.artifacts for part in artifact.parts]


async def send(client, req):
    events = [event async for event in client.send_message(req)]
    check(len(events) == 1 and events[0].HasField("task"), "message/send answers one task")
    return events[0].task


async def main(url):
    async with httpx.AsyncClient(timeout=60) as http:
        card = (await http.get(url + CARD)).json()
        check(card["url"].endswith("/a2a/" + card["skills"][0]["id"]), "the card names the endpoint")
        check(card["capabilities"]["streaming"] is True, "the card says it streams")

        client = await create_client(
            url, ClientConfig(streaming=False, httpx_client=http), relative_card_path=CARD
        )
        first = await send(client, request("echo hello"))
        check(first.status.state == TaskState.TASK_STATE_COMPLETED, "the task completed")
        check(answer(first) == ["echo hello"], f"its artifact is the answer: {answer(first)}")

        second = await send(client, request("echo again", first.context_id))
        check(second.context_id == first.context_id, "a second message keeps the context")
        check(second.id != first.id, "as a new task")
        state = (await http.get(f"{url}/threads/{first.context_id}/state")).json()
        texts = [m["content"] for m in state["values"]["messages"]]
        check(texts == ["echo hello", "echo hello", "echo again", "echo hello"],
              f"on the same thread: {texts}")

        got = await client.get_task(GetTaskRequest(id=first.id))
        check(got.id == first.id and got.status.state == TaskState.TASK_STATE_COMPLETED,
              "tasks/get finds the task")
        check(answer(got) == ["echo hello"], "with its answer")

        streamer = await create_client(
            url, ClientConfig(streaming=True, httpx_client=http), relative_card_path=CARD
        )
        events = [e async for e in streamer.send_message(request("echo streamed"))]
        updates = [e.status_update for e in events if e.HasField("status_update")]
        check(updates and updates[-1].status.state == TaskState.TASK_STATE_COMPLETED,
              "message/stream ends with the completed status")
        artifacts = [e.artifact_update for e in events if e.HasField("artifact_update")]
        check([p.text for a in artifacts for p in a.artifact.parts] == ["echo streamed"],
              "and streams the answer as an artifact")

        endpoint = card["url"]
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {
            "message": {"role": "user", "messageId": "raw", "kind": "message",
                        "parts": [{"kind": "text", "text": "echo raw"}]}}}
        finals = []
        async with http.stream("POST", endpoint, json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    result = json.loads(line[5:])["result"]
                    finals.append(result.get("final"))
        check(finals[-1] is True and finals.count(True) == 1, "the last event, only, is final")

        unknown = (await http.post(endpoint, json={"jsonrpc": "2.0", "id": 2, "method": "nope"}))
        check(unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601,
              "an unknown method is -32601")
        missing = (await http.post(endpoint, json={"jsonrpc": "2.0", "id": 3,
                                                   "method": "tasks/get",
                                                   "params": {"id": "no-such-task"}}))
        check(missing.json()["error"]["code"] == -32001, "an unknown task is -32001")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1].rstrip("/")))
