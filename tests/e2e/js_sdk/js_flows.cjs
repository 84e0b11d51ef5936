// Walks the methods of the official JavaScript client
// (@langchain/langgraph-sdk) against a deepfleet scheduler: each call
// succeeds with the documented shape or fails with the documented status.
//
// Usage: node js_flows.cjs URL, with the SDK resolvable from NODE_PATH.
// Exits non-zero on the first failed check.
const { Client } = require("@langchain/langgraph-sdk");

function check(cond, what) {
  if (!cond) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (typeof error?.status === "number") return error.status;
    throw error;
  }
}

const say = (content) => ({ messages: [{ role: "user", content }] });
const lastText = (values) => values.messages[values.messages.length - 1].content;

async function assistants(client) {
  const found = await client.assistants.search({ graphId: "helper" });
  check(found.some((a) => a.metadata.created_by === "system"), "assistants.search lists the system assistant");
  const created = await client.assistants.create({
    graphId: "helper",
    config: { configurable: { tone: "dry" } },
    name: "dry helper",
    metadata: { suite: "js" },
  });
  check(created.graph_id === "helper" && created.name === "dry helper", "assistants.create");
  const got = await client.assistants.get(created.assistant_id);
  check(got.assistant_id === created.assistant_id && got.metadata.suite === "js", "assistants.get");
  check((await status(client.assistants.create({ graphId: "nope" }))) === 404, "assistants.create of an unknown graph is 404");
  check(
    (await status(client.assistants.create({ graphId: "helper", assistantId: created.assistant_id }))) === 409,
    "assistants.create of an existing id is 409",
  );
  const doomed = await client.assistants.create({ graphId: "helper" });
  await client.assistants.delete(doomed.assistant_id);
  check((await status(client.assistants.get(doomed.assistant_id))) === 404, "assistants.delete");
  check((await client.assistants.count({ metadata: { suite: "js" } })) === 1, "assistants.count by metadata");
  const renamed = await client.assistants.update(created.assistant_id, { name: "drier helper", metadata: { v: 2 } });
  check(renamed.version === 2 && renamed.name === "drier helper" && renamed.metadata.suite === "js", "assistants.update makes version 2");
  const versions = await client.assistants.getVersions(created.assistant_id);
  check(versions.map((v) => v.version).join() === "2,1", "assistants.getVersions: newest first");
  const back = await client.assistants.setLatest(created.assistant_id, 1);
  check(back.version === 1 && back.name === "dry helper", "assistants.setLatest shows version 1");
  check((await status(client.assistants.setLatest(created.assistant_id, 9))) === 404, "assistants.setLatest of an unknown version is 404");
  return back;
}

async function graphs(client, assistant) {
  const graph = await client.assistants.getGraph(assistant.assistant_id, { xray: true });
  check(graph.nodes[0].id === "__start__" && graph.edges.some((e) => e.source === "model"), "assistants.getGraph");
  const schemas = await client.assistants.getSchemas(assistant.assistant_id);
  check(schemas.graph_id === "helper" && "messages" in schemas.state_schema.properties, "assistants.getSchemas");
  const subgraphs = await client.assistants.getSubgraphs(assistant.assistant_id, { recurse: true });
  check(Object.keys(subgraphs).length === 0, "assistants.getSubgraphs: none");
}

