/**
 * A live `omnimem serve` for the tests: a fresh store (fake embedder: no model download) with API keys,
 * served on a free loopback port by the repository's own Python (`$OMNIMEM_PYTHON`, default `python3`,
 * with the repository root on `PYTHONPATH`), stopped after the tests.
 */

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export interface LiveServer {
  url: string;
  keys: { admin: string; ann: string };
  stop(): Promise<void>;
}

const ROOT = resolve(process.cwd(), "..", "..");  // npm runs the tests in clients/typescript
const PYTHON = process.env.OMNIMEM_PYTHON ?? "python3";
const ENV = { ...process.env, PYTHONPATH: ROOT };

const SETUP = `
import json, sys
from omnimem import Memory
from omnimem.store.apikeys import create_key
with Memory(sys.argv[1], embedder="fake") as memory:
    admin, _ = create_key(memory.store, name="ts-admin", role="admin")
    ann, _ = create_key(memory.store, name="ts-ann", role="write", user_id="ann")
print(json.dumps({"admin": admin, "ann": ann}))
`;

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

export async function startServer(): Promise<LiveServer> {
  const folder = mkdtempSync(join(tmpdir(), "omnimem-ts-"));
  const store = join(folder, "store");
  const keys = JSON.parse(execFileSync(PYTHON, ["-c", SETUP, store], { env: ENV, encoding: "utf8" })) as LiveServer["keys"];
  const port = await freePort();
  const child: ChildProcess = spawn(PYTHON, ["-m", "omnimem.cli", "serve", "--store", store, "--port", String(port),
                                             "--rate-limit", "0"], { env: ENV, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk) => (output += String(chunk)));
  child.stderr?.on("data", (chunk) => (output += String(chunk)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`omnimem serve exited with ${child.exitCode}:\n${output}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`omnimem serve did not answer /healthz within 120 s:\n${output}`);
    }
    await new Promise((wait) => setTimeout(wait, 200));
  }
  return {
    url,
    keys,
    async stop() {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
