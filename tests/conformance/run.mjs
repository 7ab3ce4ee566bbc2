// The official MCP conformance suite (@modelcontextprotocol/conformance) against the real
// `ground-link serve`: the scenarios that fit a product server which runs the person's tools —
// initialize, ping, tools/list and DNS-rebinding protection.
//
// The suite sends no Authorization header, so a small proxy in front adds the bridge's token and
// maps its own Host to the bridge's (any other Host passes unchanged, so the bridge's Host check
// is what the suite meets). One check is expected to fail, on purpose: the suite wants a request
// carrying `Origin: http://localhost` accepted, and ground-link refuses every web page origin on
// /mcp — a page on localhost is still a web page (docs/security.md). This script asserts that
// exact outcome (a 403 for that check, every other check passing), so both a regression and a
// change of the suite show up.
//
// Usage: node run.mjs <path to the ground-link binary>

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, mkdirSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bin = process.argv[2];
if (!bin) {
  console.error("usage: node run.mjs <ground-link binary>");
  process.exit(2);
}
const node22 = join(here, "node_modules", ".bin", "node");
const suite = join(here, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];
/** Checks that must fail, and how. */
const EXPECTED_FAILURES = {
  "localhost-host-valid-accepted": (c) => c.details?.statusCode === 403 && typeof c.details?.originHeader === "string",
};

let serve = null;
const base = mkdtempSync(join(tmpdir(), "gl-conformance-"));
const env = { ...process.env, XDG_CONFIG_HOME: join(base, "config"), XDG_DATA_HOME: join(base, "data"), XDG_RUNTIME_DIR: join(base, "run") };
mkdirSync(join(base, "sandbox"));
mkdirSync(join(base, "run"), { mode: 0o700 });
const token = spawnSync(bin, ["token"], { env, encoding: "utf8" }).stdout.trim().split("\n").pop() ?? "";
if (!/^[0-9a-f]{32,}$/.test(token)) fail(`ground-link token printed no token: ${JSON.stringify(token)}`);

serve = spawn(bin, ["serve", "--dir", join(base, "sandbox"), "--port", "0", "--approval", "deny"], { env, stdio: ["ignore", "pipe", "pipe"] });
let log = "";
const bridgePort = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`serve printed no address within 15 s:\n${log}`)), 15_000);
  const look = (d) => {
    log += d.toString();
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
    if (m && m[1] !== "0") {
      clearTimeout(timer);
      resolve(Number(m[1]));
    }
  };
  serve.stdout.on("data", look);
  serve.stderr.on("data", look);
  serve.on("exit", (code) => reject(new Error(`serve exited (${code}):\n${log}`)));
}).catch((e) => fail(String(e)));

const proxy = http.createServer((req, res) => {
  const own = `:${proxy.address().port}`;
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const host = req.headers.host ?? "";
  if (host === `127.0.0.1${own}` || host === `localhost${own}`) headers.host = host.replace(own, `:${bridgePort}`);
  const up = http.request({ host: "127.0.0.1", port: bridgePort, method: req.method, path: req.url, headers }, (r) => {
    res.writeHead(r.statusCode ?? 502, r.headers);
    r.pipe(res);
  });
  up.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(up);
});
await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;

const problems = [];
let passed = 0;
for (const scenario of SCENARIOS) {
  const out = join(base, "out", scenario);
  const run = spawn(node22, [suite, "server", "--url", url, "--scenario", scenario, "-o", out], { stdio: ["ignore", "pipe", "pipe"] });
  let said = "";
  run.stdout.on("data", (d) => (said += d));
  run.stderr.on("data", (d) => (said += d));
  await new Promise((r) => run.on("exit", r));
  const dirs = readdirSync(out);
  if (dirs.length !== 1) {
    problems.push(`${scenario}: the suite wrote no results:\n${said}`);
    continue;
  }
  const checks = JSON.parse(readFileSync(join(out, dirs[0], "checks.json"), "utf8"));
  if (checks.length === 0) problems.push(`${scenario}: no checks ran`);
  for (const c of checks) {
    const expected = EXPECTED_FAILURES[c.id];
    if (expected) {
      if (c.status === "FAILURE" && expected(c)) passed++;
      else problems.push(`${scenario}/${c.id}: expected ground-link's deliberate refusal (403 for a web page Origin), got ${c.status}: ${JSON.stringify(c.details ?? c.errorMessage)}`);
    } else if (c.status === "SUCCESS") {
      passed++;
    } else {
      problems.push(`${scenario}/${c.id}: ${c.status}: ${c.errorMessage ?? JSON.stringify(c.details)}`);
    }
  }
}

proxy.close();
serve.kill("SIGTERM");
rmSync(base, { recursive: true, force: true });
if (problems.length) fail(problems.join("\n"));
console.log(`mcp-conformance: PASS — ${passed} checks in ${SCENARIOS.length} scenarios as expected (${SCENARIOS.join(", ")}); the localhost-Origin check refused on purpose`);
process.exit(0);

function fail(message) {
  console.error(`mcp-conformance: FAIL\n${message}`);
  try {
    serve?.kill("SIGTERM");
  } catch {
    // not started
  }
  process.exit(1);
}
