// Search that explains itself: what ranked each hit, its similarity, sources, pyramid level and tokens,
// the budget bar, and the context exactly as the LLM would read it.
import { api, scopeBody } from "./api.js";
import { fill, h, link, notice, provenance, when } from "./dom.js";

const LEVELS = { 1: "summary", 2: "full text", 3: "raw content" };
// what the API calls each retrieval source -> [label shown, what it means]
const SOURCES = {
  dense: ["dense", "dense vector similarity (MiniLM)"],
  sparse: ["text", "BM25 full-text match (the sparse index)"],
  graph: ["graph", "knowledge-graph expansion"],
  neighbour: ["neighbour", "next to a hit in its session"],
  clip: ["clip", "CLIP text-to-image match"],
  plan: ["plan", "found by a query the planner added"],
};

function optionalNumber(value) {
  const n = Number(value);
  return value !== "" && Number.isFinite(n) ? n : undefined;
}

function budgetBar(ctx) {
  const budget = Math.max(ctx.budget, ctx.tokens, 1);
  const bar = h("div", { class: "budget-bar", role: "img",
    "aria-label": `${ctx.tokens} of ${ctx.budget} tokens used` });
  for (const hit of ctx.hits) {
    const part = h("span", { class: `seg level-${hit.level}`,
      title: `#${hit.rank}: ${hit.tokens} tokens, level ${hit.level} (${LEVELS[hit.level]})` });
    part.style.width = `${(100 * hit.tokens) / budget}%`; // CSSOM, allowed by the CSP (no inline style attribute)
    bar.append(part);
  }
  return h("figure", { class: "budget" },
    bar,
    h("figcaption", {}, `${ctx.tokens} / ${ctx.budget} tokens · `,
      [1, 2, 3].map((lvl) => h("span", { class: `key level-${lvl}` }, `L${lvl} ${LEVELS[lvl]} `))));
}

// What ranked the hits is shown first (the server's ``ranked_by``: their fused score, or their rank alone),
// the query's cosine similarity second: it need not fall in rank order.
const RANKED_BY = {
  fused: "ranked by their fused score (reciprocal rank fusion of the retrievers' ranks)",
  rank: "ranked by # (a clear match moved up, a reranker's order or a planner's merged queries: " +
    "the fused score alone does not give this order)",
};

function hitRow(hit, by) {
  const u = hit.unit;
  const fused = hit.fused === null || hit.fused === undefined ? "–" : hit.fused.toFixed(5);
  const primary = (text) => h("strong", { dataset: { primary: "" } }, text);
  const ranks = Object.entries(hit.ranks || {}).map(([name, r]) => `${name} #${r}`).join(", ");
  return h("tr", { class: "hit", dataset: { unitId: u.id } },
    h("td", { class: "num" }, by === "rank" ? primary(String(hit.rank)) : String(hit.rank)),
    h("td", { class: "num", title: ranks ? `ranks: ${ranks}` : "no ranked retriever found it" },
      by === "fused" ? primary(fused) : fused),
    h("td", { class: "num secondary" }, hit.similarity === undefined ? hit.score.toFixed(3)
      : hit.similarity.toFixed(3)),
    h("td", { class: "sources" }, hit.sources.map((s) => {
      const [label, meaning] = SOURCES[s] || [s, s];
      return [h("span", { class: `badge src-${s}`, title: meaning, dataset: { source: s } }, label), " "];
    })),
    h("td", {}, h("span", { class: `badge level-${hit.level}`, title: LEVELS[hit.level] }, `L${hit.level}`)),
    h("td", { class: "num" }, String(hit.tokens)),
    h("td", {},
      h("div", { class: "meta" }, h("time", { title: `recorded ${when(u.record_time)}` }, when(u.event_time)),
        u.speaker ? h("span", { class: "speaker" }, u.speaker) : null,
        h("span", { class: `badge ${u.modality}` }, u.modality), " ", provenance(u)),
      link("unit", [u.id], u.summary)));
}

function planView(plan) {
  // what the retrieval planner did: each round's queries and why it ran, and what it cost
  if (!plan) return null;
  const cost = `${plan.rounds.length} round(s), ${plan.calls} model call(s), ${plan.prompt_tokens} prompt + ` +
    `${plan.completion_tokens} completion tokens · ` +
    Object.entries(plan.ms).map(([stage, ms]) => `${stage} ${ms.toFixed(1)} ms`).join(" · ");
  return h("section", { class: "plan card", "aria-label": "Retrieval plan" },
    h("h2", {}, `Plan (${plan.planner})`),
    h("ol", {}, plan.rounds.map((round) => h("li", {}, h("span", { class: "hint" }, round.reason, ": "),
      round.queries.map((query, i) => [i ? " · " : "", h("q", {}, query)])))),
    h("p", { class: "hint" }, cost),
    plan.note ? notice(plan.note, "info") : null);
}

