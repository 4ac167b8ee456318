// Timeline: a scope's memories by event time, filtered by modality, speaker, session and time range.
import { api, query } from "./api.js";
import { fill, h, link, provenance, when } from "./dom.js";
import { mediaPreview, videoChildren } from "./media.js";

const PAGE = 50;

function field(label, input) {
  return h("label", {}, label, input);
}

/** The datetime-local value of a filter as an ISO time the API parses. */
function isoOrEmpty(value) {
  return value ? new Date(value).toISOString() : "";
}

export function unitCard(unit, children = []) {
  const superseded = Boolean(unit.superseded_by);
  return h("li", { class: `unit modality-${unit.modality}${superseded ? " superseded" : ""}`, dataset: { unitId: unit.id } },
    h("div", { class: "meta" },
      h("time", { datetime: unit.event_time || unit.record_time,
        title: `recorded ${when(unit.record_time)}` }, when(unit.event_time) || "no event time"),
      h("span", { class: `badge ${unit.modality}` }, unit.modality),
      unit.speaker ? h("span", { class: "speaker" }, unit.speaker) : null,
      unit.session_id ? h("span", { class: "session", title: "session" }, unit.session_id) : null,
      provenance(unit),
      superseded ? h("span", { class: "badge superseded", title: `replaced by ${unit.superseded_by}` }, "superseded") : null),
    h("p", { class: "summary" }, link("unit", [unit.id], unit.summary)),
    mediaPreview(unit),
    unit.modality === "video" ? videoChildren(unit, children) : null);
}

export async function timelineView(root, _parts, params) {
  const filters = {
    modality: params.get("modality") || "",
    speaker: params.get("speaker") || "",
    session_id: params.get("session_id") || "",
    since: params.get("since") || "",
    until: params.get("until") || "",
    include_superseded: params.get("include_superseded") === "true",
    offset: Number(params.get("offset") || 0),
  };
  const modality = h("select", { name: "modality" },
    ["", "text", "image", "audio", "video"].map((m) => h("option", { value: m, selected: m === filters.modality },
      m || "any")));
  const speaker = h("input", { name: "speaker", value: filters.speaker, autocomplete: "off" });
  const sessionId = h("input", { name: "session_id", value: filters.session_id, autocomplete: "off" });
  const since = h("input", { name: "since", type: "datetime-local", value: filters.since });
  const until = h("input", { name: "until", type: "datetime-local", value: filters.until });
  const superseded = h("input", { name: "include_superseded", type: "checkbox", checked: filters.include_superseded });
  const form = h("form", { class: "filters", "aria-label": "Timeline filters" },
    field("Modality", modality), field("Speaker", speaker), field("Session", sessionId),
    field("From", since), field("Until", until),
    h("label", { class: "check" }, superseded, "Show superseded"),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of Object.entries({ modality: modality.value, speaker: speaker.value.trim(),
      session_id: sessionId.value.trim(), since: since.value, until: until.value,
      include_superseded: superseded.checked ? "true" : "" })) {
      if (value) next.set(key, value);
    }
    location.hash = `#/timeline?${next}`;
  });

  const data = await api.get(`/v1/units${query({
    modality: filters.modality, speaker: filters.speaker, session_id: filters.session_id,
    since: isoOrEmpty(filters.since), until: isoOrEmpty(filters.until),
    include_superseded: filters.include_superseded ? "true" : "", limit: PAGE, offset: filters.offset,
  })}`);
  const units = data.units;
  // a video's kept frames and speech are shown inside its card when they are on the same page
  const onPage = new Set(units.map((u) => u.id));
  const children = new Map();
  const shown = [];
  for (const unit of units) {
    const parent = unit.metadata && unit.metadata.parent_id;
    if (parent && onPage.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(unit);
    } else {
      shown.push(unit);
    }
  }
  const pager = h("nav", { class: "pager", "aria-label": "Pages" },
    filters.offset > 0 ? h("a", { href: pageHash(params, Math.max(0, filters.offset - PAGE)) }, "← Newer pages") : null,
    h("span", {}, `${units.length ? filters.offset + 1 : 0}–${filters.offset + units.length} of ${data.total}`),
    filters.offset + PAGE < data.total ? h("a", { href: pageHash(params, filters.offset + PAGE) }, "Later →") : null);
  fill(root,
    h("h1", {}, "Timeline"),
    form,
    pager,
    units.length
      ? h("ol", { class: "timeline", "aria-label": "Memories by event time" },
        shown.map((u) => unitCard(u, children.get(u.id) || [])))
      : h("p", { class: "empty" }, "No memories match."),
    h("p", { class: "hint" }, "Hover a time to see when it was recorded."));
}

function pageHash(params, offset) {
  const next = new URLSearchParams(params);
  next.set("offset", String(offset));
  return `#/timeline?${next}`;
}
