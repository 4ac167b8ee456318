/** `omnimem/ai` through the Vercel AI SDK's own `generateText`, `streamText` and `wrapLanguageModel`, with the
 * SDK's `MockLanguageModelV3` as the model, against a live `omnimem serve` on loopback. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { generateText, simulateReadableStream, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { ConfigError, InvalidInputError, OmnimemClient } from "../src/index.js";
import { HEADING, memoryTools, recallMiddleware, type HitRecord, type SearchOutput } from "../src/ai.js";
import { startServer, type LiveServer } from "./server.js";

let server: LiveServer;
let admin: OmnimemClient;

before(async () => {
  server = await startServer();
  admin = new OmnimemClient({ url: server.url, apiKey: server.keys.admin });
  await admin.add("I am allergic to peanuts.", { user_id: "dee", speaker: "dee", time: "2024-05-01T12:00:00Z" });
  await admin.add("I keep bees on the roof.", { user_id: "eli", speaker: "eli", time: "2024-05-02T09:30:00Z" });
});

after(async () => {
  await server?.stop();
});

// The model's types, as the mock implements them (the SDK's LanguageModelV3 interface)
type LanguageModelV3CallOptions = Parameters<MockLanguageModelV3["doGenerate"]>[0];
type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;
type LanguageModelV3StreamPart = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends
  ReadableStream<infer Part> ? Part : never;

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
                outputTokens: { total: 1, text: 1, reasoning: 0 } };

function said(text: string): LanguageModelV3GenerateResult {
  return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
}

function calls(toolName: string, input: object): LanguageModelV3GenerateResult {
  return { content: [{ type: "tool-call", toolCallId: `call-${toolName}`, toolName, input: JSON.stringify(input) }],
           finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
}

/** The text of the tool results the model was handed in a call's prompt. */
function toolResultsSeen(params: LanguageModelV3CallOptions): string[] {
  return params.prompt.flatMap((m) => (m.role === "tool" ? m.content : [])).flatMap((part) =>
    part.type === "tool-result" && part.output.type === "text" ? [part.output.value] : []);
}

test("generateText calls search_memory: the model reads the rendered memories, the app keeps each hit's metadata",
     async () => {
  const model = new MockLanguageModelV3({ doGenerate: [calls("search_memory", { query: "food allergy peanuts" }),
                                                       said("Avoid peanuts.")] });
  const result = await generateText({ model, tools: memoryTools(admin, { user_id: "dee" }), stopWhen: stepCountIs(3),
                                      prompt: "What should I avoid eating?" });
  assert.equal(result.text, "Avoid peanuts.");
  assert.deepEqual(model.doGenerateCalls[0]?.tools?.map((t) => t.name).sort(), ["add_memory", "search_memory"]);
  assert.deepEqual(toolResultsSeen(model.doGenerateCalls[1]!), ["[2024-05-01 12:00] dee: I am allergic to peanuts."]);
  const output = result.steps[0]?.toolResults[0]?.output as SearchOutput;
  const hit = output.hits[0] as HitRecord;
  assert.equal(output.hits.length, 1);
  assert.equal(hit.text, "dee: I am allergic to peanuts.");
  assert.equal(hit.speaker, "dee");
  assert.equal(hit.rank, 1);
  assert.equal(hit.modality, "text");
  assert.match(hit.id, /^[0-9a-f]{32}$/);
  assert.match(hit.time ?? "", /^2024-05-01T12:00:00/);
  assert.ok(hit.sources.length > 0 && typeof hit.fused === "number" && hit.similarity > 0 && hit.tokens > 0);
});

test("add_memory stores in the tools' scope; a repeat is not stored again", async () => {
  const fact = { text: "My sister is called Rita." };
  const model = new MockLanguageModelV3({ doGenerate: [calls("add_memory", fact), said("ok"), calls("add_memory", fact),
                                                       said("ok")] });
  const tools = memoryTools(admin, { user_id: "fay", agent_id: "helper", speaker: "fay" });
  await generateText({ model, tools, stopWhen: stepCountIs(2), prompt: "Remember my sister." });
  await generateText({ model, tools, stopWhen: stepCountIs(2), prompt: "Remember my sister again." });
  assert.match(toolResultsSeen(model.doGenerateCalls[1]!)[0] ?? "", /^Remembered \(id [0-9a-f]{32}\)\.$/);
  assert.match(toolResultsSeen(model.doGenerateCalls[3]!)[0] ?? "", /^Not stored: /);
  const page = await admin.units({ user_id: "fay" });
  assert.deepEqual(page.units.map((u) => [u.summary, u.speaker, u.agent_id]), [["My sister is called Rita.", "fay", "helper"]]);
  assert.deepEqual((await admin.units({ user_id: "dee" })).units.map((u) => u.summary), ["I am allergic to peanuts."]);
});

test("the recall middleware puts the user's memories before the call, with each hit's metadata", async () => {
  const model = new MockLanguageModelV3({ doGenerate: said("noted") });
  const wrapped = wrapLanguageModel({ model, middleware: recallMiddleware(admin, { user_id: "eli" }) });
  await generateText({ model: wrapped, system: "You are kind.", prompt: "Tell me about my bees on the roof." });
  const prompt = model.doGenerateCalls[0]?.prompt ?? [];
  assert.deepEqual(prompt.map((m) => m.role), ["system", "system", "user"]);
  assert.equal(prompt[0]?.content, "You are kind.");
  assert.equal(prompt[1]?.content, `${HEADING}\n[2024-05-02 09:30] eli: I keep bees on the roof.`);
  const recalled = prompt[1]?.providerOptions?.omnimem as { query: string; hits: HitRecord[] };
  assert.equal(recalled.query, "Tell me about my bees on the roof.");
  assert.deepEqual(recalled.hits.map((h) => [h.speaker, h.text, h.rank]), [["eli", "eli: I keep bees on the roof.", 1]]);

  const other = new MockLanguageModelV3({ doGenerate: said("hello") });
  await generateText({ model: wrapLanguageModel({ model: other, middleware: recallMiddleware(admin, { user_id: "gus" }) }),
                       prompt: "Tell me about my bees on the roof." });
  assert.deepEqual(other.doGenerateCalls[0]?.prompt.map((m) => m.role), ["user"]);  // nothing of eli's for gus
});

