"""Streams a run with a subagent through langgraph-sdk and resumes a
stream with Last-Event-ID; streams another token by token (`messages`
and `messages-tuple`).

Usage: python stream_flows.py URL. Exits non-zero on the first failed check.
"""
import asyncio
import sys

from langgraph_sdk import get_client


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def texts(update):
    """The message contents of one `updates` chunk."""
    return [m.get("content") for node in update.values() for m in node.get("messages", [])]


async def main(url):
    client = get_client(url=url)
    thread = (await client.threads.create())["thread_id"]
    parts = []
    async for part in client.runs.stream(
        thread, "briefings",
        input={"messages": [{"role": "user", "content": "Write a briefing on wind."}]},
        stream_mode=["updates", "values"], stream_subgraphs=True,
    ):
        parts.append(part)
    names = [p.event for p in parts]
    print("events:", names, flush=True)
    check(names[0] == "metadata", "metadata first")
    run_id = parts[0].data["run_id"]
    sub = [p for p in parts if p.event.startswith("updates|task:")]
    check(len(sub) >= 3, f"subagent steps arrive namespaced ({len(sub)})")
    check(len({p.event for p in sub}) == 1, "one namespace for the one task call")
    sub_text = [t for p in sub for t in texts(p.data)]
    check("Reviewed /notes/wind.md." in sub_text, "the subagent's answer is among its events")
    root = [p for p in parts if p.event == "updates"]
    root_text = [t for p in root for t in texts(p.data)]
    check(root_text[0] == "Write a briefing on wind.", "the run's input is its first update")
    check(root_text[-1].startswith("Briefing on wind:"), "the final answer is the last update")
    check(names.index(sub[0].event) < len(names) - 1 and "values" in names, "values too")
    last_values = [p for p in parts if p.event == "values"][-1].data
    check(last_values["messages"][-1]["content"].startswith("Briefing on wind:"), "final values")
    check(all(p.id and "/" in p.id for p in parts[1:]), "every event has a resumable id")

    # Resume after the second root update: exactly the later ones follow.
    resume_at = root[1]
    again = []
    async for part in client.runs.join_stream(
        thread, run_id, stream_mode="updates", last_event_id=resume_at.id,
    ):
        again.append(part)
    resumed = [p.data for p in again if p.event == "updates"]
    check(resumed == [p.data for p in root[2:]],
          f"resumed stream continues after {resume_at.id} ({len(resumed)} of {len(root)})")

    await tokens(client)


async def tokens(client):
    """Token streaming: chunks add up to the final AI message."""
    thread = (await client.threads.create())["thread_id"]
    parts = []
    async for part in client.runs.stream(
        thread, "briefings",
        input={"messages": [{"role": "user", "content": "Write a briefing on tides."}]},
        stream_mode=["messages-tuple", "messages"],
    ):
        parts.append(part)
    streamed = {}
    for message, metadata in (p.data for p in parts if p.event == "messages"):
        if message["type"] == "AIMessageChunk":
            check(metadata.get("lc_source") is None, "agent tokens are not tagged as a summary")
            streamed[message["id"]] = streamed.get(message["id"], "") + message["content"]
    state = await client.threads.get_state(thread)
    final = [m for m in state["values"]["messages"] if m["type"] == "ai"][-1]
    check(final["content"].startswith("Briefing on tides:"), "the run answered")
    check(streamed.get(final["id"]) == final["content"],
          f"messages-tuple chunks add up to the final AI message ({len(streamed)} streamed)")
    tuples_of_final = [p for p in parts if p.event == "messages"
                       and p.data[0]["id"] == final["id"]]
    check(len(tuples_of_final) >= 3, f"in several chunks ({len(tuples_of_final)})")
    check(all(p.data[0]["type"] == "AIMessageChunk" for p in tuples_of_final),
          "a streamed message is not sent again whole")
    partial = [p.data[0] for p in parts if p.event == "messages/partial"
               and p.data[0]["id"] == final["id"]]
    check(len(partial) >= 3 and partial[-1]["content"] == final["content"],
          "messages/partial accumulates to the final message")
    check(all(a["content"] in b["content"] for a, b in zip(partial, partial[1:])),
          "partials only grow")
    complete = [m for p in parts if p.event == "messages/complete" for m in p.data]
    check(any(m["id"] == final["id"] and m["content"] == final["content"] for m in complete),
          "messages/complete follows with the whole message")
    first_partial = next(i for i, p in enumerate(parts) if p.event == "messages/partial"
                         and p.data[0]["id"] == final["id"])
    first_complete = next(i for i, p in enumerate(parts) if p.event == "messages/complete"
                          and p.data[0]["id"] == final["id"])
    check(first_partial < first_complete, "partials come before the complete message")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
