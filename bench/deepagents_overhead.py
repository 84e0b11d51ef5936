"""deepagents 0.7 on the deepfleet benchmark scenario.

Run by `make bench` (bench/src/python.rs) inside a venv with
`deepagents==0.7.32` and `langchain-openai`, against the scripted
OpenAI-compatible server the Rust side serves. The timing that matters
is taken at that server (when each model request arrives), so this script
only drives runs, checks that each one finished as scripted, and reports
what the server cannot see: whether the runs were correct, wall time and
the process's peak memory.

Modes:
  overhead     N runs of the 8-step scenario one after another (sync
               `invoke`, an InMemorySaver checkpointer as a deployment has).
  concurrency  N short runs (write, read, answer) at once with asyncio
               (`ainvoke`), for the concurrency benchmark.
  cpu          N runs of the 8-step scenario, --in-flight of them at once
               (asyncio, `ainvoke`), reporting the process's CPU time: the
               CPU-per-model-call benchmark.

Prints one JSON object on stdout.
"""

import argparse
import asyncio
import json
import sys
import time


def build_agent(base_url: str, timeout_s: float):
    # Imported here so `--help` works without the venv.
    from deepagents import create_deep_agent
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    model = ChatOpenAI(
        model="scripted-model",
        base_url=base_url,
        api_key="bench",
        max_retries=0,
        timeout=timeout_s,
    )
    return create_deep_agent(model=model, checkpointer=InMemorySaver())


def final_text(result) -> str:
    content = result["messages"][-1].content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def files_of(result) -> dict:
    return result.get("files") or {}


def file_text(entry) -> str:
    content = entry.get("content", "") if isinstance(entry, dict) else entry
    return "\n".join(content) if isinstance(content, list) else content


def overhead_run_ok(n: int, result) -> bool:
    """The scenario's answer names the file the grep found, and the edit
    and the subagent's read happened on the right file."""
    path = f"/work/report-{n}.md"
    report = files_of(result).get(path)
    return (
        final_text(result).startswith(f"Run {n} done:")
        and path in final_text(result)
        and report is not None
        and "status: reviewed" in file_text(report)
    )


def overhead(args) -> dict:
    agent = build_agent(args.base_url, args.timeout)
    ok = 0
    started = time.perf_counter()
    for n in range(args.runs):
        config = {"configurable": {"thread_id": f"bench-{n}"}, "recursion_limit": 200}
        result = agent.invoke(
            {"messages": [{"role": "user", "content": f"Bench run {n}: prepare the report."}]},
            config=config,
        )
        ok += overhead_run_ok(n, result)
    return {"runs": args.runs, "ok": ok, "wall_s": time.perf_counter() - started}


async def concurrency_runs(args) -> dict:
    agent = build_agent(args.base_url, args.timeout)

    async def one(n: int) -> bool:
        config = {"configurable": {"thread_id": f"quick-{n}"}, "recursion_limit": 50}
        result = await agent.ainvoke(
            {"messages": [{"role": "user", "content": f"Quick run {n}"}]}, config=config
        )
        return final_text(result) == f"Quick run {n} done."

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(one(n) for n in range(args.runs)), return_exceptions=True)
    wall = time.perf_counter() - started
    ok = sum(1 for o in outcomes if o is True)
    errors = sorted({type(o).__name__ for o in outcomes if isinstance(o, BaseException)})
    return {"runs": args.runs, "ok": ok, "wall_s": wall, "errors": errors}


async def cpu_runs(args) -> dict:
    agent = build_agent(args.base_url, args.timeout)
    slots = asyncio.Semaphore(args.in_flight)

    async def one(n: int) -> bool:
        async with slots:
            config = {"configurable": {"thread_id": f"bench-{n}"}, "recursion_limit": 200}
            result = await agent.ainvoke(
                {"messages": [{"role": "user", "content": f"Bench run {n}: prepare the report."}]},
                config=config,
            )
            return overhead_run_ok(n, result)

    started = time.perf_counter()
    cpu_started = time.process_time()
    outcomes = await asyncio.gather(*(one(n) for n in range(args.runs)), return_exceptions=True)
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - started
    ok = sum(1 for o in outcomes if o is True)
    errors = sorted({type(o).__name__ for o in outcomes if isinstance(o, BaseException)})
    return {"runs": args.runs, "ok": ok, "wall_s": wall, "cpu_s": cpu, "errors": errors}


def peak_rss_kib() -> int:
    """VmHWM of this process. Not ru_maxrss: Linux carries that across
    exec from the forking parent, so it would report the bench's size."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["overhead", "concurrency", "cpu"])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--in-flight", type=int, default=50)
    args = parser.parse_args()
    if args.mode == "overhead":
        report = overhead(args)
    elif args.mode == "cpu":
        report = asyncio.run(cpu_runs(args))
    else:
        report = asyncio.run(concurrency_runs(args))
    report["peak_rss_kib"] = peak_rss_kib()
    from importlib.metadata import version

    report["versions"] = {
        name: version(name)
        for name in ["deepagents", "langchain", "langchain-openai", "langgraph"]
    }
    report["python"] = sys.version.split()[0]
    json.dump(report, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
