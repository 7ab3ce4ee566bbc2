// @vitest-environment jsdom
// Degrade, don't die (issue 14), per site: on every fixture the results go into that site's
// composer and out through its send button — and when the button is gone (a site changed it),
// through Enter. Each fixture's page is loaded into this test's document.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ADAPTERS, GENERIC, type SiteAdapter, type SiteId } from "../src/shared/adapters";
import { findComposer, findSendButton } from "../src/content/dom";
import { composerText, insertIntoComposer, send } from "../src/content/insert";

const RESULT = '<tool_result name="read_file" status="success">\nhello\n</tool_result>';
// (under the jsdom environment import.meta.url is not a file URL: resolve from the package)
const DIR = join(process.cwd(), "test", "fixtures");
const FIXTURES = readdirSync(DIR).filter((f) => f.endsWith(".html")).map((f) => f.slice(0, -5));

function loadInto(name: string): { adapter: SiteAdapter; sendVia: string } {
  const html = readFileSync(join(DIR, `${name}.html`), "utf8");
  const meta = JSON.parse(/id="fixture-meta">(.*?)<\/script>/s.exec(html)?.[1] ?? "{}") as { adapter: string; sendVia?: string };
  document.body.innerHTML = /<body>([\s\S]*)<\/body>/.exec(html)?.[1] ?? "";
  return { adapter: meta.adapter === "generic" ? GENERIC : ADAPTERS[meta.adapter as SiteId], sendVia: meta.sendVia ?? "button" };
}

/** The site's app: a send empties the composer (as the real ones do). */
function clearOn(composer: HTMLElement): () => void {
  return () => {
    if (composer instanceof HTMLTextAreaElement) composer.value = "";
    else composer.replaceChildren();
  };
}

describe.each(FIXTURES)("%s: results go out", (name) => {
  it("through the send button (or Enter where that is how the site sends)", async () => {
    const { adapter, sendVia } = loadInto(name);
    const composer = findComposer(document, adapter);
    if (!composer) throw new Error("no composer");
    const ins = insertIntoComposer(composer, RESULT);
    expect(ins.ok).toBe(true);
    expect(composerText(composer)).toContain("hello");
    const button = findSendButton(document, adapter);
    button?.removeAttribute("disabled");
    button?.removeAttribute("aria-disabled");
    button?.classList.remove("ds-button--disabled", "disabled");
    button?.addEventListener("click", clearOn(composer));
    // jsdom has no form submission: the page's own click handler above stands for it
    if (button instanceof HTMLButtonElement) button.type = "button";
    composer.addEventListener("keydown", (e) => {
      if (e.key === "Enter") clearOn(composer)();
    });
    expect(await send(document, adapter, composer, 1500)).toEqual({ ok: true, via: sendVia });
  });

  it("through Enter when the send button is gone", async () => {
    const { adapter } = loadInto(name);
    for (const sel of [...adapter.sendButton, ...GENERIC.sendButton]) for (const el of Array.from(document.querySelectorAll(sel))) el.remove();
    expect(findSendButton(document, adapter)).toBeNull();
    const composer = findComposer(document, adapter);
    if (!composer) throw new Error("no composer");
    expect(insertIntoComposer(composer, RESULT).ok).toBe(true);
    let enters = 0;
    composer.addEventListener("keydown", (e) => {
      if (e.key !== "Enter") return;
      enters++;
      clearOn(composer)();
    });
    expect(await send(document, adapter, composer, 1500)).toEqual({ ok: true, via: "enter" });
    expect(enters).toBe(1);
  });
});
