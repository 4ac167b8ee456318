/**
 * `omnimem/ai`: omnimem for the Vercel AI SDK (`ai`, an optional peer dependency: `npm install ai`).
 *
 * - `memoryTools(client, { user_id })`: the tools `search_memory` and `add_memory` for `generateText` /
 *   `streamText` (`tools: memoryTools(...)`), built with the SDK's `tool()` and a JSON schema.
 * - `recallMiddleware(client, { user_id })`: a `LanguageModelMiddleware` for `wrapLanguageModel` whose
 *   `transformParams` searches the memory for the latest user message before each call to the model and
 *   puts what it found in a system message after the prompt's leading system messages.
 *
 * Reads name their `user_id`, or say `all_users: true` (a `ConfigError` otherwise), as in every omnimem
 * integration. What each hit's metadata says (`hitRecord`) travels beside the text the model reads: in the
 * tool's output (the model sees only the rendered text, through `toModelOutput`) and in the recall message's
 * `providerOptions.omnimem`.
 */

import type { JSONValue, LanguageModelMiddleware, Tool } from "ai";

import { ConfigError, InvalidInputError, MissingDependencyError } from "./errors.js";
import type { AddResult, Context, Hit, OmnimemClient } from "./index.js";

/** The SDK, or one line that names the install, where `ai` (an optional peer dependency) is missing. */
const { jsonSchema, tool } = await import("ai").catch((error: unknown) => {
  if ((error as { code?: string }).code === "ERR_MODULE_NOT_FOUND" && String(error).includes("'ai'")) {
    throw new MissingDependencyError("the Vercel AI SDK is not installed; install it with: npm install ai@6");
  }
  throw error;
});

/** Whose memory is read and written, and how much of it a search returns. */
export interface MemoryScope {
  user_id?: string;
  agent_id?: string;
  session_id?: string;
  /** Read every user's memory: the explicit choice a read without `user_id` needs. */
  all_users?: boolean;
  /** Tokens of the context a search returns (the server's default when left out). */
  budget?: number;
  /** At most this many hits (the server's default when left out). */
  top_k?: number;
}

export interface MemoryToolsOptions extends MemoryScope {
  /** The speaker `add_memory` stores (none when left out). */
  speaker?: string;
  /** `false` leaves `add_memory` out (needed with `all_users: true`: a write goes into one user's memory). */
  add?: boolean;
}

export interface RecallOptions extends MemoryScope {
  /** The line above the recalled memories. */
  heading?: string;
  /** The newest this many characters of a long message are searched (the server's default limit). */
  max_query_chars?: number;
}

/** One hit as the application sees it beside the model's text (Python's `omnimem.integrations.hit_metadata`). */
export interface HitRecord {
  [field: string]: JSONValue;
  id: string;
  text: string;
  time: string | null;
  speaker: string | null;
  sources: string[];
  source_ids: string[];
  level: number;
  rank: number;
  fused: number | null;
  similarity: number;
  tokens: number;
  modality: string;
}

/** What `search_memory` returns: the rendered context the model reads, and a record per hit. */
export interface SearchOutput {
  context: string;
  hits: HitRecord[];
}

export const HEADING = "Memories that may be relevant:";
const MAX_QUERY_CHARS = 20_000;

export function hitRecord(hit: Hit): HitRecord {
  const unit = hit.unit;
  const fused = (hit as Hit & { fused?: number | null }).fused;
  return {
    id: unit.id, text: hit.text, time: unit.event_time, speaker: unit.speaker, sources: [...hit.sources].sort(),
    source_ids: [...unit.source_ids], level: hit.level, rank: hit.rank, fused: fused ?? null, similarity: hit.score,
    tokens: hit.tokens, modality: unit.modality,
  };
}

/** A context as prompt text: one `[YYYY-MM-DD HH:MM] speaker: text` line per hit, in rank order. */
export function renderContext(context: Context): string {
  return [...context.hits].sort((a, b) => a.rank - b.rank).map((hit) => {
    const time = hit.unit.event_time;
    const line = time ? `[${time.slice(0, 16).replace("T", " ")}] ${hit.text}` : hit.text;
    return hit.raw ? `${line}\n${hit.raw.text}` : line;
  }).join("\n");
}

