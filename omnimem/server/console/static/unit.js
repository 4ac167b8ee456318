// Unit page: everything known about one memory, its versions and its audit trail;
// update and delete (with confirmation) for keys that may write.
import { api, can, query, rawUrl, scopeBody } from "./api.js";
import { confirmDialog, fill, h, link, notice, provenance, when } from "./dom.js";
import { mediaPreview, videoChildren } from "./media.js";

const MAX_CHAIN = 50;

function row(label, ...value) {
  return [h("dt", {}, label), h("dd", {}, ...value)];
}

/** Where the unit came from: turn ids, frame second, audio span. */
function origin(unit) {
  const m = unit.metadata || {};
  const parts = [];
  if (unit.source_ids.length) parts.push(h("span", {}, "ids ", unit.source_ids.map((s) => h("code", {}, s, " "))));
  if (m.timestamp_s !== undefined) parts.push(h("span", {}, ` frame at ${m.timestamp_s} s`));
  if (m.start_s !== undefined) parts.push(h("span", {}, ` ${m.start_s}–${m.end_s} s`));
  if (m.source) parts.push(h("span", {}, " of ", h("q", {}, String(m.source))));
  if (m.parent_id) parts.push(h("span", {}, " (", link("unit", [m.parent_id], "parent event"), ")"));
  return parts.length ? parts : ["—"];
}

/** Older versions (from the audit log's supersedes records) and newer ones (superseded_by), oldest first. */
async function chain(unit, events) {
  const older = [];
  let current = unit.id;
  const replacedBy = new Map();
  for (const event of events) {
    const map = (event.details && event.details.supersedes) || {};
    for (const [newer, olds] of Object.entries(map)) for (const old of olds) replacedBy.set(newer, old);
  }
  while (replacedBy.has(current) && older.length < MAX_CHAIN) {
    current = replacedBy.get(current);
    older.unshift(current);
  }
  const newer = [];
  let next = unit.superseded_by;
  while (next && newer.length < MAX_CHAIN) {
    newer.push(next);
    try {
      next = (await api.get(`/v1/units/${encodeURIComponent(next)}${query()}`)).superseded_by;
    } catch {
      next = null; // a later version outside this scope or deleted: the chain stops here
    }
  }
  return [...older, unit.id, ...newer];
}

function historyTable(events) {
  if (!events.length) return h("p", { class: "empty" }, "No audit events.");
  return h("table", { class: "audit" },
    h("thead", {}, h("tr", {}, ["#", "time", "actor", "action", "units", "reason"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, events.map((e) => h("tr", {},
      h("td", {}, String(e.seq)), h("td", {}, when(e.time)), h("td", {}, e.actor), h("td", {}, e.action),
      h("td", {}, e.unit_ids.slice(0, 4).map((id) => [link("unit", [id], id.slice(0, 8)), " "]),
        e.unit_ids.length > 4 ? `+${e.unit_ids.length - 4}` : ""),
      h("td", {}, e.reason || "")))));
}

async function videoParts(unit) {
  if (unit.modality !== "video" || !unit.event_time) return null;
  const page = await api.get(`/v1/units${query({ since: unit.event_time, session_id: unit.session_id || "",
    limit: 200 })}`);
  return videoChildren(unit, page.units.filter((u) => u.metadata && u.metadata.parent_id === unit.id));
}

function editForm(unit, fullText, announce) {
  const text = h("textarea", { id: "edit-text", name: "text", rows: 5 }, fullText || unit.summary);
  const time = h("input", { id: "edit-time", name: "time", value: unit.event_time || "", placeholder: "ISO time" });
  const speaker = h("input", { id: "edit-speaker", name: "speaker", value: unit.speaker || "" });
  const reason = h("input", { id: "edit-reason", name: "reason", placeholder: "why (kept in the audit log)" });
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "edit card", "aria-labelledby": "edit-title" },
    h("h2", { id: "edit-title" }, "Correct this memory"),
    h("label", { for: "edit-text" }, "Text"), text,
    h("label", { for: "edit-time" }, "Event time"), time,
    h("label", { for: "edit-speaker" }, "Speaker"), speaker,
    h("label", { for: "edit-reason" }, "Reason"), reason,
    h("button", { type: "submit" }, "Save as new version"), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { reason: reason.value.trim() || undefined };
    if (text.value !== (fullText || unit.summary)) body.text = text.value;
    if (time.value !== (unit.event_time || "")) body.time = time.value;
    if (speaker.value !== (unit.speaker || "")) body.speaker = speaker.value;
    const ok = await confirmDialog("Save a corrected version?",
      h("p", {}, "The current version is kept for history and no longer returned by search."), "Save");
    if (!ok) return;
    try {
      const result = await api.patch(`/v1/units/${encodeURIComponent(unit.id)}`, scopeBody(body));
      announce("Saved a new version.");
      location.hash = `#/unit/${encodeURIComponent(result.id)}`;
    } catch (err) {
      fill(status, notice(`${err.code}: ${err.message}`, "error"));
    }
  });
  return form;
}

