"""Drives a deepfleet scheduler with the official langgraph-sdk client.

Usage: python sdk_flows.py URL. Exits non-zero on the first failed check.
"""
import asyncio
import sys

from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def last_text(values):
    return values["messages"][-1]["content"]


async def main(url):
    client = get_client(url=url)

    # Assistants: the system one per graph, a created one, 404 and 409.
    found = await client.assistants.search(graph_id="helper")
    check(any(a["metadata"].get("created_by") == "system" for a in found), "system assistant listed")
    created = await client.assistants.create(graph_id="helper", config={"configurable": {"tone": "dry"}}, name="dry helper")
    check(created["graph_id"] == "helper" and created["name"] == "dry helper", "assistant created")
    try:
        await client.assistants.create(graph_id="nope")
        check(False, "unknown graph refused")
    except NotFoundError:
        check(True, "unknown graph is 404")
    try:
        await client.assistants.create(graph_id="helper", assistant_id=created["assistant_id"])
        check(False, "duplicate assistant refused")
    except ConflictError:
        check(True, "duplicate assistant is 409")
    graph = await client.assistants.get_graph(created["assistant_id"], xray=True)
    check([n["id"] for n in graph["nodes"]][0] == "__start__"
          and any(e["source"] == "model" for e in graph["edges"]), "get_graph draws the agent loop")
    schemas = await client.assistants.get_schemas(created["assistant_id"])
    check(schemas["graph_id"] == "helper" and "messages" in schemas["state_schema"]["properties"],
          "get_schemas gives the state schema")
    check(await client.assistants.get_subgraphs(created["assistant_id"], recurse=True) == {},
          "get_subgraphs: subagents are graphs of their own")

    # Threads and run + wait.
    thread = await client.threads.create(metadata={"suite": "sdk"})
    check(thread["status"] == "idle" and thread["values"] is None, "new thread is idle and empty")
    tid = thread["thread_id"]
    values = await client.runs.wait(tid, "helper", input={"messages": [{"role": "user", "content": "write notes"}]})
    check(last_text(values) == "wrote notes", "run + wait returns the final values")
    kinds = [m["type"] for m in values["messages"]]
    check(kinds == ["human", "ai", "tool", "ai", "tool", "ai"], f"LangChain message types {kinds}")
    check(values["messages"][1]["tool_calls"][0]["name"] == "write_file", "tool_calls carry name and args")
    check(values["files"]["/notes.md"]["content"] == "hello notes", "files in values")
    state = await client.threads.get_state(tid)
    check(state["values"]["messages"][-1]["content"] == "wrote notes", "thread state")
    history = await client.threads.get_history(tid)
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    check(ids == ["3", "2", "1"], f"a checkpoint per step, newest first: {ids}")
    check(history[0]["values"] == state["values"], "the newest checkpoint is the current state")
    check(history[0]["parent_checkpoint"]["checkpoint_id"] == "2"
          and history[-1]["parent_checkpoint"] is None, "each checkpoint names its parent")
    first = history[-1]
    check([m["type"] for m in first["values"]["messages"]] == ["human", "ai", "tool"]
          and first["values"]["files"]["/notes.md"]["content"] == "hello notes",
          "the first checkpoint holds the log and files as they were")
    at = await client.threads.get_state(tid, checkpoint_id=first["checkpoint"]["checkpoint_id"])
    check(at == first, "get_state(checkpoint_id) is that checkpoint")
    at = await client.threads.get_state(tid, checkpoint=history[1]["checkpoint"])
    check(at == history[1], "get_state(checkpoint) is that checkpoint")
    page = await client.threads.get_history(tid, limit=1, before=history[0]["checkpoint"])
    check(page == [history[1]], "history pages back from before")
    try:
        await client.threads.get_state(tid, checkpoint_id="99")
        check(False, "unknown checkpoint refused")
    except NotFoundError:
        check(True, "an unknown checkpoint is 404")
    check((await client.threads.get(tid))["status"] == "idle", "thread idle after the run")

    # A second run on the same thread, created assistant, streamed.
    stream_thread = (await client.threads.create())["thread_id"]
    events = []
    async for part in client.runs.stream(stream_thread, created["assistant_id"],
                                         input={"messages": [{"role": "user", "content": "write draft"}]},
                                         stream_mode=["values", "updates", "messages-tuple"]):
        events.append(part)
    names = [e.event for e in events]
    check(names[0] == "metadata", f"metadata first: {names[:3]}")
    check("values" in names and "updates" in names and "messages" in names, f"modes streamed: {sorted(set(names))}")
    finals = [e.data for e in events if e.event == "values"]
    check(last_text(finals[-1]) == "wrote draft", "last values event is the final state")

    # Background run + join, get and list.
    run = await client.runs.create(tid, "helper", input={"messages": [{"role": "user", "content": "echo more"}]})
    joined = await client.runs.join(tid, run["run_id"])
    check(last_text(joined) == "wrote notes" and len(joined["messages"]) == 8, "join returns the values")
    got = await client.runs.get(tid, run["run_id"])
    check(got["status"] == "success", f"background run succeeded: {got['status']}")
    listed = await client.runs.list(tid)
    check(len(listed) == 2, f"two runs listed on the thread: {len(listed)}")
    slim = await client.runs.list(tid, select=["run_id", "status"])
    check(all(sorted(r) == ["run_id", "status"] for r in slim), f"runs.list select: {slim}")
    later = await client.threads.get_history(tid)
    check(later[1:] == history, "a later run leaves the earlier checkpoints as they were")
    mine = await client.threads.get_history(tid, metadata={"run_id": run["run_id"]})
    check([h["checkpoint"]["checkpoint_id"] for h in mine] == ["4"], "history filters by run")

    # Time travel, the write side: update_state, a fork, a run from a
    # checkpoint, a rollback. Each leaves the earlier branch as it was.
    updated = await client.threads.update_state(tid, {"todos": [{"content": "review", "status": "pending"}]})
    check(updated["checkpoint"]["checkpoint_id"] == "5", f"update_state makes a checkpoint: {updated}")
    now = await client.threads.get_state(tid)
    check(now["values"]["todos"][0]["content"] == "review" and now["metadata"]["source"] == "update"
          and now["parent_checkpoint"]["checkpoint_id"] == "4", "the update is the current state")
    answer_id = first["values"]["messages"][1]["id"]
    forked = await client.threads.update_state(
        tid, {"messages": [{"type": "ai", "id": answer_id, "content": "edited plan"}]},
        checkpoint_id=first["checkpoint"]["checkpoint_id"])
    now = await client.threads.get_state(tid)
    check([m["content"] for m in now["values"]["messages"]][1] == "edited plan"
          and len(now["values"]["messages"]) == len(first["values"]["messages"])
          and now["parent_checkpoint"]["checkpoint_id"] == "1",
          f"update_state from a checkpoint forks it: {forked}")
    after = await client.threads.get_history(tid, limit=20)
    check(after[2:] == later and after[1]["checkpoint"] == updated["checkpoint"],
          "the forked branch's checkpoints read as they did")
    values = await client.runs.wait(tid, "helper", input={"messages": [{"role": "user", "content": "echo fork"}]},
                                    checkpoint_id="2")
    kept = history[1]["values"]["messages"]
    check(values["messages"][:len(kept)] == kept and values["messages"][len(kept)]["content"] == "echo fork",
          "a run from a checkpoint goes on from it")
    branched = await client.threads.get_history(tid, limit=50)
    check(branched[-len(after):] == after, "a run from a checkpoint leaves the other branches as they were")
    fork_point = next(h for h in branched if h["metadata"]["source"] == "fork")
    check(fork_point["parent_checkpoint"]["checkpoint_id"] == "2", "the fork names its checkpoint")
    before_rollback = await client.threads.get_state(tid)
    doomed = await client.runs.create(tid, "helper", input={"messages": [{"role": "user", "content": "echo undo"}]})
    await client.runs.cancel(tid, doomed["run_id"], wait=True, action="rollback")
    for _ in range(100):
        now = await client.threads.get_state(tid)
        if now["values"] == before_rollback["values"]:
            break
        await asyncio.sleep(0.1)
    check(now["values"] == before_rollback["values"] and now["metadata"]["source"] == "rollback",
          f"a rollback restores the state before the run: {now['metadata']}")

    # Stateless batch.
    batch = await client.runs.create_batch([
        {"assistant_id": "helper", "input": {"messages": [{"role": "user", "content": f"echo {i}"}]}}
        for i in range(5)
    ])
    check(len(batch) == 5, "batch created five runs")
    batch_id = batch[0]["metadata"]["batch_id"]
    for _ in range(200):
        counts = await client.http.get(f"/batches/{batch_id}")
        if counts["counts"]["success"] == 5:
            break
        await asyncio.sleep(0.1)
    check(counts["counts"]["success"] == 5, f"batch counts: {counts}")
    page = await client.http.get(f"/batches/{batch_id}/runs", params={"limit": 3})
    check(len(page["runs"]) == 3 and page["next_offset"] == 3, "batch results paged")
    check(page["runs"][0]["output"] == "echo 0", "batch results in submission order")

    # Store.
    await client.store.put_item(["users", "u1"], "prefs", {"theme": "dark"})
    await client.store.put_item(["users", "u2"], "prefs", {"theme": "light"})
    item = await client.store.get_item(["users", "u1"], "prefs")
    check(item["value"] == {"theme": "dark"}, "store get")
    found = await client.store.search_items(["users"], filter={"theme": "light"})
    check([i["namespace"] for i in found["items"]] == [["users", "u2"]], "store search with filter")
    spaces = await client.store.list_namespaces(prefix=["users"])
    check(sorted(spaces["namespaces"]) == [["users", "u1"], ["users", "u2"]], "store namespaces")
    await client.store.delete_item(["users", "u1"], "prefs")
    check(await client.store.get_item(["users", "u1"], "prefs") is None, "store delete")

    # Interrupt + resume.
    hitl = (await client.threads.create())["thread_id"]
    paused = await client.runs.wait(hitl, "helper", input={"messages": [{"role": "user", "content": "remove old"}]})
    check("__interrupt__" in paused, "the gated call surfaces as __interrupt__")
    request = paused["__interrupt__"][0]["value"]["action_requests"][0]
    check(request["name"] == "delete", "the interrupt names the tool")
    check((await client.threads.get(hitl))["status"] == "interrupted", "thread interrupted")
    resumed = await client.runs.wait(hitl, "helper", command={"resume": {"decisions": [{"type": "approve"}]}})
    check(last_text(resumed) == "removed old", "resume with approve finishes the run")
    check("/old.md" not in resumed["files"], "the approved delete ran")

    # Multitask: reject while busy, enqueue behind, cancel.
    busy = (await client.threads.create())["thread_id"]
    looping = await client.runs.create(busy, "helper", input={"messages": [{"role": "user", "content": "loop"}]})
    try:
        await client.runs.create(busy, "helper", input={"messages": [{"role": "user", "content": "echo x"}]},
                                 multitask_strategy="reject")
        check(False, "reject refuses a busy thread")
    except ConflictError:
        check(True, "reject on a busy thread is 409")
    # The queued run starts on the same thread (whose script loops too)
    # once the run ahead is cancelled.
    queued = await client.runs.create(busy, "helper", input={"messages": [{"role": "user", "content": "go on"}]},
                                      multitask_strategy="enqueue")
    check(queued["status"] == "pending", "enqueued run waits")
    check((await client.threads.get(busy))["status"] == "busy", "thread busy")
    await client.runs.cancel(busy, looping["run_id"])
    await client.runs.join(busy, looping["run_id"])
    check((await client.runs.get(busy, looping["run_id"]))["status"] == "interrupted", "cancelled run is interrupted")
    for _ in range(100):
        status = (await client.runs.get(busy, queued["run_id"]))["status"]
        if status != "pending":
            break
        await asyncio.sleep(0.1)
    check(status == "running", f"queued run started after the cancel: {status}")
    await client.runs.cancel(busy, queued["run_id"], wait=True)
    check((await client.runs.get(busy, queued["run_id"]))["status"] == "interrupted", "cancel with wait")

    # Versions, counts, copies, prunes, bulk cancel and the thread stream.
    updated = await client.assistants.update(created["assistant_id"], metadata={"tier": 2})
    check(updated["version"] == 2 and updated["metadata"]["tier"] == 2, "assistants.update makes version 2")
    versions = await client.assistants.get_versions(created["assistant_id"])
    check([v["version"] for v in versions] == [2, 1], "assistants.get_versions, newest first")
    back = await client.assistants.set_latest(created["assistant_id"], 1)
    check(back["version"] == 1 and "tier" not in back["metadata"], "assistants.set_latest shows version 1")
    check(await client.assistants.count(graph_id="helper") >= 2, "assistants.count")
    patched = await client.threads.update(tid, metadata={"reviewed": True})
    check(patched["metadata"] == {"suite": "sdk", "reviewed": True}, "threads.update merges metadata")
    check(await client.threads.count(metadata={"suite": "sdk", "reviewed": True}) == 1, "threads.count")
    timed = await client.threads.create(ttl=30)
    check(timed["ttl"] == {"ttl": 30, "strategy": "delete"}, "threads.create(ttl=30) shows the ttl")
    retimed = await client.threads.update(timed["thread_id"], metadata={}, ttl={"ttl": 90, "strategy": "delete"})
    check(retimed["ttl"]["ttl"] == 90 and (await client.threads.get(timed["thread_id"]))["ttl"] == retimed["ttl"],
          "threads.update(ttl=...) replaces it")
    original = await client.threads.get_state(tid)
    copy = await client.threads.copy(tid)
    check(copy["thread_id"] != tid, "threads.copy makes a new thread")
    copied = await client.threads.get_state(copy["thread_id"])
    said = lambda st: [(m["type"], m["content"]) for m in st["values"]["messages"]]  # noqa: E731
    check(said(copied) == said(original)
          and copied["checkpoint"]["checkpoint_id"] == original["checkpoint"]["checkpoint_id"],
          "the copy has the state")
    pruned = await client.threads.prune([copy["thread_id"]])
    check(pruned["pruned_count"] == 1, "threads.prune deletes the copy")
    many = (await client.threads.create())["thread_id"]
    ahead = await client.runs.create(many, "helper", input={"messages": [{"role": "user", "content": "loop"}]})
    behind = await client.runs.create(many, "helper", input={"messages": [{"role": "user", "content": "echo z"}]})
    await client.runs.cancel_many(thread_id=many)
    await client.runs.join(many, ahead["run_id"])
    for run in (ahead, behind):
        check((await client.runs.get(many, run["run_id"]))["status"] == "interrupted", "runs.cancel_many stops each run")
    watched = (await client.threads.create())["thread_id"]
    heard = []

    async def listen():
        async for part in await client.threads.join_stream(watched):
            heard.append(part)
            if part.event == "updates" and "wrote notes" in str(part.data):
                return

    listening = asyncio.create_task(listen())
    await asyncio.sleep(0.3)
    made = await client.runs.create(watched, "helper", stream_mode=["updates"],
                                    input={"messages": [{"role": "user", "content": "write notes"}]})
    await client.runs.join(watched, made["run_id"])
    await asyncio.wait_for(listening, 20)
    events = [p.event for p in heard]
    check(events.count("metadata") == 1 and "values" not in events,
          f"threads.join_stream follows the run in the modes it was made with: {events}")

    print("all flows passed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
