/**
 * MAIN-world entry for page tools, at document_start on sites where WebMCP support is on:
 * installs the polyfill only when the browser has no native `document.modelContext`, and opens
 * the private channel to the isolated content script.
 */

import { installPolyfill } from "./webmcp-polyfill";
import { handOverPort, serveChannel } from "./webmcp-channel";

(() => {
  const ctx = installPolyfill(window);
  if (!ctx) return; // native API: the content script uses it directly
  const { port1, port2 } = new MessageChannel();
  serveChannel(ctx, port1);
  handOverPort(document, port2);
})();
