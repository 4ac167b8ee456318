// Run against a server: OMNIMEM_URL=http://127.0.0.1:8420 OMNIMEM_API_KEY=omk_... node dist/examples/vercel-ai.js
import { generateText, stepCountIs, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { OmnimemClient } from "omnimem";
import { memoryTools, recallMiddleware } from "omnimem/ai";

const memory = new OmnimemClient({ url: process.env.OMNIMEM_URL ?? "http://127.0.0.1:8420",
                                   apiKey: process.env.OMNIMEM_API_KEY });
await memory.add("I am allergic to peanuts.", { user_id: "ana", speaker: "ana", time: "2024-05-01T12:00:00Z" });

// A scripted model stands where a real one goes (openai("gpt-4o-mini"), ...): asked to remember, it calls
// add_memory; otherwise it answers with the system message the middleware put in its prompt.
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
                outputTokens: { total: 1, text: 1, reasoning: 0 } };
const scripted = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const last = prompt.at(-1);
    if (last?.role === "user" && JSON.stringify(last.content).includes("Remember")) {
      const input = JSON.stringify({ text: "My sister is called Rita." });
      return { content: [{ type: "tool-call", toolCallId: "c1", toolName: "add_memory", input }],
               finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
    }
    const recalled = prompt.find((m) => m.role === "system")?.content ?? "(nothing recalled)";
    const text = last?.role === "tool" ? "Saved." : recalled;
    return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
  },
});
const model = wrapLanguageModel({ model: scripted, middleware: recallMiddleware(memory, { user_id: "ana" }) });
const tools = memoryTools(memory, { user_id: "ana", speaker: "ana" });

const saved = await generateText({ model, tools, stopWhen: stepCountIs(3),
                                   prompt: "Remember that my sister is called Rita." });
console.log(saved.steps.map((s) => s.toolCalls.map((c) => c.toolName).join() || s.text).join(" -> "));

const answer = await generateText({ model, tools, prompt: "What should I not eat, and who is my sister?" });
console.log(answer.text);
await memory.forget({ user_id: "ana" });
