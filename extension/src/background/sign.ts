/**
 * Signed requests and answers (DESIGN §6), the extension's half of `src/bridge/sign.rs`: the
 * pairing key signs each request (HMAC-SHA256 over method, path and query, `Host:port`, a fresh
 * nonce, the time and the body's SHA-256) and checks the MAC on each answer, so the key itself
 * never leaves the worker and an answer from anything but the paired bridge is dropped. Both
 * sides are checked against `tests/vectors/signing.json`.
 */

import { SIGNING } from "../shared/gen/bridge";

const enc = new TextEncoder();

function hex(buf: ArrayBuffer): string {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function sha256Hex(body: string | Uint8Array): Promise<string> {
  const bytes = typeof body === "string" ? enc.encode(body) : body;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/** The pairing key as a non-extractable WebCrypto key: nothing in this worker can read it back. */
export async function importKey(token: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", enc.encode(token), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

async function mac(key: CryptoKey, parts: string[]): Promise<string> {
  return hex(await crypto.subtle.sign("HMAC", key, enc.encode(parts.join("\n"))));
}

export interface RequestParts {
  method: string;
  /** Path and query exactly as sent (`/calls/c1?waitMs=20000`). */
  path: string;
  /** `Host:port` as dialled (`127.0.0.1:18080`). */
  host: string;
  nonce: string;
  timeMs: number;
  bodyDigest: string;
}

export function requestMac(key: CryptoKey, r: RequestParts): Promise<string> {
  return mac(key, [SIGNING.labelRequest, r.method.toUpperCase(), r.path, r.host.toLowerCase(), r.nonce, String(r.timeMs), r.bodyDigest]);
}

export function answerMac(key: CryptoKey, nonce: string, status: number, bodyDigest: string): Promise<string> {
  return mac(key, [SIGNING.labelAnswer, nonce, String(status), bodyDigest]);
}

export function eventMac(key: CryptoKey, nonce: string, seq: number, data: string): Promise<string> {
  return mac(key, [SIGNING.labelEvent, nonce, String(seq), data]);
}

/** Equal without an early exit, so the time taken says nothing about where they differ. */
export function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}

export function freshNonce(): string {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return hex(b.buffer);
}

/** The headers of one signed request, and its nonce (the answer is checked against it). */
export async function signRequest(key: CryptoKey, method: string, url: URL, body: string, now = Date.now()): Promise<{ headers: Record<string, string>; nonce: string }> {
  const nonce = freshNonce();
  const signature = await requestMac(key, { method, path: url.pathname + url.search, host: url.host, nonce, timeMs: now, bodyDigest: await sha256Hex(body) });
  return { nonce, headers: { [SIGNING.headerNonce]: nonce, [SIGNING.headerTime]: String(now), [SIGNING.headerSignature]: signature } };
}
