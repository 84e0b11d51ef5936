"""Drives deepfleet's crons with the official langgraph-sdk client, across
two schedulers of one fleet.

Usage: python cron_flows.py URL_A URL_B [LATE_SECS]: runs must be created
within LATE_SECS (1) of their fire time. Exits non-zero on the first
failed check.
"""
import asyncio
import sys
from datetime import datetime, timedelta, timezone

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def at(text):
    return datetime.fromisoformat(text)


def tick(text="echo tick"):
    return {"messages": [{"role": "user", "content": text}]}


async def every_method(client):
    """Each method of `client.crons`, with its documented shape or error."""
    thread = (await client.threads.create())["thread_id"]
    daily = await client.crons.create_for_thread(
        thread, "helper", schedule="0 9 * * *", input=tick(), timezone="Europe/Paris",
        metadata={"suite": "crons"},
    )
    fields = {"cron_id", "assistant_id", "thread_id", "schedule", "timezone", "end_time",
              "payload", "user_id", "next_run_date", "metadata", "enabled",
              "on_run_completed", "created_at", "updated_at"}
    check(set(daily) == fields, f"a cron has the reference's fields: {sorted(daily)}")
    check(daily["thread_id"] == thread and daily["enabled"], "thread cron created, enabled")
    nine = at(daily["next_run_date"]).astimezone(timezone(timedelta(hours=1)))
    check(at(daily["next_run_date"]) > datetime.now(timezone.utc), "next run in the future")
    check(nine.minute == 0 and nine.second == 0, "on the hour")
    stateless = await client.crons.create(
        "helper", schedule="30 8 * * 1-5", input=tick(), on_run_completed="keep",
        end_time=datetime.now(timezone.utc) + timedelta(days=30), metadata={"suite": "crons"},
    )
    check(stateless["thread_id"] is None and stateless["on_run_completed"] == "keep",
          "stateless cron created")
    updated = await client.crons.update(stateless["cron_id"], schedule="15 7 * * *", enabled=False)
    check(updated["schedule"] == "15 7 * * *" and not updated["enabled"]
          and updated["next_run_date"] is None, "update: new schedule, disabled, no next run")
    found = await client.crons.search(metadata={"suite": "crons"}, sort_by="created_at",
                                      sort_order="asc")
    check([c["cron_id"] for c in found] == [daily["cron_id"], stateless["cron_id"]],
          "search by metadata, oldest first")
    check(len(await client.crons.search(thread_id=thread)) == 1, "search by thread")
    check(len(await client.crons.search(enabled=False, limit=1)) == 1, "search disabled")
    picked = await client.crons.search(select=["cron_id", "schedule"], thread_id=thread)
    check(picked == [{"cron_id": daily["cron_id"], "schedule": "0 9 * * *"}], "search select")
    check(await client.crons.count(metadata={"suite": "crons"}) == 2, "count")
    check(await client.crons.count(assistant_id="helper", thread_id=thread) == 1, "count filtered")
    for bad in [dict(schedule="every morning"), dict(schedule="0 9 * * *", timezone="Mars/Base")]:
        try:
            await client.crons.create("helper", input=tick(), **bad)
            check(False, f"{bad} refused")
        except UnprocessableEntityError:
            check(True, f"{bad} is 422")
    for cron in (daily, stateless):
        await client.crons.delete(cron["cron_id"])
    try:
        await client.crons.update(daily["cron_id"], enabled=True)
        check(False, "a deleted cron is gone")
    except NotFoundError:
        check(True, "a deleted cron is 404")
    check(await client.crons.count(metadata={"suite": "crons"}) == 0, "count after delete")


async def runs_of(client, thread):
    runs = await client.runs.list(thread, limit=100)
    return [r for r in runs if "cron_fire_at" in r["metadata"]]


async def settled(client, thread):
    """The cron's runs on `thread` once every one has ended (the runs of
    the last fires may still be being created when the cron is deleted)."""
    runs, statuses = [], set()
    for _ in range(120):
        runs = await runs_of(client, thread)
        statuses = {r["status"] for r in runs}
        if runs and statuses == {"success"}:
            await asyncio.sleep(1)
            if len(await runs_of(client, thread)) == len(runs):
                return runs
        await asyncio.sleep(0.5)
    check(False, f"the cron's runs end: {statuses}")


async def fires_once(a, b, late_secs):
    """An every-second cron, with two schedulers polling: one run per
    due second, each created within a second of it."""
    thread = (await a.threads.create())["thread_id"]
    cron = await a.crons.create_for_thread(thread, "helper", schedule="* * * * * *", input=tick())
    stateless = await b.crons.create("helper", schedule="* * * * * *", input=tick("echo kept"),
                                     on_run_completed="keep", metadata={"suite": "kept"})
    await asyncio.sleep(5.5)
    await b.crons.delete(cron["cron_id"])
    await a.crons.delete(stateless["cron_id"])
    # Every run is a real one: the workers end each.
    runs = await settled(a, thread)
    check(True, "the cron's runs succeed")
    due = sorted(at(r["metadata"]["cron_fire_at"]) for r in runs)
    check(len(due) >= 4, f"{len(due)} runs in 5.5 s")
    for run in runs:
        late = at(run["created_at"]) - at(run["metadata"]["cron_fire_at"])
        check(timedelta(0) <= late < timedelta(seconds=late_secs), f"created {late} after its time")
    check(all(later - earlier == timedelta(seconds=1) for earlier, later in zip(due, due[1:])),
          f"one run per due second, none twice, none missed: {due}")
    # The kept threads of the stateless cron: one run each, one per second.
    kept = []
    for t in await b.threads.search(limit=100):
        kept += [r for r in await runs_of(b, t["thread_id"])
                 if r["metadata"].get("cron_id") == stateless["cron_id"]]
    kept_due = sorted(at(r["metadata"]["cron_fire_at"]) for r in kept)
    check(len(kept_due) >= 4 and len(set(kept_due)) == len(kept_due),
          f"stateless: one kept thread per due second {kept_due}")


async def main(url_a, url_b, late_secs):
    a, b = get_client(url=url_a), get_client(url=url_b)
    await every_method(a)
    await fires_once(a, b, late_secs)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1))
