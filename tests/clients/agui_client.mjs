// AG-UI's own client against the gateway: HttpAgent posts a RunAgentInput and runs every
// event through @ag-ui/client's verification (verifyEvents) and its message assembly.
//
// With ANSWER, a run that finishes with interrupts (tool calls waiting for approval) is
// resumed: every interrupt answered with ANSWER (buildResumeArray), in a second run.
//
// usage: node agui_client.mjs URL INPUT_JSON [TOKEN] [ANSWER_JSON]
//   INPUT_JSON: {"messages": [...], "tools": [...]} (AG-UI messages and frontend tools)
//   ANSWER_JSON: a resume response, {"status": "resolved", "payload": {...}} or
//   {"status": "cancelled"}
// prints one JSON object: {messages, newMessages, events, error, interrupts, resumed}
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, inputJson, token, answerJson] = process.argv.slice(2);
const input = JSON.parse(inputJson);
const agent = new HttpAgent({
  url,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
  initialMessages: input.messages,
});
const events = [];
const result = { messages: null, newMessages: null, events, error: null, outcome: null, interrupts: null, resumed: null };
try {
  const run = await agent.runAgent(
    { tools: input.tools || [], context: input.context || [] },
    {
      onEvent({ event }) {
        events.push(event);
      },
      onRunErrorEvent({ event }) {
        result.error = event.message;
      },
    },
  );
  result.newMessages = run.newMessages;
  if (answerJson && agent.pendingInterrupts.length) {
    result.interrupts = agent.pendingInterrupts;
    const answer = JSON.parse(answerJson);
    const responses = Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, answer]));
    const resumed = { events: [], newMessages: null, error: null };
    result.resumed = resumed;
    const again = await agent.runAgent(
      { tools: input.tools || [], context: input.context || [], resume: buildResumeArray(agent.pendingInterrupts, responses) },
      {
        onEvent({ event }) { resumed.events.push(event); },
        onRunErrorEvent({ event }) { resumed.error = event.message; },
      },
    );
    resumed.newMessages = again.newMessages;
  }
} catch (error) {
  result.error = result.error ?? String(error && error.message ? error.message : error);
}
result.messages = agent.messages;
process.stdout.write(JSON.stringify(result) + "\n");
