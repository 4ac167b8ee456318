/** The client against a live `omnimem serve` on loopback: the verbs, and typed errors by the server's codes. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import {
  AuthError, ForbiddenError, InvalidInputError, NotFoundError, OmnimemClient, OmnimemError, RemoteError, ScopeError,
} from "../src/index.js";
import { freePort, startServer, type LiveServer } from "./server.js";

let server: LiveServer;
let admin: OmnimemClient;

before(async () => {
  server = await startServer();
  admin = new OmnimemClient({ url: server.url, apiKey: server.keys.admin });
});

after(async () => {
  await server?.stop();
});

test("adds, searches, gets and forgets", async () => {
  const added = await admin.add("Ann moved to Lisbon in March", { user_id: "ann", speaker: "ann" });
  assert.equal(added.accepted, true);
  assert.match(added.id ?? "", /^[0-9a-f]{32}$/);
  const again = await admin.add("Ann moved to Lisbon in March", { user_id: "ann", speaker: "ann" });
  assert.equal(again.accepted, false);
  assert.equal(again.duplicate_of, added.id);

  const context = await admin.search("where does Ann live", { user_id: "ann", budget: 200 });
  assert.equal(context.hits.length, 1);
  assert.equal(context.hits[0]?.unit.id, added.id);
  assert.equal(context.hits[0]?.text, "ann: Ann moved to Lisbon in March");
  assert.ok(context.tokens > 0 && context.tokens <= 200);
  assert.equal(context.plan, null);
  assert.equal(context.elide_speakers, "auto");
  assert.equal(context.stamp_gap, 30);
  const planned = await admin.search("where does Ann live", { user_id: "ann", budget: 200, planner: "offline" });
  assert.equal(planned.plan?.planner, "offline");
  assert.equal(planned.plan?.rounds[0]?.queries[0], "where does Ann live");
  assert.equal(planned.hits[0]?.unit.id, added.id);

  const unit = await admin.get(added.id ?? "", { user_id: "ann" });
  assert.equal(unit.summary, "Ann moved to Lisbon in March");
  assert.equal(unit.user_id, "ann");

  assert.deepEqual((await admin.previewForget({ user_id: "ann" })).map((u) => u.id), [added.id]);
  assert.equal(await admin.forget({ user_id: "ann" }), 1);
  assert.equal((await admin.search("Lisbon", { user_id: "ann" })).hits.length, 0);
  await assert.rejects(admin.get(added.id ?? ""), NotFoundError);
});

test("adds a dialogue, lists, updates and deletes", async () => {
  const results = await admin.addDialogue([
    { speaker: "bo", text: "I started learning the cello.", time: "2024-05-01T10:00:00Z" },
    { speaker: "cy", text: "How are the lessons going?", time: "2024-05-01T10:01:00Z" },
  ], { user_id: "bo", session_id: "s1" });
  assert.deepEqual(results.map((r) => r.accepted), [true, true]);
  const page = await admin.units({ user_id: "bo", limit: 10 });
  assert.equal(page.total, 2);
  assert.deepEqual(page.units.map((u) => u.speaker), ["bo", "cy"]);
  const first = results[0]?.id ?? "";
  const updated = await admin.update(first, { text: "I started learning the viola.", user_id: "bo" });
  assert.equal(updated.accepted, true);
  const hit = (await admin.search("viola", { user_id: "bo" })).hits[0];
  assert.equal(hit?.unit.id, updated.id);
  const history = await admin.history(first, { user_id: "bo" });
  assert.ok(history.length >= 2);
  await admin.delete(updated.id ?? "", { user_id: "bo", chain: true });
  assert.equal((await admin.units({ user_id: "bo" })).total, 1);
  assert.equal((await admin.health()).status, "ok");
});

test("a wrong key is an AuthError", async () => {
  const stranger = new OmnimemClient({ url: server.url, apiKey: "omk_nope_notakey" });
  await assert.rejects(stranger.search("anything"), (error: unknown) => {
    assert.ok(error instanceof AuthError && error instanceof OmnimemError);
    assert.equal(error.code, "AuthError");
    assert.equal(error.status, 401);
    assert.match(error.message, /key/i);
    return true;
  });
  await assert.rejects(new OmnimemClient({ url: server.url }).stats(), AuthError);  // no key at all
});

test("errors are typed by the server's codes", async () => {
  const ann = new OmnimemClient({ url: server.url, apiKey: server.keys.ann });
  await assert.rejects(ann.search("x", { user_id: "bob" }), (error: unknown) => {
    assert.ok(error instanceof ScopeError && error instanceof ForbiddenError);
    assert.equal(error.status, 403);
    return true;
  });
  await assert.rejects(ann.forget({ user_id: "ann" }), (error: unknown) =>
    error instanceof ForbiddenError && !(error instanceof ScopeError) && error.code === "ForbiddenError");
  await assert.rejects(admin.add("   ", { user_id: "ann" }), InvalidInputError);
  await assert.rejects(admin.get("0".repeat(32)), (error: unknown) =>
    error instanceof NotFoundError && error.status === 404);
});

test("an unreachable server is a RemoteError", async () => {
  const nobody = new OmnimemClient({ url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 5_000 });
  await assert.rejects(nobody.health(), (error: unknown) => error instanceof RemoteError && error.status === 0);
  assert.throws(() => new OmnimemClient({ url: "ftp://example" }), OmnimemError);
});

test("the quickstart of docs/typescript.md runs as printed", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["dist/examples/quickstart.js"], {
    env: { ...process.env, OMNIMEM_URL: server.url, OMNIMEM_API_KEY: server.keys.admin },
  });
  const lines = stdout.trim().split("\n");
  assert.match(lines[0] ?? "", /^1 \d\.\d\d ann: Ann moved to Lisbon in March$/);
  assert.match(lines[1] ?? "", /^forgot 1 unit\(s\); the first was [0-9a-f]{32}$/);
  assert.match(lines[2] ?? "", /^AuthError \(401\): /);
});
