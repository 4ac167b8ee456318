// The console shell: login, theme, scope bar and the hash router that shows one view at a time.
import { ApiError, can, login, logout, resume, session, setScope } from "./api.js";
import { fill, h, notice } from "./dom.js";
import { governanceView } from "./governance.js";
import { graphView } from "./graph.js";
import { searchView } from "./search.js";
import { timelineView } from "./timeline.js";
import { unitView } from "./unit.js";

const main = () => document.getElementById("main");

const VIEWS = {
  timeline: timelineView,
  search: searchView,
  unit: unitView,
  graph: graphView,
  governance: governanceView,
};

// -- theme: the system's preference until the viewer picks one (only the choice is stored) --
function applyTheme(theme) {
  const root = document.documentElement;
  if (theme) root.dataset.theme = theme;
  else delete root.dataset.theme;
  const dark = theme ? theme === "dark" : window.matchMedia("(prefers-color-scheme: dark)").matches;
  const button = document.getElementById("theme");
  button.setAttribute("aria-pressed", String(dark));
  button.textContent = dark ? "Light theme" : "Dark theme";
}

function toggleTheme() {
  const dark = document.getElementById("theme").getAttribute("aria-pressed") === "true";
  const next = dark ? "light" : "dark";
  localStorage.setItem("omnimem-theme", next);
  applyTheme(next);
}

// -- login --
function loginView() {
  const key = h("input", { id: "api-key", name: "api_key", type: "password", autocomplete: "off", required: true,
    spellcheck: "false", "aria-describedby": "key-help" });
  const status = h("div", { "aria-live": "assertive" });
  const form = h("form", { class: "login card", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Sign in to omnimem"),
    h("label", { for: "api-key" }, "API key"),
    key,
    h("p", { id: "key-help", class: "hint" },
      "The key is exchanged for a session cookie and is not kept by this page."),
    h("button", { type: "submit" }, "Sign in"),
    status,
    h("p", { id: "key-source", class: "hint" }, "No key yet? On the server's machine run ",
      h("code", {}, "omnimem keys create --name me --role admin --store DIR"),
      " with the store folder the server serves (", h("code", {}, "--role read"), " or ",
      h("code", {}, "write"), " for less, ", h("code", {}, "--user-id"), " for one user's memories). ",
      "It prints the key once; the running server accepts it at once."));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = key.value;
    key.value = ""; // the key leaves the page as soon as it is sent
    try {
      await login(value);
      shell();
      if (!location.hash || location.hash === "#/login") location.hash = "#/timeline";
      else route();
    } catch (err) {
      fill(status, notice(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err), "error"));
      key.focus();
    }
  });
  fill(main(), form);
  key.focus();
}

// -- shell: navigation, who is signed in, scope bar --
function shell() {
  const s = session();
  const logged = Boolean(s);
  document.getElementById("nav").hidden = !logged;
  document.getElementById("logout").hidden = !logged || !s.csrf_token; // --no-auth servers have no session to end
  const scopeForm = document.getElementById("scope");
  scopeForm.hidden = !logged;
  document.body.dataset.role = logged ? s.role : "";
  if (!logged) {
    fill(document.getElementById("who"));
    return;
  }
  fill(document.getElementById("who"),
    h("span", { class: `role role-${s.role}`, title: "role of this key" }, s.role),
    s.user_id ? ` ${s.user_id}` : " store-wide",
    s.agent_id ? ` / ${s.agent_id}` : "");
  for (const name of ["user_id", "agent_id"]) {
    const input = scopeForm.elements[name];
    if (s[name]) {
      input.value = s[name];
      input.readOnly = true; // a bound key acts only inside its scope
    } else {
      input.readOnly = false;
    }
  }
}

function announce(text) {
  fill(document.getElementById("live"), text);
}

let routed = 0;

async function route() {
  if (!session()) {
    loginView();
    return;
  }
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, search = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const name = parts[0] && VIEWS[parts[0]] ? parts[0] : "timeline";
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const root = main();
  root.setAttribute("aria-busy", "true");
  fill(root, h("p", { class: "loading" }, "Loading…"));
  try {
    await VIEWS[name](root, parts.slice(1), new URLSearchParams(search), { can, announce });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      shell();
      loginView();
      return;
    }
    fill(root, notice(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err), "error"));
  } finally {
    root.removeAttribute("aria-busy");
    routed += 1;
    document.body.dataset.routed = String(routed); // how many views have finished rendering (tests wait on it)
  }
}

async function start() {
  applyTheme(localStorage.getItem("omnimem-theme"));
  document.getElementById("theme").addEventListener("click", toggleTheme);
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change",
    () => applyTheme(localStorage.getItem("omnimem-theme")));
  document.getElementById("logout").addEventListener("click", async () => {
    await logout().catch(() => undefined);
    shell();
    location.hash = "#/login";
    loginView();
  });
  document.getElementById("scope").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    setScope(form.elements.user_id.value, form.elements.agent_id.value);
    route();
  });
  window.addEventListener("hashchange", route);
  try {
    await resume();
  } catch (err) {
    fill(main(), notice(`Cannot reach the server: ${err.message}`, "error"));
    return;
  }
  shell();
  await route();
  document.body.dataset.ready = "true";
}

start();
