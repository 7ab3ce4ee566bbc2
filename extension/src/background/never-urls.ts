/**
 * URLs browser tools never navigate to and tabs they never act on (DESIGN §8.3), whatever the
 * bridge approved: the browser's own pages, other extensions, local files, script and data
 * URLs, and the Web Store (an extension that can drive the store can install extensions).
 *
 * Pure: a string in, a reason out. The URL is judged the way the browser would read it — the
 * WHATWG parser drops leading/trailing C0 controls and spaces and removes tabs and newlines
 * anywhere, and scheme and host are case-insensitive — so `" JaVa\tScript:…"` is still
 * `javascript:`. Anything that does not parse as an absolute URL is refused too.
 */

/** Schemes refused outright (without the colon). */
export const NEVER_SCHEMES = [
  "chrome",
  "chrome-extension",
  "chrome-untrusted",
  "devtools",
  "edge",
  "brave",
  "file",
  "view-source",
  "javascript",
  "data",
  "blob",
  "about",
  "filesystem",
] as const;

/** Hosts and path prefixes of the Chrome Web Store, old and new. */
const WEB_STORE: { host: string; path: string }[] = [
  { host: "chromewebstore.google.com", path: "/" },
  { host: "chrome.google.com", path: "/webstore" },
];

/**
 * Why `raw` is off limits, or `null` when browser tools may go there. `about:blank` is the one
 * `about:` page allowed (a new empty tab).
 */
export function neverReason(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `${JSON.stringify(clip(raw))} is not an absolute URL; give one such as https://example.com/`;
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (scheme === "about" && url.href === "about:blank") return null;
  if ((NEVER_SCHEMES as readonly string[]).includes(scheme)) {
    return `browser tools never open or act on ${scheme}: URLs (${clip(url.href)}); use an http(s) page instead`;
  }
  if (scheme !== "http" && scheme !== "https") {
    return `browser tools work on http(s) pages only, not on ${scheme}: URLs (${clip(url.href)})`;
  }
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  const path = url.pathname.toLowerCase();
  for (const s of WEB_STORE) {
    if (host === s.host && path.startsWith(s.path)) {
      return `browser tools never act on the Chrome Web Store (${clip(url.href)})`;
    }
  }
  return null;
}

function clip(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
