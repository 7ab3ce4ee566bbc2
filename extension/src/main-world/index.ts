/**
 * The page-world observer (runs in the site's MAIN world at document_start). It watches the
 * site's own `fetch`, `XMLHttpRequest` and `EventSource` traffic to the reply endpoints a decoder
 * exists for, reads a *copy* of each stream, and tells the content script when a reply starts and
 * ends, with the decoded answer text.
 *
 * Guarantee: it never alters traffic — requests go out unchanged, the page gets the original
 * response object, and any failure in here is swallowed so the site keeps working. It holds no
 * secret and cannot reach the bridge: it only posts to its own window.
 */

import { createDecoder, decoderForRequest, type StreamDecoder } from "../shared/decoders";
import { PAGE_MESSAGE_TAG, type PageMessage } from "../shared/protocol";

(() => {
  const w = window as Window & { __groundLinkHooked?: boolean };
  if (w.__groundLinkHooked) return;
  w.__groundLinkHooked = true;
  const host = location.host;
  let seq = 0;

  const post = (m: PageMessage): void => {
    try {
      window.postMessage(m, location.origin);
    } catch {
      // the page must never see our failure
    }
  };

  const start = (decoderId: string): string => {
    const streamId = `${Date.now().toString(36)}-${(seq++).toString(36)}`;
    post({ tag: PAGE_MESSAGE_TAG, type: "streamStart", streamId, decoder: decoderId, at: performance.now() });
    return streamId;
  };
  const end = (streamId: string, d: StreamDecoder): void => {
    post({ tag: PAGE_MESSAGE_TAG, type: "streamEnd", streamId, decoder: d.id, text: d.text(), at: performance.now() });
  };

  const resolveUrl = (input: unknown): URL | null => {
    try {
      if (typeof input === "string") return new URL(input, location.href);
      if (input instanceof URL) return input;
      if (input instanceof Request) return new URL(input.url);
    } catch {
      return null;
    }
    return null;
  };

  // ---- fetch: observe a clone of the body; the page gets the untouched original ----
  const origFetch = window.fetch;
  const hookedFetch = function (this: unknown, ...args: Parameters<typeof fetch>): Promise<Response> {
    const result = origFetch.apply(this, args);
    try {
      const url = resolveUrl(args[0]);
      const decoderId = url ? decoderForRequest(host, url) : null;
      if (decoderId) {
        void result.then(
          (resp) => {
            try {
              if (!resp.body) return;
              const copy = resp.clone();
              const streamId = start(decoderId);
              void readStream(copy, createDecoder(decoderId)).then((d) => end(streamId, d));
            } catch {
              // observation is best-effort
            }
          },
          () => undefined,
        );
      }
    } catch {
      // observation is best-effort
    }
    return result;
  };
  try {
    Object.defineProperty(hookedFetch, "name", { value: "fetch" });
    window.fetch = hookedFetch as typeof fetch;
  } catch {
    // a page that froze fetch keeps its own
  }

  async function readStream(resp: Response, d: StreamDecoder): Promise<StreamDecoder> {
    const reader = (resp.body as ReadableStream<Uint8Array>).getReader();
    const td = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        d.push(td.decode(value, { stream: true }));
      }
      d.push(td.decode());
    } catch {
      // an aborted stream ends where it stopped
    }
    d.finish();
    return d;
  }

  // ---- XMLHttpRequest: listen to progress on the page's own object ----
  const origOpen = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (this: XMLHttpRequest, ...args: unknown[]) {
    try {
      const url = resolveUrl(args[1]);
      const decoderId = url ? decoderForRequest(host, url) : null;
      if (decoderId) watchXhr(this, decoderId);
    } catch {
      // best-effort
    }
    return (origOpen as (...a: unknown[]) => void).apply(this, args);
  } as typeof XMLHttpRequest.prototype.open;

  function watchXhr(xhr: XMLHttpRequest, decoderId: "deepseek" | "chatgpt"): void {
    const d = createDecoder(decoderId);
    let seen = 0;
    let streamId: string | null = null;
    const pull = (): void => {
      try {
        if (xhr.responseType !== "" && xhr.responseType !== "text") return;
        const t = xhr.responseText;
        if (t.length > seen) {
          if (streamId === null) streamId = start(decoderId);
          d.push(t.slice(seen));
          seen = t.length;
        }
      } catch {
        // best-effort
      }
    };
    xhr.addEventListener("progress", pull);
    xhr.addEventListener("loadend", () => {
      pull();
      d.finish();
      if (streamId !== null) end(streamId, d);
    });
  }

  // ---- EventSource: add our own listener to the page's instance ----
  const OrigES = window.EventSource;
  if (typeof OrigES === "function") {
    const Hooked = function (this: EventSource, url: string | URL, init?: EventSourceInit): EventSource {
      const es = new OrigES(url, init);
      try {
        const u = resolveUrl(typeof url === "string" ? url : url.href);
        const decoderId = u ? decoderForRequest(host, u) : null;
        if (decoderId) {
          const d = createDecoder(decoderId);
          const streamId = start(decoderId);
          let ended = false;
          const feed = (ev: MessageEvent): void => {
            if (typeof ev.data === "string") d.push(`event: ${ev.type}\ndata: ${ev.data.split("\n").join("\ndata: ")}\n\n`);
          };
          es.addEventListener("message", feed);
          es.addEventListener("close", feed as EventListener);
          es.addEventListener("error", () => {
            if (ended) return;
            ended = true;
            d.finish();
            end(streamId, d);
          });
        }
      } catch {
        // best-effort
      }
      return es;
    } as unknown as typeof EventSource;
    Hooked.prototype = OrigES.prototype;
    Object.assign(Hooked, { CONNECTING: 0, OPEN: 1, CLOSED: 2 });
    try {
      window.EventSource = Hooked;
    } catch {
      // keep the page's own
    }
  }
})();
