// Governance: the audit log, forget (preview, then confirm) and export.
import { api, can, query, scope } from "./api.js";
import { confirmDialog, fill, h, link, notice, when } from "./dom.js";

function auditTable(events) {
  if (!events.length) return h("p", { class: "empty" }, "The audit log is empty.");
  return h("table", { class: "audit" },
    h("caption", {}, "Newest first"),
    h("thead", {}, h("tr", {}, ["#", "time", "actor", "action", "scope", "units", "reason"].map((c) =>
      h("th", { scope: "col" }, c)))),
    h("tbody", {}, events.map((e) => h("tr", {},
      h("td", {}, String(e.seq)), h("td", {}, when(e.time)), h("td", {}, e.actor), h("td", {}, e.action),
      h("td", {}, [e.user_id, e.agent_id, e.session_id].filter(Boolean).join(" / ") || "—"),
      h("td", {}, e.unit_ids.slice(0, 3).map((id) => [link("unit", [id], id.slice(0, 8)), " "]),
        e.unit_ids.length > 3 ? `+${e.unit_ids.length - 3}` : ""),
      h("td", {}, e.reason || "")))));
}

function isoOrUndefined(value) {
  return value ? new Date(value).toISOString() : undefined;
}

function forgetForm(announce) {
  const own = scope();
  const user = h("input", { id: "forget-user", name: "user_id", value: own.user_id, autocomplete: "off" });
  const agent = h("input", { id: "forget-agent", name: "agent_id", value: own.agent_id, autocomplete: "off" });
  const session = h("input", { id: "forget-session", name: "session_id", autocomplete: "off" });
  const since = h("input", { id: "forget-since", name: "since", type: "datetime-local" });
  const until = h("input", { id: "forget-until", name: "until", type: "datetime-local" });
  const reason = h("input", { id: "forget-reason", name: "reason", placeholder: "e.g. deletion request #123" });
  // a session or time range alone must name a user, or say "every user" explicitly (as Memory.forget asks)
  const allUsers = h("input", { id: "forget-all-users", name: "all_users", type: "checkbox" });
  const out = h("div", { class: "forget-preview", "aria-live": "polite" });
  const body = () => {
    const b = {
      user_id: user.value.trim() || undefined, agent_id: agent.value.trim() || undefined,
      session_id: session.value.trim() || undefined, since: isoOrUndefined(since.value),
      until: isoOrUndefined(until.value), reason: reason.value.trim() || undefined,
      all_users: allUsers.checked || undefined,
    };
    return Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined));
  };
  const form = h("form", { class: "forget card", "aria-labelledby": "forget-title" },
    h("h2", { id: "forget-title" }, "Forget"),
    h("p", { class: "hint" }, "Removes the selected memories from every tier and index with no residue. " +
      "Time range: from inclusive, until exclusive (event time)."),
    h("div", { class: "grid" },
      h("label", { for: "forget-user" }, "User"), user,
      h("label", { for: "forget-agent" }, "Agent"), agent,
      h("label", { for: "forget-session" }, "Session"), session,
      h("label", { for: "forget-since" }, "From"), since,
      h("label", { for: "forget-until" }, "Until"), until,
      h("label", { for: "forget-reason" }, "Reason"), reason,
      h("label", { for: "forget-all-users" }, "Every user"), h("span", {}, allUsers,
        h("span", { class: "hint" }, " the session or time range across all users"))),
    h("button", { type: "submit" }, "Preview what will go"),
    out);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const selection = body();
    let preview;
    try {
      preview = await api.post("/v1/forget", { ...selection, preview: true });
    } catch (err) {
      fill(out, notice(`${err.code}: ${err.message}`, "error"));
      return;
    }
    if (!preview.count) {
      fill(out, notice("Nothing matches: nothing would be forgotten.", "info"));
      return;
    }
    const go = h("button", { type: "button", class: "danger" }, `Forget ${preview.count} memories…`);
    go.addEventListener("click", async () => {
      const ok = await confirmDialog(`Forget ${preview.count} memories?`,
        h("p", {}, "They are removed with no residue. This cannot be undone."), "Forget");
      if (!ok) return;
      try {
        const done = await api.post("/v1/forget", selection);
        fill(out, notice(`Forgot ${done.forgotten} memories.`, "ok"));
        announce(`Forgot ${done.forgotten} memories.`);
      } catch (err) {
        fill(out, notice(`${err.code}: ${err.message}`, "error"));
      }
    });
    fill(out,
      h("p", {}, `${preview.count} memories would be forgotten`,
        preview.units.length < preview.count ? ` (first ${preview.units.length} shown)` : "", ":"),
      h("ul", { class: "preview-units" }, preview.units.map((u) => h("li", {},
        h("time", {}, when(u.event_time)), " ", u.speaker ? h("span", { class: "speaker" }, u.speaker) : null, " ",
        link("unit", [u.id], u.summary)))),
      go);
  });
  return form;
}

function forgetNeedsAdmin() {
  return h("section", { class: "forget card", "aria-labelledby": "forget-title" },
    h("h2", { id: "forget-title" }, "Forget"),
    h("p", { class: "hint", id: "forget-needs-admin" },
      "Forgetting needs an admin key: this key can read", can("write") ? " and write" : "",
      " but not forget. Sign in with an admin key, or run ", h("code", {}, "omnimem forget"),
      " on the server's machine (", h("code", {}, "omnimem forget --user-id USER --preview"),
      " lists what would go)."));
}

export async function governanceView(root, _parts, _params, { announce }) {
  const events = (await api.get(`/v1/log${query({ limit: 200 })}`)).events;
  const exportLink = h("a", { href: `/v1/export${query()}`, download: "omnimem-export.ndjson", class: "button" },
    "Download export (NDJSON)");
  fill(root,
    h("h1", {}, "Governance"),
    h("section", { class: "card", "aria-labelledby": "export-title" },
      h("h2", { id: "export-title" }, "Export"),
      h("p", { class: "hint" }, "Every memory of the current scope, one JSON record per line."),
      exportLink),
    can("admin") ? forgetForm(announce) : forgetNeedsAdmin(),
    h("h2", {}, "Audit log"),
    auditTable([...events].sort((a, b) => b.seq - a.seq)));
}
