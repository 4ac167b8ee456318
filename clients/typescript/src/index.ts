/**
 * `omnimem`: a TypeScript client for the omnimem HTTP API (`omnimem serve`, docs/http-api.md).
 *
 * Request bodies and query parameters are typed by `schema.d.ts`, generated from the server's OpenAPI
 * schema (`npm run generate`); replies the schema leaves open (search contexts, units) are typed here
 * after the server's `to_dict` views. Every error reply becomes the typed error of its code (`errors.ts`).
 */

import type { components, paths } from "./schema.js";
import { errorFromReply, OmnimemError, RemoteError } from "./errors.js";

export * from "./errors.js";
export type { components, paths } from "./schema.js";

type Schemas = components["schemas"];
/** A request body: the fields the server requires, the rest optional (server defaults). */
type Body<T, Needed extends keyof T> = Pick<T, Needed> & Partial<Omit<T, Needed>>;

export type AddOptions = Omit<Body<Schemas["AddBody"], "text">, "text">;
export type Turn = Body<Schemas["Turn"], "text">;
export type DialogueOptions = Omit<Body<Schemas["DialogueBody"], "turns">, "turns">;
export type SearchOptions = Omit<Body<Schemas["SearchBody"], "query">, "query">;
export type AskOptions = Omit<Body<Schemas["AskBody"], "question">, "question">;
export type ForgetOptions = Omit<Partial<Schemas["ForgetBody"]>, "preview">;
export type UpdateOptions = Partial<Schemas["UpdateBody"]>;
export type UnitsOptions = NonNullable<paths["/v1/units"]["get"]["parameters"]["query"]>;
export type ScopeOptions = NonNullable<paths["/v1/units/{unit_id}"]["get"]["parameters"]["query"]>;
export type DeleteOptions = NonNullable<paths["/v1/units/{unit_id}"]["delete"]["parameters"]["query"]>;
export type AddResult = Schemas["AddResultBody"];

/** A Multimodal Atomic Unit as the server sends it. */
export interface Unit {
  id: string;
  summary: string;
  modality: string;
  speaker: string | null;
  event_time: string | null;
  record_time: string;
  user_id: string | null;
  agent_id: string | null;
  session_id: string | null;
  source_ids: string[];
  prev_id: string | null;
  next_id: string | null;
  raw_ref: string | null;
  content_hash: string;
  superseded_by: string | null;
  superseded_at: string | null;
  metadata: Record<string, unknown>;
  /** Only from `get`: the unit's whole text. */
  full_text?: string | null;
}

/** One memory of a search context, rendered at its pyramid level. */
export interface Hit {
  rank: number;
  score: number;
  level: number;
  sources: string[];
  tokens: number;
  unit: Unit;
  text: string;
  raw: { text: string; mime: string; tokens: number | null } | null;
}

/** What a retrieval planner did (`planner: "offline" | "llm"`): each round's queries and why it ran, the model's
 * calls and tokens, milliseconds per stage, and why planning stopped early or fell back (`note`). */
export interface Plan {
  planner: string;
  rounds: { queries: string[]; reason: string }[];
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  ms: Record<string, number>;
  note: string | null;
}

/** What a search returns: the hits that fit the token budget. */
export interface Context {
  query: string;
  tokens: number;
  budget: number;
  candidates: number;
  dropped: string[];
  packing: string;
  graph: Record<string, unknown> | null;
  /** What the planner did; null when no planner ran (one search). */
  plan: Plan | null;
  /** `day` packing: minutes after the line above at which a line shows its time of day. */
  stamp_gap: number;
  /** `day` packing: a line that goes on from its speaker leaves out the name (`"auto"`: where both lines carry
   * times of their own, as chat messages do). */
  elide_speakers: boolean | "auto";
  hits: Hit[];
}

export interface Answer {
  question: string;
  answer: string | null;
  model: string | null;
  note: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; calls: number; latency_s: number };
  evidence: Hit[];
  tokens: number;
  context: Context;
}

export interface AuditEvent {
  [field: string]: unknown;
}

