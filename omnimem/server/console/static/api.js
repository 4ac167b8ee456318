// The console's only way to the server: the documented HTTP API (docs/http-api.md).
// Login trades the API key for an HttpOnly session cookie; the key is sent once
// in a POST body and never kept. Every state-changing request carries the
// session's CSRF token in the X-CSRF-Token header.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const state = { session: null, scope: { user_id: "", agent_id: "" } };

export function session() {
  return state.session;
}

/** The role's write rights: read < write < admin. */
export function can(action) {
  const role = state.session ? state.session.role : "read";
  if (action === "write") return role === "write" || role === "admin";
  if (action === "admin") return role === "admin";
  return true;
}

/** The scope the console browses: the key's own when it is bound to one, else what the viewer typed. */
export function scope() {
  const s = state.session || {};
  return {
    user_id: s.user_id || state.scope.user_id || "",
    agent_id: s.agent_id || state.scope.agent_id || "",
  };
}

export function setScope(user_id, agent_id) {
  state.scope = { user_id: user_id.trim(), agent_id: agent_id.trim() };
}

/** A query string from an object, skipping empty values; the scope is added unless given. */
export function query(params = {}, withScope = true) {
  const all = withScope ? { ...scope(), ...params } : params;
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(all)) {
    if (value === null || value === undefined || value === "" || value === false) continue;
    q.set(key, String(value));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

/** The scope as JSON body fields (empty ones left out). */
export function scopeBody(extra = {}) {
  const body = {};
  for (const [key, value] of Object.entries({ ...scope(), ...extra })) {
    if (value !== null && value !== undefined && value !== "") body[key] = value;
  }
  return body;
}

async function request(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && state.session && state.session.csrf_token) {
    headers["X-CSRF-Token"] = state.session.csrf_token;
  }
  const response = await fetch(path, {
    method, headers, credentials: "same-origin", cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const code = data && data.error ? data.error : `HTTP ${response.status}`;
    const message = data && data.message ? data.message : text.slice(0, 200) || response.statusText;
    if (response.status === 401 && path !== "/v1/session") state.session = null;
    throw new ApiError(response.status, code, message);
  }
  return data;
}

export const api = {
  get: (path) => request("GET", path),
  post: (path, body) => request("POST", path, body),
  patch: (path, body) => request("PATCH", path, body),
  del: (path) => request("DELETE", path),
};

/** Resume a session from the cookie; null when not logged in. */
export async function resume() {
  try {
    state.session = await api.get("/v1/session");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) state.session = null;
    else throw err;
  }
  return state.session;
}

export async function login(apiKey) {
  state.session = null;
  state.session = await request("POST", "/v1/session", { api_key: apiKey });
  return state.session;
}

export async function logout() {
  try {
    await api.del("/v1/session");
  } finally {
    state.session = null;
  }
}

/** URL of a unit's raw content (the session cookie authorises it; no key in the URL). */
export function rawUrl(unitId) {
  return `/v1/units/${encodeURIComponent(unitId)}/raw${query()}`;
}
