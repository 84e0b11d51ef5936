"""Two tenants on one deepfleet scheduler, through the official
langgraph-sdk client with `api_key`.

Usage: python tenant_flows.py URL KEY_A KEY_B KEY_A_READ BATCH_THREAD,
where BATCH_THREAD is the thread of a run tenant a's `deepfleet submit`
batch made (no API record). Exits non-zero on the first failed check.
"""
import asyncio
import sys

import httpx

from langgraph_sdk import get_client
from langgraph_sdk.errors import AuthenticationError, NotFoundError, PermissionDeniedError


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


STATUS = {NotFoundError: 404, AuthenticationError: 401, PermissionDeniedError: 403}


async def refused(call, error, what):
    """`call` fails with `error`, or (the SDK's reconnecting calls, such
    as `join`, raise httpx's error) with its status."""
    try:
        await call
    except error:
        check(True, what)
        return
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == STATUS[error], f"{what} ({e.response.status_code})")
        return
    check(False, what)


async def status_of(call):
    """The HTTP status `call` fails with, or 200."""
    try:
        await call
        return 200
    except httpx.HTTPStatusError as e:
        return e.response.status_code


async def main(url, key_a, key_b, key_a_read, batch_thread):
    a = get_client(url=url, api_key=key_a)
    b = get_client(url=url, api_key=key_b)
    reader = get_client(url=url, api_key=key_a_read)
    nobody = get_client(url=url, api_key="not-a-key")

    # Tenant a works as before.
    assistant = await a.assistants.create(graph_id="helper", name="a's helper")
    thread = await a.threads.create(metadata={"owner": "a"})
    tid = thread["thread_id"]
    values = await a.runs.wait(tid, "helper", input={"messages": [{"role": "user", "content": "write notes"}]})
    check(values["messages"][-1]["content"] == "wrote notes", "tenant a runs and waits")
    runs = await a.runs.list(tid)
    rid = runs[0]["run_id"]
    batch = await a.runs.create_batch([{"assistant_id": "helper", "input": {"messages": [{"role": "user", "content": "write notes"}]}}])
    bid = batch[0]["metadata"]["batch_id"]
    await a.store.put_item(["notes"], "k", {"v": 1})
    item = await a.store.get_item(["notes"], "k")
    check(item["namespace"] == ["notes"] and item["value"] == {"v": 1}, "tenant a's item, namespace as given")

    # Tenant b sees none of it: 404 exactly as for unknown ids.
    await refused(b.assistants.get(assistant["assistant_id"]), NotFoundError, "b: a's assistant is 404")
    await refused(b.threads.get(tid), NotFoundError, "b: a's thread is 404")
    await refused(b.threads.get_state(tid), NotFoundError, "b: a's thread state is 404")
    await refused(b.runs.get(tid, rid), NotFoundError, "b: a's run is 404")
    await refused(b.runs.join(tid, rid), NotFoundError, "b: joining a's run is 404")
    await refused(b.runs.create(tid, "helper", input={"messages": []}), NotFoundError, "b: a run on a's thread is 404")
    await refused(b.http.get(f"/batches/{bid}"), NotFoundError, "b: a's batch is 404")
    try:
        parts = [p async for p in b.runs.join_stream(tid, rid)]
        check(any(p.event == "error" for p in parts), "b: a's stream is refused")
    except NotFoundError:
        check(True, "b: a's stream is 404")
    check(await b.store.get_item(["notes"], "k") is None, "b: a's store item is not there")
    found = await b.store.search_items([])
    check(found["items"] == [], "b: searching the store finds nothing of a's")
    check(await b.threads.search() == [], "b: a's threads are not listed")
    check(all(x["assistant_id"] != assistant["assistant_id"] for x in await b.assistants.search()), "b: a's assistant not listed")
    own = await b.threads.create()
    check((await b.threads.get(own["thread_id"]))["thread_id"] == own["thread_id"], "b works on its own thread")

    # No key or a wrong one: 401. A read key reads but cannot run: 403.
    await refused(nobody.threads.search(), AuthenticationError, "a wrong key is 401")
    check((await reader.threads.get(tid))["thread_id"] == tid, "a's read key reads a's thread")
    await refused(reader.runs.create(tid, "helper", input={"messages": []}), PermissionDeniedError, "a read key cannot create runs (403)")
    await refused(reader.assistants.create(graph_id="helper"), PermissionDeniedError, "a read key cannot create assistants (403)")

    # A read key cannot run an assistant whose name is a read's last word
    # over A2A.
    await a.assistants.create(graph_id="helper", assistant_id="search")
    message = {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "write notes"}]}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    check(await status_of(reader.http.post("/a2a/search", json=rpc)) == 403, "a read key cannot run /a2a/search (403)")

    # A batch's thread has no API record: nobody takes it over, whichever
    # way they name it.
    for client, who in [(b, "b"), (a, "a")]:
        check(await status_of(client.threads.get(batch_thread)) == 404, f"{who}: the batch's thread is 404")
        check(await status_of(client.threads.create(thread_id=batch_thread)) == 409, f"{who}: creating the batch's thread is 409")
        run = client.runs.create(batch_thread, "helper", input={"messages": []}, if_not_exists="create")
        check(await status_of(run) == 404, f"{who}: a run on the batch's thread is 404")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
