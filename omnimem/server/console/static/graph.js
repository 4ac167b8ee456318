// Graph around an entity: an SVG view plus the same data as lists (keyboard and screen-reader friendly).
// Expand a node to fetch its relations; select an edge to open the units behind it.
import { api, query } from "./api.js";
import { fill, h, link, notice, svg } from "./dom.js";

const SIZE = 640;

function entityName(entity) {
  return typeof entity === "string" ? entity : entity.name;
}

async function details(name) {
  const data = await api.get(`/v1/entities/${encodeURIComponent(name)}${query()}`);
  return data.entities;
}

class GraphModel {
  constructor() {
    this.nodes = new Map(); // name -> {name, type, aliases, units, expanded, x, y}
    this.edges = new Map(); // "a\u0000label\u0000b" -> {source, target, label}
  }

  node(name, near) {
    if (!this.nodes.has(name)) {
      const i = this.nodes.size;
      const angle = i * 2.399963; // golden angle: spread without overlap, deterministic
      const radius = near ? (near.x === SIZE / 2 && near.y === SIZE / 2 ? 170 : 110) : 0;
      const base = near || { x: SIZE / 2, y: SIZE / 2 };
      this.nodes.set(name, { name, type: "", aliases: [], units: [], expanded: false,
        x: clamp(base.x + radius * Math.cos(angle)), y: clamp(base.y + radius * Math.sin(angle)) });
    }
    return this.nodes.get(name);
  }

  async expand(name) {
    const node = this.node(name);
    for (const entity of await details(name)) {
      const target = entity.name === name ? node : this.node(entity.name, node);
      Object.assign(target, { type: entity.type, aliases: entity.aliases, units: entity.units, expanded: true });
      for (const rel of entity.relations) {
        const a = this.node(rel.source, target);
        const b = this.node(rel.target, target);
        this.edges.set([a.name, rel.label, b.name].join("\u0000"), { source: a.name, target: b.name, label: rel.label });
      }
    }
    node.expanded = true;
  }
}

function clamp(v) {
  return Math.max(40, Math.min(SIZE - 40, v));
}

function unitsList(ids) {
  if (!ids.length) return h("p", { class: "empty" }, "No units recorded.");
  return h("ul", { class: "unit-links" }, ids.map((id) => h("li", {}, link("unit", [id], id))));
}

export async function graphView(root, parts) {
  const start = parts[0] || "";
  let listing;
  try {
    listing = (await api.get(`/v1/entities${query()}`)).entities;
  } catch (err) {
    // the library's words name Memory(..., graph=True); a web user starts the server, so name its option
    const off = err.code === "ConfigError" && /knowledge graph is off/.test(err.message || "");
    fill(root, h("h1", {}, "Graph"), off
      ? notice("The knowledge graph is off on this server: start it with `omnimem serve --graph`.", "info")
      : notice(`${err.code}: ${err.message}`, "error"));
    return;
  }
  const filter = h("input", { id: "entity-filter", type: "search", placeholder: "filter", autocomplete: "off" });
  const names = listing.map(entityName).sort((a, b) => a.localeCompare(b));
  const list = h("ul", { class: "entities" });
  const showList = () => fill(list, names.filter((n) => n.toLowerCase().includes(filter.value.toLowerCase()))
    .slice(0, 300).map((n) => h("li", {}, link("graph", [n], n))));
  filter.addEventListener("input", showList);
  showList();
  const aside = h("aside", { class: "entity-list", "aria-label": "Entities" },
    h("label", { for: "entity-filter" }, `Entities (${names.length})`), filter, list);
  const canvas = h("div", { class: "graph-canvas" });
  const panel = h("section", { class: "graph-panel card", "aria-live": "polite" });
  fill(root, h("h1", {}, start ? `Graph around “${start}”` : "Graph"),
    h("div", { class: "graph-layout" }, aside, canvas, panel));
  if (!start) {
    fill(canvas, h("p", { class: "empty" }, names.length ? "Pick an entity." : "No entities in this scope."));
    return;
  }
  const model = new GraphModel();
  await model.expand(start);
  if (model.nodes.size === 1 && !model.nodes.get(start).units.length && !model.edges.size) {
    fill(canvas, notice(`No entity called “${start}” in this scope.`, "warn"));
    return;
  }
  const neighbours = (await api.get(`/v1/entities/${encodeURIComponent(start)}/neighbors${query({ hops: 2 })}`))
    .neighbors;

  const selectNode = (name) => {
    const node = model.nodes.get(name);
    const expand = h("button", { type: "button", disabled: node.expanded }, node.expanded ? "Expanded" : "Expand");
    expand.addEventListener("click", async () => {
      await model.expand(name);
      draw();
      selectNode(name);
    });
    fill(panel, h("h2", {}, node.name),
      h("p", {}, node.type ? `type ${node.type}` : "", node.aliases.length ? ` · also ${node.aliases.join(", ")}` : ""),
      expand, " ", link("graph", [node.name], "Centre here"),
      h("h3", {}, "Units behind it"), unitsList(node.units));
  };
  const selectEdge = (edge) => {
    const a = model.nodes.get(edge.source);
    const b = model.nodes.get(edge.target);
    const both = a.units.filter((u) => b.units.includes(u));
    fill(panel, h("h2", {}, `${edge.source} — ${edge.label} → ${edge.target}`),
      h("h3", {}, both.length ? "Units attesting both" : "Units behind either end"),
      unitsList(both.length ? both : [...new Set([...a.units, ...b.units])]));
  };
  const activate = (el, fn) => {
    el.addEventListener("click", fn);
    el.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        fn();
      }
    });
  };
  const draw = () => {
    const picture = svg("svg", { viewBox: `0 0 ${SIZE} ${SIZE}`, class: "graph", role: "group",
      "aria-label": `knowledge graph around ${start}` });
    for (const edge of model.edges.values()) {
      const a = model.nodes.get(edge.source);
      const b = model.nodes.get(edge.target);
      const g = svg("g", { class: "edge", tabindex: "0", role: "button",
        "aria-label": `${edge.source} ${edge.label} ${edge.target}: open units` },
      svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }),
      svg("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, class: "edge-label" }, edge.label));
      activate(g, () => selectEdge(edge));
      picture.append(g);
    }
    for (const node of model.nodes.values()) {
      const g = svg("g", { class: `node${node.expanded ? " expanded" : ""}${node.name === start ? " centre" : ""}`,
        tabindex: "0", role: "button", "aria-label": `${node.name}${node.expanded ? "" : " (not expanded)"}` },
      svg("circle", { cx: node.x, cy: node.y, r: node.name === start ? 14 : 10 }),
      svg("text", { x: node.x + 16, y: node.y + 4 }, node.name));
      activate(g, () => selectNode(node.name));
      g.addEventListener("dblclick", async () => {
        await model.expand(node.name);
        draw();
      });
      picture.append(g);
    }
    fill(canvas, picture,
      h("details", { class: "as-list" }, h("summary", {}, "Relations as a list"),
        h("ul", {}, [...model.edges.values()].map((e) => {
          const b = h("button", { type: "button", class: "linkish" }, `${e.source} — ${e.label} → ${e.target}`);
          b.addEventListener("click", () => selectEdge(e));
          return h("li", {}, b);
        }))),
      h("details", { class: "as-list" }, h("summary", {}, `Within 2 hops (${neighbours.length})`),
        h("ul", {}, neighbours.map((n) => h("li", {}, link("graph", [n.entity], n.entity),
          ` · distance ${n.distance} · score ${Number(n.score).toFixed(3)}`)))));
  };
  draw();
  selectNode(start);
}
