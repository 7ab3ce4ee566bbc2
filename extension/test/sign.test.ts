// Signing against the shared vectors (tests/vectors/signing.json, made with Python's hmac and
// checked by src/bridge/sign.rs too): the extension and the bridge compute the same MACs.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { answerMac, eventMac, importKey, requestMac, same, sha256Hex, signRequest } from "../src/background/sign";
import { SIGNING } from "../src/shared/gen/bridge";

interface Vectors {
  key: string;
  requests: { method: string; path: string; host: string; nonce: string; timeMs: number; body: string; bodyDigest: string; signature: string }[];
  answers: { nonce: string; status: number; body: string; signature: string }[];
  events: { nonce: string; seq: number; data: string; signature: string }[];
  streamAnswer: { nonce: string; status: number; signature: string };
}

const v = JSON.parse(readFileSync(fileURLToPath(new URL("../../tests/vectors/signing.json", import.meta.url)), "utf8")) as Vectors;

describe("shared signing vectors", () => {
  it("requests", async () => {
    const key = await importKey(v.key);
    for (const r of v.requests) {
      expect(await sha256Hex(r.body)).toBe(r.bodyDigest);
      expect(await requestMac(key, { ...r, bodyDigest: r.bodyDigest })).toBe(r.signature);
    }
  });
  it("answers, events and the stream header", async () => {
    const key = await importKey(v.key);
    for (const a of v.answers) expect(await answerMac(key, a.nonce, a.status, await sha256Hex(a.body))).toBe(a.signature);
    for (const e of v.events) expect(await eventMac(key, e.nonce, e.seq, e.data)).toBe(e.signature);
    expect(await answerMac(key, v.streamAnswer.nonce, v.streamAnswer.status, SIGNING.streamBody)).toBe(v.streamAnswer.signature);
  });
});

describe("signRequest", () => {
  it("signs what fetch sends — path with query, host with port — with a fresh nonce each time", async () => {
    const key = await importKey(v.key);
    const url = new URL("http://127.0.0.1:18080/calls/c%2F1?waitMs=20000");
    const a = await signRequest(key, "GET", url, "", 1763900000123);
    const b = await signRequest(key, "GET", url, "", 1763900000123);
    expect(a.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(a.nonce).not.toBe(b.nonce);
    const want = await requestMac(key, { method: "GET", path: "/calls/c%2F1?waitMs=20000", host: "127.0.0.1:18080", nonce: a.nonce, timeMs: 1763900000123, bodyDigest: await sha256Hex("") });
    expect(a.headers[SIGNING.headerSignature]).toBe(want);
    expect(a.headers[SIGNING.headerTime]).toBe("1763900000123");
    // nothing in the headers is, or contains, the key
    expect(JSON.stringify(a.headers)).not.toContain(v.key);
  });
  it("same() compares whole strings", () => {
    expect(same("abcd", "abcd")).toBe(true);
    expect(same("abcd", "abce")).toBe(false);
    expect(same("abcd", "abc")).toBe(false);
  });
});