function explain(ctx) {
  const by = ctx.ranked_by === "fused" ? "fused" : "rank"; // a server from before ranked_by: the rank
  // what graph expansion did: lists are shown by their length, numbers as they are
  const graph = ctx.graph
    ? h("p", { class: "hint" }, "Graph expansion: ", Object.entries(ctx.graph).map(([key, value]) =>
      `${key} ${Array.isArray(value) ? value.length : typeof value === "object" ? JSON.stringify(value) : value}`)
      .join(" · "))
    : null;
  return h("section", { class: "results", "aria-label": "How the context was built" },
    h("p", {}, `${ctx.hits.length} hits from ${ctx.candidates} candidates, packing “${ctx.packing}”.`),
    budgetBar(ctx),
    planView(ctx.plan),
    graph,
    h("table", { class: "hits", dataset: { rankedBy: by } },
      h("caption", {}, `Hits in rank order, ${RANKED_BY[by]}; similarity: the query's cosine similarity`),
      h("thead", {}, h("tr", {}, ["#", "fused", "similarity", "sources", "level", "tokens", "memory"].map((c) =>
        h("th", { scope: "col" }, c)))),
      h("tbody", {}, [...ctx.hits].sort((a, b) => a.rank - b.rank).map((hit) => hitRow(hit, by)))),
    ctx.dropped && ctx.dropped.length
      ? h("details", {}, h("summary", {}, `${ctx.dropped.length} candidates left out by the budget`),
        h("ul", {}, ctx.dropped.map((id) => h("li", {}, link("unit", [id], id)))))
      : null,
    h("h2", {}, "Context as the LLM sees it"),
    h("pre", { class: "rendered", tabindex: "0", "aria-label": "rendered context" }, ctx.rendered || ""));
}

function answerView(answer) {
  return h("section", { class: "answer card", "aria-label": "Answer" },
    h("h2", {}, "Answer"),
    answer.answer ? h("p", { class: "answer-text" }, answer.answer) : notice(answer.note || "No answer.", "info"),
    answer.model ? h("p", { class: "hint" }, `model ${answer.model}, ${answer.usage.prompt_tokens} prompt + ` +
      `${answer.usage.completion_tokens} completion tokens, ${answer.usage.latency_s} s`) : null,
    h("p", { class: "hint" }, `${answer.evidence.length} memories given as evidence (${answer.tokens} tokens).`));
}

export async function searchView(root, _parts, params) {
  const q = h("input", { id: "q", name: "q", type: "search", value: params.get("q") || "", required: true,
    autocomplete: "off", size: 40 });
  const topK = h("input", { name: "top_k", type: "number", min: 1, max: 200, value: params.get("top_k") || "" ,
    placeholder: "default" });
  const budget = h("input", { name: "budget", type: "number", min: 1, value: params.get("budget") || "",
    placeholder: "default" });
  const superseded = h("input", { type: "checkbox", name: "include_superseded",
    checked: params.get("include_superseded") === "true" });
  const planner = h("select", { name: "planner" }, ["", "none", "offline", "llm"].map((value) =>
    h("option", { value, selected: (params.get("planner") || "") === value }, value || "server default")));
  const askButton = h("button", { type: "button", class: "secondary" }, "Ask");
  const form = h("form", { class: "search", role: "search" },
    h("label", { for: "q" }, "Query"), q,
    h("label", {}, "Top k", topK), h("label", {}, "Token budget", budget),
    h("label", { class: "check" }, superseded, "Include superseded"),
    h("label", {}, "Planner", planner),
    h("button", { type: "submit" }, "Search"), askButton);
  const out = h("div", { class: "search-out" });
  const askOut = h("div", { "aria-live": "polite" });
  const state = () => {
    const next = new URLSearchParams({ q: q.value.trim() });
    if (topK.value) next.set("top_k", topK.value);
    if (budget.value) next.set("budget", budget.value);
    if (superseded.checked) next.set("include_superseded", "true");
    if (planner.value) next.set("planner", planner.value);
    return next;
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/search?${state()}`;
  });
  askButton.addEventListener("click", async () => {
    if (!q.value.trim()) {
      q.focus();
      return;
    }
    fill(askOut, h("p", { class: "loading" }, "Asking…"));
    try {
      const answer = await api.post("/v1/ask", scopeBody({
        question: q.value.trim(), top_k: optionalNumber(topK.value), budget: optionalNumber(budget.value) }));
      fill(askOut, answerView(answer));
    } catch (err) {
      fill(askOut, notice(`${err.code || "error"}: ${err.message}`, "error"));
    }
  });
  // ask needs an LLM on the server; without one the button says so instead of failing
  const stats = await api.get("/v1/stats").catch(() => ({}));
  if (!stats.llm) {
    askButton.disabled = true;
    askButton.title = "ask needs an LLM configured on the server";
  }
  fill(root, h("h1", {}, "Search"), form, askOut, out);
  if (!params.get("q")) {
    q.focus();
    return;
  }
  fill(out, h("p", { class: "loading" }, "Searching…"));
  const ctx = await api.post("/v1/search", scopeBody({
    query: params.get("q"), top_k: optionalNumber(params.get("top_k") || ""),
    budget: optionalNumber(params.get("budget") || ""),
    include_superseded: params.get("include_superseded") === "true" || undefined,
    planner: params.get("planner") || undefined,
  }));
  fill(out, explain(ctx));
}
