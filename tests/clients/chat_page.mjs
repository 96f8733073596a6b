// The chat page in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
// type a prompt, send it, wait for the answer, take a screenshot. With DECISION, a tool call
// that waits for approval is answered with the page's buttons ("approve", or "deny:REASON").
//
// usage: node chat_page.mjs URL PROMPT SCREENSHOT_PATH [CHROMIUM] [DECISION]
// prints one JSON object: {status, texts, tools, reasoning, usage, errors, asked, posts}
import { chromium } from "playwright-core";

const [url, prompt, screenshot, executable, decision] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: executable || "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
  ],
});
const result = { status: null, texts: [], tools: [], reasoning: [], usage: null, errors: [], console: [], asked: null, posts: 0 };

try {
  const page = await browser.newPage({ viewport: { width: 900, height: 640 } });
  page.on("console", (message) => { if (message.type() === "error") result.console.push(message.text()); });
  page.on("pageerror", (error) => result.errors.push(String(error)));
  page.on("request", (request) => { if (request.method() === "POST") result.posts += 1; });
  await page.goto(url);
  await page.click("#prompt");
  await page.keyboard.type(prompt);
  await page.keyboard.press("Enter");
  const settled = (states) => page.waitForFunction(
    (list) => list.includes(document.getElementById("status").dataset.state), states, { timeout: 30000 },
  );
  await settled(["done", "error", "stopped", "approval"]);
  if (decision && await page.$eval("#status", (el) => el.dataset.state) === "approval") {
    result.asked = await page.$$eval(".tool .approval", (els) => els.length);
    await page.screenshot({ path: screenshot.replace(/\.png$/, "-asked.png"), fullPage: true });
    const [verb, reason] = decision.split(/:(.*)/s);
    if (verb === "deny" && reason) await page.fill(".tool .reason", reason);
    await page.click(verb === "approve" ? ".tool .approve" : ".tool .deny");
    await settled(["done", "error", "stopped"]);
  }
  result.status = await page.$eval("#status", (el) => el.dataset.state);
  result.texts = await page.$$eval(".message.assistant .text", (els) => els.map((el) => el.textContent));
  result.reasoning = await page.$$eval(".message.assistant .reasoning", (els) => els.map((el) => el.textContent));
  result.tools = await page.$$eval(".message.assistant .tool", (els) => els.map((el) => ({ state: el.dataset.state, text: el.textContent })));
  result.usage = await page.$$eval(".message.assistant .usage", (els) => els.map((el) => el.textContent));
  result.errors.push(...await page.$$eval(".message.assistant .error", (els) => els.map((el) => el.textContent)));
  await page.screenshot({ path: screenshot, fullPage: true });
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result) + "\n");
