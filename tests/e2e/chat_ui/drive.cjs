// Drives the Agent Chat UI in headless Chromium against a deepfleet
// scheduler serving tests/e2e/agent_server/agents (the `helper` agent and
// its replay script): a message and its streamed answer, the file the
// agent wrote, and a gated call approved in the agent inbox. Saves a
// screenshot per stage into the artifacts folder.
//
// Usage: node drive.cjs UI_URL API_URL ARTIFACTS, with puppeteer-core
// resolvable from NODE_PATH and CHROMIUM naming the browser.
// Exits non-zero on the first failed check, or after its own deadline,
// closing the browser either way.
const path = require("path");
const puppeteer = require("puppeteer-core");

const [uiUrl, apiUrl, artifacts] = process.argv.slice(2);
// Below the Rust side's limit, so the browser is closed here, not killed
// with node.
const DEADLINE_MS = 150_000;
const WAIT_MS = 30_000;

function check(cond, what) {
  if (!cond) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
}

// Waits until the page's text contains every one of `texts`.
async function showing(page, texts, what) {
  try {
    await page.waitForFunction(
      (wanted) => wanted.every((t) => document.body.innerText.includes(t)),
      { timeout: WAIT_MS, polling: 200 },
      texts,
    );
  } catch (error) {
    await shot(page, `failed-${what.replace(/\W+/g, "-")}`);
    const text = await page.evaluate(() => document.body.innerText);
    throw new Error(`FAILED: ${what}: ${texts} not in the page:\n${text}`, { cause: error });
  }
  check(true, what);
}

// Opens a new chat on the helper agent and sends `message`.
async function send(page, message) {
  const url = `${uiUrl}/?apiUrl=${encodeURIComponent(apiUrl)}&assistantId=helper`;
  await page.goto(url, { waitUntil: "networkidle0", timeout: WAIT_MS });
  const box = await page.waitForSelector("textarea", { timeout: WAIT_MS });
  await box.type(message);
  await page.click('button[type="submit"]');
}

async function threadId(page) {
  const id = new URL(page.url()).searchParams.get("threadId");
  check(!!id, `the UI names its thread (${id})`);
  return id;
}

async function chat(page) {
  await send(page, "write notes");
  await shot(page, "01-sent");
  // The replay script writes /notes.md, reads it back, then answers.
  await showing(page, ["write notes", "wrote notes"], "the answer streams into the page");
  await shot(page, "02-answer");
  await showing(page, ["write_file", "/notes.md", "hello notes", "read_file"], "the tool calls and the file's content");
  await shot(page, "03-files");
  const id = await threadId(page);
  const state = await (await fetch(`${apiUrl}/threads/${id}/state`)).json();
  check(state.values.files["/notes.md"]?.content === "hello notes", "the thread holds the file the page shows");
}

async function approve(page) {
  // The replay script writes /old.md, then asks to delete it: gated.
  await send(page, "remove old");
  await showing(page, ["delete", "/old.md", "Accept"], "the interrupt shows in the agent inbox");
  await shot(page, "04-interrupt");
  const id = await threadId(page);
  check((await (await fetch(`${apiUrl}/threads/${id}`)).json()).status === "interrupted", "the thread waits for a decision");
  const accepted = await page.evaluateHandle(() =>
    [...document.querySelectorAll("button")].find((b) => b.innerText.trim() === "Accept"),
  );
  await accepted.click();
  await showing(page, ["removed old"], "the approved run goes on to its answer");
  await shot(page, "05-approved");
  const thread = await (await fetch(`${apiUrl}/threads/${id}`)).json();
  check(thread.status === "idle", `the thread is idle after the run (${thread.status})`);
  check(!("/old.md" in thread.values.files), "the approved delete ran");
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    // A pipe, not a port: the browser quits when node does.
    pipe: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const deadline = setTimeout(async () => {
    console.error(`FAILED: not done within ${DEADLINE_MS / 1000} s`);
    await browser.close().catch(() => {});
    process.exit(1);
  }, DEADLINE_MS);
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    // What went wrong in the page, for a failed check's log.
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") console.error(`page console: ${message.text()}`);
    });
    page.on("response", async (response) => {
      if (response.status() >= 400) {
        const body = await response.text().catch(() => "");
        console.error(`page request: ${response.status()} ${response.request().method()} ${response.url()} ${body}`);
      }
    });
    await chat(page);
    await approve(page);
    console.log("the Agent Chat UI flows passed");
  } finally {
    clearTimeout(deadline);
    await browser.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