export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8420`. */
  url: string;
  /** An API key (`omnimem keys create`); none for a `--no-auth` server. */
  apiKey?: string;
  /** Milliseconds before a request is abandoned (default 30 000). */
  timeoutMs?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | boolean | null | undefined>;

/** The omnimem HTTP API, with the Python facade's verbs (`add`, `search`, `forget`, ...). */
export class OmnimemClient {
  readonly url: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions) {
    if (!/^https?:\/\//.test(options.url)) {
      throw new OmnimemError(`url must start with http:// or https://, got ${JSON.stringify(options.url)}`,
                             "ConfigError", 0);
    }
    this.url = options.url.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetcher = options.fetch ?? globalThis.fetch;
  }

  /** Remember one piece of text; its id, or why it was skipped. */
  add(text: string, options: AddOptions = {}): Promise<AddResult> {
    return this.request("POST", "/v1/units", { body: { ...options, text } });
  }

  /** Remember a list of turns (`text`, `speaker`, `time`, optional `id`); one result per turn. */
  async addDialogue(turns: Turn[], options: DialogueOptions = {}): Promise<AddResult[]> {
    const reply = await this.request<{ results: AddResult[] }>("POST", "/v1/dialogues", { body: { ...options, turns } });
    return reply.results;
  }

  /** Replace a unit with a corrected version (the old one is kept for history). */
  update(unitId: string, options: UpdateOptions): Promise<AddResult> {
    return this.request("PATCH", `/v1/units/${encodeURIComponent(unitId)}`, { body: options });
  }

  /** Hybrid retrieval packed into a pyramid context under a token budget. */
  search(query: string, options: SearchOptions = {}): Promise<Context> {
    return this.request("POST", "/v1/search", { body: { ...options, query } });
  }

  /** Answer from memory with the server's LLM (offline: the evidence only). */
  ask(question: string, options: AskOptions = {}): Promise<Answer> {
    return this.request("POST", "/v1/ask", { body: { ...options, question } });
  }

  /** One unit, with its full text; `NotFoundError` outside the scope. */
  get(unitId: string, options: ScopeOptions = {}): Promise<Unit> {
    return this.request("GET", `/v1/units/${encodeURIComponent(unitId)}`, { query: options });
  }

  /** A page of a scope's units, by event time, and how many there are in all. */
  units(options: UnitsOptions = {}): Promise<{ units: Unit[]; total: number }> {
    return this.request("GET", "/v1/units", { query: options });
  }

  /** Remove one unit with no residue. */
  async delete(unitId: string, options: DeleteOptions = {}): Promise<void> {
    await this.request("DELETE", `/v1/units/${encodeURIComponent(unitId)}`, { query: options });
  }

  /** Remove units by scope, time range or ids, with no residue; how many went. */
  async forget(options: ForgetOptions): Promise<number> {
    const reply = await this.request<{ forgotten: number }>("POST", "/v1/forget", { body: options });
    return reply.forgotten;
  }

  /** The units `forget` with the same options would remove; removes nothing. */
  async previewForget(options: ForgetOptions): Promise<Unit[]> {
    const reply = await this.request<{ units: Unit[] }>("POST", "/v1/forget", { body: { ...options, preview: true } });
    return reply.units;
  }

  /** Every logged event about a unit, oldest first. */
  async history(unitId: string, options: ScopeOptions = {}): Promise<AuditEvent[]> {
    const path = `/v1/units/${encodeURIComponent(unitId)}/history`;
    return (await this.request<{ events: AuditEvent[] }>("GET", path, { query: options })).events;
  }

  /** Wait until queued enrichment has landed; false if `timeout` seconds passed first. */
  async flush(timeout = 30): Promise<boolean> {
    return (await this.request<{ done: boolean }>("POST", "/v1/flush", { body: { timeout } })).done;
  }

  /** Counts and configuration of the store. */
  stats(): Promise<Record<string, unknown>> {
    return this.request("GET", "/v1/stats", {});
  }

  /** Liveness (no key needed). */
  health(): Promise<{ status: string; read_only: boolean }> {
    return this.request("GET", "/healthz", {});
  }

  private async request<T>(method: string, path: string, parts: { body?: unknown; query?: Query }): Promise<T> {
    const url = new URL(this.url + path);
    for (const [name, value] of Object.entries(parts.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    if (parts.body !== undefined) headers["content-type"] = "application/json";
    let reply: Response;
    try {
      reply = await this.fetcher(url, {
        method, headers, body: parts.body === undefined ? undefined : JSON.stringify(parts.body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (exc) {
      throw new RemoteError(`${method} ${path} to ${this.url} failed: ${(exc as Error).message}`, "RemoteError", 0);
    }
    const text = await reply.text();
    let data: unknown = undefined;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        throw new RemoteError(`${method} ${path}: the server answered ${reply.status} with no JSON`, "RemoteError",
                              reply.status);
      }
    }
    if (!reply.ok) throw errorFromReply(reply.status, data, reply.headers.get("retry-after"));
    return data as T;
  }
}