function explicitScope(owner: string, scope: MemoryScope): void {
  if (scope.all_users && scope.user_id !== undefined) {
    throw new ConfigError(`${owner} takes a user_id or all_users: true, not both`);
  }
  if (!scope.all_users && scope.user_id === undefined) {
    throw new ConfigError(`${owner} searches one user's memory: pass user_id, or all_users: true to search every user's`);
  }
  for (const name of ["user_id", "agent_id", "session_id"] as const) {
    const value: unknown = scope[name];
    if (value !== undefined && (typeof value !== "string" || !value.trim())) {
      throw new InvalidInputError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
    }
  }
}

function searchOptions(scope: MemoryScope) {
  return { user_id: scope.user_id, agent_id: scope.agent_id, session_id: scope.session_id, budget: scope.budget,
           top_k: scope.top_k };
}

/** `search_memory` and `add_memory` over `client`, in one scope: `generateText({ tools: memoryTools(...) })`. */
export function memoryTools(client: OmnimemClient, options: MemoryToolsOptions): Record<string, Tool> {
  explicitScope("memoryTools", options);
  const add = options.add ?? true;
  if (options.all_users && add) {
    throw new ConfigError("memoryTools with all_users: true searches every user's memory but add_memory writes into " +
                          "one user's: pass add: false, or a user_id");
  }
  const tools: Record<string, Tool> = {
    search_memory: tool({
      description: "Search the user's long-term memory: earlier conversations, facts, preferences.",
      inputSchema: jsonSchema<{ query: string }>({
        type: "object", properties: { query: { type: "string", description: "What to look for, in words." } },
        required: ["query"], additionalProperties: false,
      }),
      execute: async ({ query }): Promise<SearchOutput> => {
        const context = await client.search(query, searchOptions(options));
        return { context: context.hits.length ? renderContext(context) : "No memories found.",
                 hits: context.hits.map(hitRecord) };
      },
      toModelOutput: ({ output }) => ({ type: "text", value: (output as SearchOutput).context }),
    }),
  };
  if (add) {
    tools.add_memory = tool({
      description: "Remember a fact about the user for later conversations (one short, self-contained statement).",
      inputSchema: jsonSchema<{ text: string }>({
        type: "object", properties: { text: { type: "string", description: "The fact, in words." } },
        required: ["text"], additionalProperties: false,
      }),
      execute: async ({ text }): Promise<AddResult> => client.add(text, {
        user_id: options.user_id, agent_id: options.agent_id, session_id: options.session_id,
        speaker: options.speaker, time: new Date().toISOString(),
      }),
      toModelOutput: ({ output }) => {
        const result = output as AddResult;
        return { type: "text", value: result.accepted ? `Remembered (id ${result.id}).` : `Not stored: ${result.reason}.` };
      },
    });
  }
  return tools;
}

type Prompt = Parameters<NonNullable<LanguageModelMiddleware["transformParams"]>>[0]["params"]["prompt"];

/** The words of a prompt's latest user message (its text parts; files are not searched). */
export function latestUserText(prompt: Prompt): string {
  for (let at = prompt.length - 1; at >= 0; at--) {
    const message = prompt[at];
    if (message?.role === "user") {
      return message.content.flatMap((part) => (part.type === "text" && part.text.trim() ? [part.text.trim()] : []))
        .join(" ");
    }
  }
  return "";
}

function clip(query: string, limit: number): string {
  if (query.length <= limit) return query;
  const tail = query.slice(query.length - limit);
  if (/\s/.test(query[query.length - limit - 1] ?? "")) return tail;
  const space = tail.indexOf(" ");
  return space < 0 ? tail : tail.slice(space + 1);
}

/**
 * A middleware that recalls before each call: `wrapLanguageModel({ model, middleware: recallMiddleware(...) })`.
 * Nothing found (or no user text), the call goes on unchanged.
 */
export function recallMiddleware(client: OmnimemClient, options: RecallOptions): LanguageModelMiddleware {
  explicitScope("recallMiddleware", options);
  const heading = options.heading ?? HEADING;
  const limit = options.max_query_chars ?? MAX_QUERY_CHARS;
  return {
    specificationVersion: "v3",
    transformParams: async ({ params }) => {
      const query = clip(latestUserText(params.prompt), limit);
      if (!query) return params;
      const context = await client.search(query, searchOptions(options));
      if (!context.hits.length) return params;
      const hits = context.hits.map(hitRecord);
      const recalled: Prompt[number] = {
        role: "system", content: `${heading}\n${renderContext(context)}`,
        providerOptions: { omnimem: { query, hits } },
      };
      let at = 0;
      while (params.prompt[at]?.role === "system") at++;
      return { ...params, prompt: [...params.prompt.slice(0, at), recalled, ...params.prompt.slice(at)] };
    },
  };
}
