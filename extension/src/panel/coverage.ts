/**
 * Whether page tools run on a URL: the manifest's default sites (local development origins and
 * the chat sites), or a site the person enabled from the panel that Chrome still grants.
 */

import { originPattern } from "../background/page-tools";

export { originPattern as sitePatternOfOrigin };

/** A Chrome match pattern without a port (`http://127.0.0.1/*`) matches every port. */
export function matchesPattern(pattern: string, url: string): boolean {
  const m = /^(https?|\*):\/\/([^/]+)(\/.*)$/.exec(pattern);
  if (!m) return false;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const [, scheme, host, path] = m;
  if (scheme !== "*" && `${scheme}:` !== u.protocol) return false;
  const hostOk = host === "*" || host === u.hostname || (host?.startsWith("*.") === true && (u.hostname === host.slice(2) || u.hostname.endsWith(host.slice(1))));
  if (!hostOk) return false;
  const re = new RegExp(`^${(path ?? "/*").split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  return re.test(u.pathname + u.search);
}

export function sitePattern(url: string): string | null {
  try {
    return originPattern(new URL(url).origin);
  } catch {
    return null;
  }
}

export async function pageToolsCovered(url: string): Promise<boolean> {
  const defaults = (chrome.runtime.getManifest().content_scripts ?? []).filter((c) => c.js?.includes("webmcp.js")).flatMap((c) => c.matches ?? []);
  if (defaults.some((p) => matchesPattern(p, url))) return true;
  const pattern = sitePattern(url);
  if (!pattern) return false;
  const sites = (await chrome.storage.local.get("webmcpSites")).webmcpSites;
  return Array.isArray(sites) && sites.includes(pattern) && (await chrome.permissions.contains({ origins: [pattern] }));
}
