"""Streams a run with a subagent through langgraph-sdk and resumes a
stream with Last-Event-ID.

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


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
