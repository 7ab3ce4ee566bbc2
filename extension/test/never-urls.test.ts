// The never-list of browser tools (DESIGN §8.3): one line per URL, with whether it is refused.
// Each case is judged the way Chrome's URL parser reads it (case, stray whitespace, tabs and
// newlines inside the scheme), so a disguised scheme is still caught.
import { describe, expect, it } from "vitest";
import { NEVER_SCHEMES, neverReason } from "../src/background/never-urls";

const CASES: [url: string, refused: boolean][] = [
  ["https://example.com/", false],
  ["http://127.0.0.1:8080/form.html", false],
  ["about:blank", false],
  ["ABOUT:blank", false],
  // only the exact about:blank page: any other spelling is refused (fail closed)
  ["about:BLANK", true],
  ["chrome://settings", true],
  ["chrome://extensions/?id=x", true],
  ["CHROME://settings", true],
  ["chrome-extension://nahlngkebpicfgggkehbcdnlkfhhejod/popup/popup.html", true],
  ["chrome-untrusted://terminal/", true],
  ["devtools://devtools/bundled/inspector.html", true],
  ["edge://settings", true],
  ["brave://settings", true],
  ["file:///etc/passwd", true],
  ["FILE:///etc/passwd", true],
  ["view-source:https://example.com/", true],
  ["javascript:alert(1)", true],
  ["JaVaScRiPt:alert(1)", true],
  [" javascript:alert(1)", true],
  ["\tjava\nscript:alert(1)", true],
  ["java\tscript:alert(1)", true],
  ["\u0000javascript:alert(1)", true],
  ["data:text/html,<b>x</b>", true],
  ["blob:https://example.com/0b7c-11", true],
  ["about:settings", true],
  ["about:blank#x", true],
  ["about:srcdoc", true],
  ["filesystem:https://example.com/temporary/x", true],
  ["https://chromewebstore.google.com/detail/abc", true],
  ["https://ChromeWebStore.Google.com/", true],
  ["https://chromewebstore.google.com./category/extensions", true],
  ["http://chromewebstore.google.com/", true],
  ["https://chrome.google.com/webstore/detail/x", true],
  ["https://chrome.google.com/WEBSTORE", true],
  ["https://chrome.google.com/", false],
  ["https://chromewebstore.google.com.example.com/", false],
  ["https://example.com/chrome://settings", false],
  ["ftp://example.com/", true],
  ["mailto:a@example.com", true],
  ["not a url", true],
  ["/relative/path", true],
  ["", true],
];

describe("never-URLs", () => {
  it.each(CASES)("%j → refused %s", (url, refused) => {
    const why = neverReason(url);
    if (refused) expect(why, url).toMatch(/\S/);
    else expect(why, url).toBeNull();
  });

  it("covers every listed scheme, and says which one", () => {
    for (const s of NEVER_SCHEMES) {
      const url = s === "about" ? "about:config" : `${s}://x/y`;
      expect(neverReason(url), url).toContain(`${s}:`);
    }
  });
});
