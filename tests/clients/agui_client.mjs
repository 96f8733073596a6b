// AG-UI's own client against the gateway: HttpAgent posts a RunAgentInput and runs every
// event through @ag-ui/client's verification (verifyEvents) and its message assembly.
//
// usage: node agui_client.mjs URL INPUT_JSON [TOKEN]
//   INPUT_JSON: {"messages": [...], "tools": [...]} (AG-UI messages and frontend tools)
// prints one JSON object: {messages, newMessages, events, error}
import { HttpAgent } from "@ag-ui/client";

const [url, inputJson, token] = process.argv.slice(2);
const input = JSON.parse(inputJson);
const agent = new HttpAgent({
  url,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
  initialMessages: input.messages,
});
const events = [];
const result = { messages: null, newMessages: null, events, error: null, outcome: null };
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
} catch (error) {
  result.error = result.error ?? String(error && error.message ? error.message : error);
}
result.messages = agent.messages;
process.stdout.write(JSON.stringify(result) + "\n");