test("streamText through the middleware: the streamed call sees the recalled memories too", async () => {
  const model = new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const text = String(prompt.find((m) => m.role === "system")?.content ?? "nothing");
      const chunks: LanguageModelV3StreamPart[] = [
        { type: "stream-start", warnings: [] }, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: text },
        { type: "text-end", id: "t" }, { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
      ];
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
  const result = streamText({ model: wrapLanguageModel({ model, middleware: recallMiddleware(admin, { user_id: "dee" }) }),
                              prompt: "Which food makes me ill? peanuts?" });
  let text = "";
  for await (const delta of result.textStream) text += delta;
  assert.equal(text, `${HEADING}\n[2024-05-01 12:00] dee: I am allergic to peanuts.`);
});

test("a long paste is clipped to its newest words, so recall still works under the server's query limit", async () => {
  const model = new MockLanguageModelV3({ doGenerate: said("ok") });
  const wrapped = wrapLanguageModel({ model, middleware: recallMiddleware(admin, { user_id: "dee" }) });
  await generateText({ model: wrapped, prompt: `${"log line ok ".repeat(3000)} what am I allergic to, peanuts?` });
  const recalled = model.doGenerateCalls[0]?.prompt[0]?.providerOptions?.omnimem as { query: string };
  assert.ok(recalled.query.length <= 20_000 && recalled.query.endsWith("what am I allergic to, peanuts?"));
  assert.ok(recalled.query.startsWith("log ") || recalled.query.startsWith("line ") || recalled.query.startsWith("ok "));
});

test("a scope is explicit: a read names its user_id or says all_users", async () => {
  assert.throws(() => memoryTools(admin, {}), ConfigError);
  assert.throws(() => recallMiddleware(admin, { agent_id: "bot" }), /all_users: true/);
  assert.throws(() => memoryTools(admin, { user_id: "dee", all_users: true }), /not both/);
  assert.throws(() => memoryTools(admin, { all_users: true }), /add: false/);
  assert.throws(() => memoryTools(admin, { user_id: " " }), InvalidInputError);
  const everyone = memoryTools(admin, { all_users: true, add: false });
  assert.deepEqual(Object.keys(everyone), ["search_memory"]);
  const model = new MockLanguageModelV3({ doGenerate: [calls("search_memory", { query: "peanuts bees roof" }), said("ok")] });
  await generateText({ model, tools: everyone, stopWhen: stepCountIs(2), prompt: "anything" });
  const seen = toolResultsSeen(model.doGenerateCalls[1]!)[0] ?? "";
  assert.ok(seen.includes("dee: I am allergic to peanuts.") && seen.includes("eli: I keep bees on the roof."), seen);
});

test("a scoped key keeps the tools to its user: the server refuses another user's memory", async () => {
  const ann = new OmnimemClient({ url: server.url, apiKey: server.keys.ann });
  const model = new MockLanguageModelV3({ doGenerate: [calls("search_memory", { query: "peanuts" }), said("ok")] });
  const result = await generateText({ model, tools: memoryTools(ann, { user_id: "dee" }), stopWhen: stepCountIs(2),
                                      prompt: "what does dee eat" });
  const error = result.steps[0]?.content.find((part) => part.type === "tool-error");
  assert.ok(error && error.type === "tool-error" && (error.error as Error).name === "ScopeError", String(error?.type));
});

test("without the SDK installed, importing omnimem/ai is one line naming the install", async () => {
  const alone = mkdtempSync(join(tmpdir(), "omnimem-no-ai-"));  // outside any node_modules that holds `ai`
  try {
    cpSync("dist/src", alone, { recursive: true });
    writeFileSync(join(alone, "package.json"), JSON.stringify({ type: "module" }));
    const run = promisify(execFile)(process.execPath, ["--input-type=module", "-e", "await import('./ai.js')"],
                                    { cwd: alone });
    await assert.rejects(run, (error: { stderr: string }) => {
      assert.match(error.stderr, /MissingDependencyError: the Vercel AI SDK is not installed; install it with: npm install ai@6/);
      return true;
    });
  } finally {
    rmSync(alone, { recursive: true, force: true });
  }
});

test("the example of docs/vercel-ai.md runs as printed", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["dist/examples/vercel-ai.js"], {
    env: { ...process.env, OMNIMEM_URL: server.url, OMNIMEM_API_KEY: server.keys.admin },
  });
  const lines = stdout.trim().split("\n");
  assert.equal(lines[0], "add_memory -> Saved.");
  assert.equal(lines[1], HEADING);
  assert.match(lines[2] ?? "", /^\[\d{4}-\d\d-\d\d \d\d:\d\d\] ana: My sister is called Rita\.$/);
  assert.equal(lines[3], "[2024-05-01 12:00] ana: I am allergic to peanuts.");
  assert.equal(lines.length, 4);
  assert.equal((await admin.units({ user_id: "ana" })).total, 0);
});
