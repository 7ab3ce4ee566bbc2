/**
 * A local site for the browser-tools e2e (DESIGN §8.3) on http://127.0.0.1 — one of the
 * extension's install-time host permissions, so no prompt is needed in a headless run: a sign-in
 * form with a text field, a password field that already holds a value, a hidden input and a
 * submit button, a link to a second page, a page that is slow to answer, and a record of what the
 * form posted. The form page also tries to plant refs of its own in its page world (they must
 * have no effect: the extension keeps refs in its isolated world).
 */

import { createServer, type Server } from "node:http";

export const PASSWORD_VALUE = "hunter2-do-not-leak";
export const HIDDEN_VALUE = "csrf-0b1c2d3e4f-hidden";

const FORM = `<!doctype html>
<html><head><meta charset="utf-8"><title>Sign in — fixture</title></head>
<body>
<h1>Sign in</h1>
<form action="/submit" method="post">
  <label for="q">Your name</label> <input id="q" name="q" type="text">
  <label for="pw">Password</label> <input id="pw" name="pw" type="password" value="${PASSWORD_VALUE}">
  <input type="hidden" name="csrf" value="${HIDDEN_VALUE}">
  <button type="submit">Send</button>
</form>
<p><a href="/next.html">Go to the next page</a></p>
<button id="trap" type="button" onclick="window.trapped = (window.trapped || 0) + 1">Trap</button>
<script>
  // the page tries to plant refs of its own where a careless extension would keep them
  window.trapped = 0;
  const trap = document.getElementById("trap");
  window.__groundLinkRefs = { map: new Map([["e1", trap], ["e2", trap], ["e3", trap]]) };
  document.body.dataset.ref = "e1";
</script>
</body></html>`;

const NEXT = `<!doctype html><html><head><meta charset="utf-8"><title>Next page</title></head>
<body><h1>The next page</h1><p><a href="/form.html">Back to the form</a></p></body></html>`;

/** `n` elements in a mix a real page has: headings, paragraphs, links, buttons, fields, list items. */
function bigPage(n: number): string {
  const kinds = [
    (i: number) => `<h2>Section ${i}</h2>`,
    (i: number) => `<p>Paragraph ${i} of the page, with a few words of text in it.</p>`,
    (i: number) => `<a href="/next.html?from=${i}">Link number ${i}</a>`,
    (i: number) => `<button type="button">Button ${i}</button>`,
    (i: number) => `<label>Field ${i} <input name="f${i}" type="text"></label>`,
    (i: number) => `<ul><li>Item ${i}</li></ul>`,
  ];
  const body = Array.from({ length: n }, (_, i) => kinds[i % kinds.length]?.(i) ?? "").join("\n");
  return `<!doctype html><html><head><meta charset="utf-8"><title>${n} elements</title></head><body>${body}</body></html>`;
}

export interface BrowserSite {
  origin: string;
  /** Bodies the form posted, in order (URL-encoded). */
  posts: string[];
  close(): Promise<void>;
}

export async function startBrowserSite(): Promise<BrowserSite> {
  const posts: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const html = (status: number, body: string) => {
      res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      res.end(body);
    };
    if (req.method === "POST" && path === "/submit") {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString("utf8")));
      req.on("end", () => {
        posts.push(body);
        html(200, `<!doctype html><html><head><title>Thanks</title></head><body><h1>Thanks</h1></body></html>`);
      });
      return;
    }
    if (path === "/form.html") return html(200, FORM);
    // a page of many elements, for the snapshot benchmark (`?n=2000`)
    if (path === "/big.html") {
      const n = Math.min(Number(new URL(req.url ?? "/", "http://x").searchParams.get("n") ?? 2000) || 2000, 20_000);
      return html(200, bigPage(n));
    }
    if (path === "/next.html") return html(200, NEXT);
    // fields named like the form's own methods shadow them on the element (named access)
    if (path === "/named.html") {
      return html(200, `<!doctype html><title>Named fields</title><form action="/submit" method="post"><input name="requestSubmit" value="a"><input name="checkValidity" value="b"><input name="elements" value="c"><input name="click" value="d"><button>Go</button></form>`);
    }
    // answers after 8 s: a navigation that is still loading when its tab is closed
    if (path === "/slow.html") {
      const t = setTimeout(() => html(200, "<!doctype html><title>Slow</title><p>finally"), 8000);
      res.on("close", () => clearTimeout(t));
      return;
    }
    html(404, "<!doctype html><title>Not found</title>");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    posts,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
