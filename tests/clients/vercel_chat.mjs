// useChat's own logic, headless: the ai package's AbstractChat (what useChat wraps) with a
// plain ChatState, against the gateway. It sends a user message; when the answer leaves
// tool calls waiting for approval, it answers each with addToolApprovalResponse, and
// sendAutomaticallyWhen (lastAssistantMessageIsCompleteWithApprovalResponses) posts the
// conversation again, as useChat does, continuing the same assistant message.
//
// usage: node vercel_chat.mjs URLS_JSON TEXT DECISION_JSON
//   URLS_JSON: the /api/chat URLs to post to, one per request in turn (the last one again
//   for any further request): two replicas, say
//   DECISION_JSON: {"approved": true|false, "reason": "..."} for every approval asked
// prints one JSON object: {messages, requests, statuses, error}
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

const [urlsJson, text, decisionJson] = process.argv.slice(2);
const urls = JSON.parse(urlsJson);
const decision = JSON.parse(decisionJson);
const requests = [];

class State {
  constructor() { this.status = "ready"; this.error = undefined; this.messages = []; }
  pushMessage(message) { this.messages = [...this.messages, message]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(index, message) { this.messages = this.messages.map((m, i) => (i === index ? message : m)); }
  snapshot(thing) { return structuredClone(thing); }
}

class Chat extends AbstractChat {}

const result = { messages: null, requests, statuses: [], error: null, asked: [] };
let idle;
const finished = () => new Promise((resolve, reject) => {
  idle = resolve;
  setTimeout(() => reject(new Error("no response finished within 30 s")), 30000).unref();
});
const chat = new Chat({
  id: "chat-1",
  state: new State(),
  transport: new DefaultChatTransport({
    api: urls[0],
    fetch: async (input, init) => {
      const url = urls[Math.min(requests.length, urls.length - 1)];
      requests.push({ url, body: JSON.parse(init.body) });
      const response = await fetch(url, init);
      requests[requests.length - 1].status = response.status;
      requests[requests.length - 1].responseId = response.headers.get("x-response-id");
      return response;
    },
  }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (error) => { result.error = String(error && error.message ? error.message : error); },
  onFinish: () => { if (idle) idle(); },
});

try {
  let done = finished();
  await chat.sendMessage({ text });
  await done;
  for (let round = 0; round < 4; round++) {
    const last = chat.messages[chat.messages.length - 1];
    const asked = last.parts.filter((p) => p.state === "approval-requested");
    if (!asked.length) break;
    result.asked.push(asked.map((p) => ({ toolCallId: p.toolCallId, approvalId: p.approval.id, input: p.input })));
    done = finished();
    for (const part of asked) {
      await chat.addToolApprovalResponse({ id: part.approval.id, approved: decision.approved, reason: decision.reason });
    }
    await done;
    // the automatic request runs after the job queue: wait until the chat is ready again
    for (let i = 0; i < 200 && chat.status !== "ready" && chat.status !== "error"; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
} catch (error) {
  result.error = result.error ?? String(error && error.message ? error.message : error);
}
result.messages = chat.messages;
result.statuses.push(chat.status);
process.stdout.write(JSON.stringify(result) + "\n");
