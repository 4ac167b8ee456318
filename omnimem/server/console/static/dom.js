// DOM helpers. Every piece of data reaches the page as a text node or an
// attribute value set through the DOM API: nothing here parses HTML, so memory
// text, speaker names, file names and captions always render as text.

const SVG_NS = "http://www.w3.org/2000/svg";

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setAttrs(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name.startsWith("on")) {
      throw new Error(`refusing a non-function event attribute ${name}`);
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  return node;
}

/** h("a", {href: "#/x"}, "text", child...) builds an HTML element. */
export function h(tag, attrs, ...children) {
  return append(setAttrs(document.createElement(tag), attrs), children);
}

/** svg("circle", {r: 4}) builds an SVG element. */
export function svg(tag, attrs, ...children) {
  return append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children);
}

/** Replace the children of ``node``. */
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

// an ISO 8601 time as the server writes it: date, hour, minute, seconds, and its offset when it has one
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** A time on its own clock, as it was written ("" when unknown): "2024-06-01 00:00 UTC", never shifted
 * into the browser's zone, so it reads as the context the LLM sees does. A time with an offset says it
 * ("UTC", "UTC+02:00"); one without is shown as it is. Seconds only where they are not :00. */
export function when(iso) {
  if (!iso) return "";
  const m = ISO_TIME.exec(String(iso));
  if (!m) return String(iso);
  const [, day, minute, seconds, offset] = m;
  const clock = seconds && seconds !== "00" ? `${minute}:${seconds}` : minute;
  if (!offset) return `${day} ${clock}`;
  const zone = offset === "Z" || /^[+-]00:?00$/.test(offset) ? "UTC" : `UTC${offset}`;
  return `${day} ${clock} ${zone}`;
}

/** An id shortened for display; the full id stays in the title. */
export function shortId(id) {
  return h("code", { title: id, class: "id" }, String(id).slice(0, 8));
}

/** Where a memory came from, as badges: its source kind, its trust (untrusted text is fenced in contexts),
 * and how it arrived and who wrote it (in the title). */
export function provenance(unit) {
  const trust = unit.trust || "trusted";
  const how = [unit.surface && `via ${unit.surface}`, unit.actor && `by ${unit.actor}`,
    unit.origin && `file said ${unit.origin}`].filter(Boolean).join(" ");
  return h("span", { class: "provenance", dataset: { source: unit.source || "user", trust } },
    h("span", { class: "badge source", title: how || "written before provenance was recorded" },
      unit.source || "user"), " ",
    h("span", { class: `badge trust-${trust}`, title: trust === "trusted" ? "trusted"
      : "not trusted: fenced in every context as data, never instructions" }, trust));
}

/** A link to a route inside the console (ids are URI-encoded, never parsed as HTML). */
export function link(route, parts, ...children) {
  const path = [route, ...parts.map((p) => encodeURIComponent(String(p)))].join("/");
  return h("a", { href: `#/${path}` }, ...children);
}

/** A notice in a live region, e.g. an error or "saved". */
export function notice(text, kind = "info") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

/**
 * Ask before something that cannot be undone, with a real modal <dialog>.
 * Resolves true only when the confirm button was pressed.
 */
export function confirmDialog(title, body, confirmLabel) {
  return new Promise((resolve) => {
    const ok = h("button", { type: "submit", value: "ok", class: "danger" }, confirmLabel);
    const cancel = h("button", { type: "submit", value: "cancel", formnovalidate: true }, "Cancel");
    const dialog = h("dialog", { class: "confirm", "aria-labelledby": "confirm-title" },
      h("form", { method: "dialog" },
        h("h2", { id: "confirm-title" }, title),
        body,
        h("div", { class: "actions" }, cancel, ok)));
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}