async function threadsAndRuns(client, assistant) {
  const thread = await client.threads.create({ metadata: { suite: "js" } });
  check(thread.status === "idle" && thread.values === null, "threads.create: idle and empty");
  const tid = thread.thread_id;
  const values = await client.runs.wait(tid, "helper", { input: say("write notes") });
  check(lastText(values) === "wrote notes", "runs.wait returns the final values");
  check(values.files["/notes.md"].content === "hello notes", "files in the values");
  check((await client.threads.get(tid)).status === "idle", "threads.get: idle after the run");
  const state = await client.threads.getState(tid);
  check(lastText(state.values) === "wrote notes" && typeof state.checkpoint.checkpoint_id === "string", "threads.getState");
  const history = await client.threads.getHistory(tid);
  check(Array.isArray(history) && history.length >= 1, "threads.getHistory");
  // Time travel, the write side: updateState, then a run from the first
  // checkpoint; the original branch reads as it did.
  const updated = await client.threads.updateState(tid, { values: { todos: [] } });
  const afterUpdate = await client.threads.getState(tid);
  check(
    updated.checkpoint.checkpoint_id === afterUpdate.checkpoint.checkpoint_id &&
      afterUpdate.metadata.source === "update",
    "threads.updateState makes the current checkpoint",
  );
  await client.threads.patchState(tid, { reviewed: true });
  const noted = await client.threads.getState(tid);
  check(noted.metadata.reviewed === true && noted.metadata.source === "update", "threads.patchState notes the current checkpoint");
  const reviewed = await client.threads.getHistory(tid, { metadata: { reviewed: true } });
  check(
    reviewed.length === 1 && reviewed[0].checkpoint.checkpoint_id === noted.checkpoint.checkpoint_id,
    "threads.getHistory filters by a patched key",
  );
  check(
    (await status(client.threads.patchState(tid, { step: 1 }))) === 422,
    "threads.patchState of a key that says what made the checkpoint is a 422",
  );
  const oldest = history[history.length - 1];
  const forked = await client.runs.wait(tid, "helper", {
    input: say("echo fork"),
    checkpointId: oldest.checkpoint.checkpoint_id,
  });
  const oldMessages = oldest.values.messages;
  check(
    JSON.stringify(forked.messages.slice(0, oldMessages.length)) === JSON.stringify(oldMessages) &&
      forked.messages[oldMessages.length].content === "echo fork",
    "runs.wait with checkpointId goes on from that checkpoint",
  );
  const branched = await client.threads.getHistory(tid, { limit: 50 });
  check(
    JSON.stringify(branched.slice(-history.length)) === JSON.stringify(history),
    "a fork leaves the original branch's history unchanged",
  );
  const searched = await client.threads.search({ metadata: { suite: "js" } });
  check(searched.some((t) => t.thread_id === tid), "threads.search by metadata");
  const slim = await client.threads.search({ metadata: { suite: "js" }, select: ["thread_id", "status"] });
  check(slim.length > 0 && slim.every((t) => Object.keys(t).sort().join() === "status,thread_id"), "threads.search select");
  const messagesOnly = await client.threads.getHistory(tid, { limit: 1, select: ["values.messages"] });
  check(Object.keys(messagesOnly[0]).join() === "values" && Object.keys(messagesOnly[0].values).join() === "messages", "threads.getHistory select values.<key>");
  const timed = await client.threads.create({ ttl: 30 });
  check(timed.ttl.ttl === 30 && timed.ttl.strategy === "delete", "threads.create({ ttl }) shows the ttl");
  const retimed = await client.threads.update(timed.thread_id, { ttl: { ttl: 90, strategy: "delete" } });
  check(retimed.ttl.ttl === 90, "threads.update({ ttl }) replaces it");
  check((await status(client.threads.create({ ttl: -1 }))) === 422, "threads.create with a negative ttl is 422");

  const streamed = (await client.threads.create()).thread_id;
  const events = [];
  for await (const part of client.runs.stream(streamed, assistant.assistant_id, {
    input: say("write draft"),
    streamMode: ["values", "updates", "messages-tuple"],
  })) {
    events.push(part);
  }
  const names = events.map((e) => e.event);
  check(names[0] === "metadata", `runs.stream: metadata first (${names.slice(0, 3)})`);
  check(names.includes("values") && names.includes("updates") && names.includes("messages"), "runs.stream: every mode asked");
  const finals = events.filter((e) => e.event === "values");
  check(lastText(finals[finals.length - 1].data) === "wrote draft", "runs.stream: the last values are final");

  // The trace modes: each step's tasks and the checkpoint it made, which
  // the thread's history then holds.
  const traced = (await client.threads.create()).thread_id;
  const trace = [];
  for await (const part of client.runs.stream(traced, assistant.assistant_id, {
    input: say("write draft"),
    streamMode: ["tasks", "checkpoints", "debug", "events"],
  })) {
    trace.push(part);
  }
  const tasks = trace.filter((e) => e.event === "tasks").map((e) => e.data);
  const taskNames = new Set(tasks.map((t) => t.name));
  check(taskNames.has("model") && taskNames.has("tools"), `runs.stream tasks: model and tools (${[...taskNames]})`);
  check(tasks.some((t) => Array.isArray(t.result)) && tasks.some((t) => Array.isArray(t.triggers)), "runs.stream tasks: starts and results");
  const streamedIds = trace
    .filter((e) => e.event === "checkpoints")
    .map((e) => e.data.config.configurable.checkpoint_id);
  const keptIds = (await client.threads.getHistory(traced)).map((h) => h.checkpoint.checkpoint_id);
  check(
    streamedIds.length >= 2 && streamedIds.every((id) => keptIds.includes(id)),
    `runs.stream checkpoints: each is in the history (${streamedIds} of ${keptIds})`,
  );
  const debugKinds = new Set(trace.filter((e) => e.event === "debug").map((e) => e.data.type));
  check(["task", "task_result", "checkpoint"].every((k) => debugKinds.has(k)), `runs.stream debug: ${[...debugKinds]}`);
  const callbacks = new Set(trace.filter((e) => e.event === "events").map((e) => e.data.event));
  check(
    ["on_chain_start", "on_chat_model_end", "on_tool_end", "on_chain_end"].every((k) => callbacks.has(k)),
    `runs.stream events: ${[...callbacks]}`,
  );

  const run = await client.runs.create(tid, "helper", { input: say("echo more") });
  check(run.status === "pending" && run.thread_id === tid, "runs.create: a pending run");
  const joined = await client.runs.join(tid, run.run_id);
  check(lastText(joined) === "wrote notes", "runs.join returns the values");
  check((await client.runs.get(tid, run.run_id)).status === "success", "runs.get");
  check((await client.runs.list(tid)).length === 3, "runs.list: the first run, the fork and this one");
  check((await status(client.runs.get(tid, "00000000-0000-0000-0000-000000000000"))) === 404, "runs.get of an unknown run is 404");

  const batch = await client.runs.createBatch(
    [0, 1, 2].map((n) => ({ assistantId: "helper", input: say(`echo ${n}`) })),
  );
  check(batch.length === 3 && batch.every((r) => r.assistant_id && r.run_id), `runs.createBatch: ${JSON.stringify(batch)}`);

  const busy = (await client.threads.create()).thread_id;
  const looping = await client.runs.create(busy, "helper", { input: say("loop") });
  check(
    (await status(client.runs.create(busy, "helper", { input: say("echo x"), multitaskStrategy: "reject" }))) === 409,
    "runs.create with reject on a busy thread is 409",
  );
  await client.runs.cancel(busy, looping.run_id, true);
  check((await client.runs.get(busy, looping.run_id)).status === "interrupted", "runs.cancel (wait): interrupted");
  await client.runs.delete(busy, looping.run_id);
  check((await status(client.runs.get(busy, looping.run_id))) === 404, "runs.delete");

  const many = (await client.threads.create()).thread_id;
  const first = await client.runs.create(many, "helper", { input: say("loop") });
  const second = await client.runs.create(many, "helper", { input: say("echo y") });
  await client.runs.cancelMany({ threadId: many });
  check((await client.runs.get(many, second.run_id)).status === "interrupted", "runs.cancelMany: the queued run is interrupted");
  await client.runs.join(many, first.run_id);
  check((await client.runs.get(many, first.run_id)).status === "interrupted", "runs.cancelMany: the started run stops");
  check((await status(client.runs.cancelMany({ runIds: ["00000000-0000-0000-0000-000000000000"] }))) === 404, "runs.cancelMany of an unknown run is 404");

  const gone = (await client.threads.create()).thread_id;
  await client.threads.delete(gone);
  check((await status(client.threads.get(gone))) === 404, "threads.delete");

  const patched = await client.threads.update(tid, { metadata: { reviewed: true } });
  check(patched.metadata.suite === "js" && patched.metadata.reviewed === true, "threads.update merges metadata");
  check((await client.threads.count({ metadata: { reviewed: true } })) === 1, "threads.count by metadata");
  const copy = await client.threads.copy(tid);
  check(copy.thread_id !== tid && copy.metadata.reviewed === true, "threads.copy");
  const original = await client.threads.getState(tid);
  const copied = await client.threads.getState(copy.thread_id);
  check(
    lastText(copied.values) === lastText(original.values) && copied.checkpoint.checkpoint_id === original.checkpoint.checkpoint_id,
    "threads.copy keeps the state",
  );
  const checkpoints = (await client.threads.getHistory(copy.thread_id)).length;
  const kept = await client.threads.prune([copy.thread_id], { strategy: "keep_latest" });
  check(kept.pruned_count === (checkpoints > 1 ? 1 : 0), "threads.prune keep_latest");
  check((await client.threads.getHistory(copy.thread_id)).length === 1, "threads.prune keep_latest leaves one checkpoint");
  check(lastText((await client.threads.getState(copy.thread_id)).values) === lastText(original.values), "threads.prune keep_latest keeps the state");
  check((await client.threads.prune([copy.thread_id])).pruned_count === 1, "threads.prune (delete)");
  check((await status(client.threads.get(copy.thread_id))) === 404, "threads.prune deleted the copy");

  // A thread's stream follows each run created on it while it is open.
  const watched = (await client.threads.create()).thread_id;
  const leave = new AbortController();
  const heard = [];
  const listening = (async () => {
    try {
      for await (const part of client.threads.joinStream(watched, { streamMode: "updates", signal: leave.signal })) {
        heard.push(part);
        if (heard.filter((e) => e.event === "metadata").length === 2 && part.event === "updates" && JSON.stringify(part.data).includes("wrote")) {
          leave.abort();
        }
      }
    } catch (error) {
      if (!leave.signal.aborted) throw error;
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 300));
  await client.runs.wait(watched, "helper", { input: say("echo one") });
  await client.runs.wait(watched, "helper", { input: say("write notes") });
  await Promise.race([listening, new Promise((resolve) => setTimeout(resolve, 20000))]);
  leave.abort();
  const runsHeard = heard.filter((e) => e.event === "metadata").length;
  check(runsHeard === 2, `threads.joinStream follows both runs (${heard.map((e) => e.event)})`);
}

async function interrupts(client) {
  const hitl = (await client.threads.create()).thread_id;
  const paused = await client.runs.wait(hitl, "helper", { input: say("remove old") });
  check("__interrupt__" in paused, "a gated call surfaces as __interrupt__");
  check((await client.threads.get(hitl)).status === "interrupted", "the thread is interrupted");
  const resumed = await client.runs.wait(hitl, "helper", {
    command: { resume: { decisions: [{ type: "approve" }] } },
  });
  check(lastText(resumed) === "removed old" && !("/old.md" in resumed.files), "resume with approve runs the call");
}

// The thread-centric protocol (`client.threads.stream`, the SDK's
// recommended way to stream): commands and filtered event streams.
async function threadStreams(client) {
  const thread = client.threads.stream({ assistantId: "helper" });
  // Read before the start: a scripted run may end before a projection
  // opened afterwards subscribes.
  const messages = thread.messages;
  await thread.run.start({ input: say("write draft") });
  const texts = [];
  for await (const message of messages) texts.push(await message.text);
  check(texts[0] === "Writing." && texts[texts.length - 1] === "wrote draft", `threads.stream messages (${JSON.stringify(texts)})`);
  const output = await thread.output;
  check(lastText(output) === "wrote draft" && "/draft.md" in output.files, "threads.stream output");
  const state = await thread.state.get({ namespace: [], keys: ["files"] });
  check(Object.keys(state.values).join() === "files" && state.checkpoint.id, "thread.state.get");
  const listed = await thread.state.listCheckpoints({ limit: 2 });
  check(listed.checkpoints.length === 2 && listed.checkpoints[0].metadata.source === "loop", "thread.state.listCheckpoints");
  const tree = await thread.agent.getTree();
  check(tree.tree.status === "completed" && tree.tree.graph_name === "helper", "thread.agent.getTree");
  const first = listed.checkpoints[1].id;
  const fork = await thread.state.fork({ checkpoint_id: first, input: say("write draft") });
  check(fork.thread_id === thread.threadId && typeof fork.run_id === "string", "thread.state.fork");
  await client.runs.join(thread.threadId, fork.run_id);
  let injected;
  try {
    await thread.input.inject({ namespace: [], message: { role: "user", content: "hi" } });
  } catch (error) {
    injected = error;
  }
  check(injected && /not_supported|inject/.test(String(injected.message ?? injected)), "thread.input.inject is not_supported");
  await thread.close();

  const gated = client.threads.stream({ assistantId: "helper" });
  await gated.run.start({ input: say("remove old") });
  await gated.output;
  check(gated.interrupted && gated.interrupts.length === 1, "threads.stream: a gated call is an interrupt");
  const asked = gated.interrupts[0];
  check(asked.payload.action_requests[0].name === "delete", "threads.stream: the interrupt's payload");
  await gated.input.respond({ namespace: [], interrupt_id: asked.interruptId, response: { decisions: [{ type: "approve" }] } });
  let last;
  for (let i = 0; i < 100 && last !== "removed old"; i += 1) {
    const now = await gated.state.get({ namespace: [] });
    last = now.values.messages[now.values.messages.length - 1].content;
    if (last !== "removed old") await new Promise((r) => setTimeout(r, 100));
  }
  check(last === "removed old", "thread.input.respond resumes the run");
  await gated.close();
}

async function crons(client) {
  const thread = (await client.threads.create()).thread_id;
  const daily = await client.crons.createForThread(thread, "helper", {
    schedule: "0 9 * * *",
    input: say("echo tick"),
    timezone: "Europe/Paris",
    metadata: { suite: "js" },
  });
  check(daily.thread_id === thread && daily.enabled, "crons.createForThread");
  const stateless = await client.crons.create("helper", {
    schedule: "30 8 * * 1-5",
    input: say("echo tick"),
    metadata: { suite: "js" },
  });
  check(stateless.thread_id === null, "crons.create (stateless)");
  const updated = await client.crons.update(stateless.cron_id, { schedule: "15 7 * * *", enabled: false });
  check(updated.schedule === "15 7 * * *" && !updated.enabled, "crons.update");
  const found = await client.crons.search({ metadata: { suite: "js" } });
  check(found.length === 2, "crons.search by metadata");
  check((await client.crons.count({ threadId: thread })) === 1, "crons.count by thread");
  await client.crons.delete(daily.cron_id);
  await client.crons.delete(stateless.cron_id);
  check((await client.crons.search({ metadata: { suite: "js" } })).length === 0, "crons.delete");
  check((await status(client.crons.delete(daily.cron_id))) === 404, "crons.delete of a deleted cron is 404");
}

async function store(client) {
  await client.store.putItem(["js", "u1"], "prefs", { theme: "dark" });
  await client.store.putItem(["js", "u2"], "prefs", { theme: "light" });
  const item = await client.store.getItem(["js", "u1"], "prefs");
  check(item.value.theme === "dark", "store.getItem");
  const found = await client.store.searchItems(["js"], { filter: { theme: "light" } });
  check(found.items.length === 1 && found.items[0].namespace[1] === "u2", "store.searchItems with a filter");
  const spaces = await client.store.listNamespaces({ prefix: ["js"] });
  check(spaces.namespaces.length === 2, "store.listNamespaces");
  await client.store.deleteItem(["js", "u1"], "prefs");
  check((await client.store.getItem(["js", "u1"], "prefs")) === null, "store.deleteItem");
}

async function main(url) {
  const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });
  const assistant = await assistants(client);
  await graphs(client, assistant);
  await threadsAndRuns(client, assistant);
  await interrupts(client);
  await threadStreams(client);
  await crons(client);
  await store(client);
  console.log("all JS flows passed");
}

main(process.argv[2]).catch((error) => {
  console.error(error);
  process.exit(1);
});
