// The floor for the cold-start and streaming scenarios: the least a Node program can do to
// send one streamed Messages request and print the text it gets back. No dependencies;
// `node raw-client.ts <base-url> <prompt>`.
import { request } from "node:http";

const [base, prompt] = process.argv.slice(2);
const body = JSON.stringify({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  stream: true,
  messages: [{ role: "user", content: prompt ?? "say OK" }],
});

const req = request(
  `${base}/v1/messages`,
  {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": "sk-fake-bench",
      "anthropic-version": "2023-06-01",
    },
  },
  (res) => {
    res.setEncoding("utf8");
    let pending = "";
    res.on("data", (chunk: string) => {
      pending += chunk;
      const end = pending.lastIndexOf("\n\n");
      if (end < 0) return;
      const complete = pending.slice(0, end);
      pending = pending.slice(end + 2);
      let text = "";
      for (const line of complete.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const event = JSON.parse(line.slice(6)) as { type: string; delta?: { type: string; text?: string } };
        if (event.type === "content_block_delta" && event.delta?.type === "text_delta")
          text += event.delta.text;
      }
      if (text) process.stdout.write(text);
    });
    res.on("end", () => process.stdout.write("\n"));
  },
);
req.on("error", (e) => {
  process.stderr.write(`raw-client: ${e.message}\n`);
  process.exitCode = 1;
});
req.end(body);