function deleteControls(unit, announce) {
  const chainBox = h("input", { type: "checkbox", name: "chain" });
  const reason = h("input", { id: "delete-reason", name: "reason", placeholder: "why (kept in the audit log)" });
  const status = h("div", { "aria-live": "polite" });
  const button = h("button", { type: "button", class: "danger" }, "Delete…");
  button.addEventListener("click", async () => {
    const ok = await confirmDialog("Delete this memory?",
      h("p", {}, "It is removed from every tier and index with no residue. This cannot be undone: ",
        h("q", {}, unit.summary)), "Delete");
    if (!ok) return;
    try {
      await api.del(`/v1/units/${encodeURIComponent(unit.id)}${query({ reason: reason.value.trim(),
        chain: chainBox.checked ? "true" : "" })}`);
      announce("Deleted.");
      location.hash = "#/timeline";
    } catch (err) {
      fill(status, notice(`${err.code}: ${err.message}`, "error"));
    }
  });
  return h("section", { class: "delete card", "aria-labelledby": "delete-title" },
    h("h2", { id: "delete-title" }, "Delete"),
    h("label", { for: "delete-reason" }, "Reason"), reason,
    h("label", { class: "check" }, chainBox, "Also every other version of it"),
    button, status);
}

export async function unitView(root, parts, _params, { announce }) {
  const id = parts[0];
  const unit = await api.get(`/v1/units/${encodeURIComponent(id)}${query()}`);
  const events = (await api.get(`/v1/units/${encodeURIComponent(id)}/history${query()}`)).events;
  const versions = await chain(unit, events);
  const raw = unit.raw_ref
    ? [mediaPreview(unit, { large: true }),
      h("p", {}, h("a", { href: rawUrl(unit.id), download: "", rel: "noopener" }, "Download raw content"))]
    : [h("p", { class: "empty" }, "No raw content (the text is the memory).")];
  fill(root,
    h("p", {}, link("timeline", [], "← Timeline")),
    h("h1", { class: "unit-title" }, unit.summary),
    unit.superseded_by ? notice("This version was superseded; search returns the newer one.", "warn") : null,
    h("dl", { class: "facts" },
      row("id", h("code", {}, unit.id)),
      row("modality", unit.modality),
      row("event time", when(unit.event_time) || "unknown"),
      row("recorded", when(unit.record_time)),
      row("speaker", unit.speaker || "—"),
      row("scope", `user ${unit.user_id || "—"} · agent ${unit.agent_id || "—"} · session ${unit.session_id || "—"}`),
      row("source", ...origin(unit)),
      row("provenance", provenance(unit), " ", [unit.surface && `via ${unit.surface}`,
        unit.actor && `by ${unit.actor}`, unit.origin && `(its file said ${unit.origin})`].filter(Boolean).join(" ")),
      row("links", unit.prev_id ? link("unit", [unit.prev_id], "← previous") : "—", " ",
        unit.next_id ? link("unit", [unit.next_id], "next →") : ""),
      row("content hash", h("code", {}, unit.content_hash))),
    h("h2", {}, "Full text"),
    h("pre", { class: "full-text" }, unit.full_text || unit.summary),
    h("h2", {}, "Raw content"),
    ...raw,
    await videoParts(unit),
    h("h2", {}, "Versions"),
    versions.length > 1
      ? h("ol", { class: "versions" }, versions.map((v) => h("li", {},
        v === unit.id ? h("strong", { "aria-current": "true" }, v) : link("unit", [v], v))))
      : h("p", { class: "empty" }, "Only this version."),
    h("h2", {}, "Audit history"),
    historyTable(events),
    h("h2", {}, "Metadata"),
    h("pre", { class: "metadata" }, JSON.stringify(unit.metadata, null, 2)),
    can("write") && !unit.superseded_by ? editForm(unit, unit.full_text, announce) : null,
    can("write") ? deleteControls(unit, announce) : null);
}
