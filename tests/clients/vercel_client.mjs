// The Vercel AI SDK's own client against the gateway: DefaultChatTransport posts the
// conversation as useChat does and validates every chunk against uiMessageChunkSchema;
// readUIMessageStream assembles the assistant message as useChat does.
//
// usage: node vercel_client.mjs URL MESSAGES_JSON [TOKEN]
// prints one JSON object: {message, chunks, error, headers}
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, messagesJson, token] = process.argv.slice(2);
const messages = JSON.parse(messagesJson);
const seenChunks = [];
let headers = {};
const transport = new DefaultChatTransport({
  api: url,
  headers: token ? { Authorization: `Bearer ${token}` } : undefined,
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    headers = Object.fromEntries(response.headers.entries());
    return response;
  },
});

const result = { message: null, chunks: seenChunks, error: null, headers: null };
try {
  const chunks = await transport.sendMessages({
    chatId: "chat-1",
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  const tee = chunks.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        seenChunks.push(chunk.type);
        if (chunk.type === "error") result.error = chunk.errorText;
        controller.enqueue(chunk);
      },
    }),
  );
  for await (const message of readUIMessageStream({ stream: tee, terminateOnError: false, onError: (e) => { result.error = result.error ?? String(e); } })) {
    result.message = message;
  }
} catch (error) {
  result.error = String(error && error.message ? error.message : error);
}
result.headers = headers;
process.stdout.write(JSON.stringify(result) + "\n");
