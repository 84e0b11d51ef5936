"""Submits jobs to a deepfleet submission queue with pika, as another
service would, and checks the answers, the dead letters and their refusals.

Usage: python pika_flows.py AMQP_URL SUBMISSION_QUEUE. Exits non-zero on
the first failed check.
"""
import json
import sys
import time
import uuid

import pika

PATIENCE = 90  # seconds


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def publish(channel, queue, body, reply_to=None, correlation_id=None):
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    channel.basic_publish(
        exchange="",
        routing_key=queue,
        body=payload,
        properties=pika.BasicProperties(
            reply_to=reply_to,
            correlation_id=correlation_id,
            content_type="application/json",
            delivery_mode=2,
        ),
        mandatory=True,
    )


def drain(channel, queue, want, what):
    """Polls `queue` until `want` messages came, or PATIENCE runs out."""
    got = []
    deadline = time.monotonic() + PATIENCE
    while len(got) < want:
        method, props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: only {len(got)}/{want} arrived in time")
            time.sleep(0.1)
            continue
        got.append((props, body))
    check(True, f"{what}: {want} arrived")
    return got


def main(url, queue):
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.confirm_delivery()
    replies = channel.queue_declare("", exclusive=True).method.queue

    # Three jobs answered on our reply queue, matched by correlation id.
    thread = str(uuid.uuid4())
    jobs = {
        "job-write": {"id": "job-write", "assistant_id": "helper", "input": "write notes"},
        "job-seeded": {"id": "job-seeded", "graph_id": "helper", "input": "echo seeded",
                       "files": {"/seed.md": "from the caller"}, "thread_id": thread,
                       "metadata": {"source": "pika"}},
        "job-messages": {"assistant_id": "helper",
                         "input": {"messages": [{"role": "user", "content": "echo tuple"}]}},
    }
    for corr, job in jobs.items():
        publish(channel, queue, job, reply_to=replies, correlation_id=corr)
    answers = {}
    for props, body in drain(channel, replies, len(jobs), "answers on the reply queue"):
        answers[props.correlation_id] = json.loads(body)
    check(set(answers) == set(jobs), f"one answer per job, by correlation id: {sorted(answers)}")
    write = answers["job-write"]
    check(write["status"] == "success" and write["output"] == "wrote notes", f"job ran: {write}")
    check(write["id"] == "job-write" and write["files"]["/notes.md"] == "hello notes",
          "answer carries the job id and the thread's files")
    check(write["steps"] == 3 and write["run_id"] and write["thread_id"], "steps, run and thread ids")
    seeded = answers["job-seeded"]
    check(seeded["thread_id"] == thread and seeded["output"] == "echo seeded", "named thread used")
    check(seeded["files"]["/seed.md"] == "from the caller", "seed files reach the thread")
    tuple_answer = answers["job-messages"]
    check(tuple_answer["id"] == tuple_answer["run_id"] and tuple_answer["output"] == "echo tuple",
          "messages input; id defaults to the run id")

    # A job without reply_to is answered on its tenant's results queue
    # (the default tenant's: this fleet has no API keys).
    publish(channel, queue, {"id": "job-noreply", "assistant_id": "helper", "input": "echo quiet"})
    [(props, body)] = drain(channel, queue + ".results.default", 1,
                            "answer on the default tenant's results queue")
    check(json.loads(body)["id"] == "job-noreply", "results queue answer")

    # Malformed and invalid messages are dead-lettered with a reason.
    bad = [b"{not json", json.dumps({"assistant_id": "helper"}).encode(),
           json.dumps({"assistant_id": "nobody", "input": "hi"}).encode(),
           json.dumps({"assistant_id": "helper", "input": "hi", "files": {"/../x": ""}}).encode()]
    for body in bad:
        publish(channel, queue, body, reply_to=replies, correlation_id="bad")
    dead = drain(channel, queue + ".dead", len(bad), "dead letters")
    by_body = {body: (props.headers or {}).get("x-deepfleet-reason", "") for props, body in dead}
    check(set(by_body) == set(bad), "every malformed message kept, unchanged")
    reasons = [by_body[body] for body in bad]
    print("reasons:", reasons, flush=True)
    check(reasons[0].startswith("invalid submission"), "bad JSON has a reason")
    check("missing field `input`" in reasons[1], "missing input is named")
    check(reasons[2].startswith("not_found"), "unknown assistant is named")
    check("Path traversal" in reasons[3], "a bad seed path is named")
    refusals = drain(channel, replies, len(bad), "refusals on the reply queue")
    check(all(props.correlation_id == "bad" for props, _ in refusals),
          "refusals carry the correlation id")
    answers = [json.loads(body) for _, body in refusals]
    check(all(a["status"] == "refused" for a in answers), "refusals are typed as refused")
    check(sorted(a["error"] for a in answers) == sorted(reasons),
          "each refusal gives its dead letter's reason")
    connection.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
