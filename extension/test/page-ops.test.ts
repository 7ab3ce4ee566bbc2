// @vitest-environment jsdom
// The in-page half of browser tools (DESIGN §8.3), run against jsdom exactly as Chrome injects
// it: the outline and its refs, names from labels and ARIA, values never shown for passwords and
// hidden inputs, stale refs, typing the way a person does, submitting, the DOM text and the caps.
import { beforeEach, describe, expect, it } from "vitest";
import { pageOp, UNSAFE_TEXT, type PageResult } from "../src/background/page-ops";

const FORM = `
  <header><nav aria-label="Top"><a href="/home">Home</a></nav></header>
  <main>
    <h1>Sign in</h1>
    <p>Welcome back.</p>
    <form id="f" action="/submit" method="post">
      <label for="email">Email</label>
      <input id="email" name="email" type="email" value="ann@example.com">
      <label>Password <input id="pw" name="pw" type="password" value="hunter2-secret"></label>
      <input type="hidden" name="csrf" value="tok-0123456789">
      <textarea name="note" aria-label="Note">first note</textarea>
      <select name="plan" aria-label="Plan"><option value="a">Basic</option><option value="b" selected>Pro</option></select>
      <input type="checkbox" id="keep" checked><label for="keep">Keep me signed in</label>
      <button type="submit">Sign in</button>
    </form>
    <div role="button" aria-label="Help">?</div>
    <div contenteditable="true" aria-label="Editor">draft</div>
    <div hidden><a href="/secret">Hidden link</a></div>
    <div style="display:none"><button>Invisible</button></div>
    <a href="https://example.com/next">Next <img alt="arrow" src="a.png"></a>
  </main>`;

function ok(r: PageResult): string {
  if (!r.ok) throw new Error(`expected ok, got: ${r.error}`);
  return r.text;
}

function err(r: PageResult): string {
  if (r.ok) throw new Error(`expected an error, got: ${r.text}`);
  return r.error;
}

const refOf = (outline: string, pattern: RegExp): string => {
  const line = outline.split("\n").find((l) => pattern.test(l));
  const m = line ? /\[ref=(e\d+)\]/.exec(line) : null;
  if (!m?.[1]) throw new Error(`no ref on a line matching ${pattern} in:\n${outline}`);
  return m[1];
};

beforeEach(() => {
  delete (globalThis as { __groundLinkRefs?: unknown }).__groundLinkRefs;
  document.title = "Sign in — Example";
  document.body.innerHTML = FORM;
});

describe("snapshot_page", () => {
  it("lists headings, links, fields and buttons with refs, and names from labels and ARIA", () => {
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    expect(out.split("\n")[0]).toBe('page "Sign in — Example"');
    expect(out).toMatch(/- heading "Sign in" \[level=1\]/);
    expect(out).toMatch(/navigation "" ?|navigation/);
    expect(out).toMatch(/link "Home" \[ref=e\d+\] href="http:\/\/localhost(:\d+)?\/home"/);
    expect(out).toMatch(/textbox "Email" \[ref=e\d+\] type=email value="ann@example.com"/);
    expect(out).toMatch(/textbox "Password" \[ref=e\d+\] type=password value=\(hidden\)/);
    expect(out).toMatch(/textbox "Note" \[ref=e\d+\] value="first note"/);
    expect(out).toMatch(/combobox "Plan" \[ref=e\d+\] value="Pro"/);
    expect(out).toMatch(/checkbox "Keep me signed in" \[ref=e\d+\] \[checked\]/);
    expect(out).toMatch(/button "Sign in" \[ref=e\d+\]/);
    expect(out).toMatch(/button "Help" \[ref=e\d+\]/);
    expect(out).toMatch(/textbox "Editor" \[ref=e\d+\]/);
    expect(out).toMatch(/link "Next arrow" \[ref=e\d+\]/);
    expect(out).toMatch(/text "Welcome back."/);
    // a field's label is its name, not a text line of its own as well
    expect(out).not.toMatch(/text "Email"/);
    // refs are e1, e2, … in page order
    const refs = [...out.matchAll(/\[ref=(e\d+)\]/g)].map((m) => m[1]);
    expect(refs).toEqual(refs.map((_, i) => `e${i + 1}`));
  });

  it("never returns a password's value or a hidden input at all; hidden elements are left out", () => {
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    expect(out).not.toContain("hunter2-secret");
    expect(out).not.toContain("tok-0123456789");
    expect(out).not.toContain("csrf");
    expect(out).not.toContain("Hidden link");
    expect(out).not.toContain("Invisible");
    // typed after load: still never shown
    (document.getElementById("pw") as HTMLInputElement).value = "typed-later-secret";
    expect(ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }))).not.toContain("typed-later-secret");
  });

  it("keeps refs in the isolated world's own global, never in the DOM", () => {
    const before = document.documentElement.outerHTML;
    ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    // the page is exactly as it was: no attribute, no marker a page script could read or forge
    expect(document.documentElement.outerHTML).toBe(before);
    const store = (globalThis as { __groundLinkRefs?: { map: Map<string, Element> } }).__groundLinkRefs;
    expect(store?.map.get("e1")).toBeInstanceOf(Element);
  });

  it("joins text split by inline elements into one line, and keeps blocks apart", () => {
    document.body.innerHTML = `<p>Please enter <b>your</b> <span>details</span>.</p><p>Second paragraph</p><table><tr><td>Book</td></tr></table>`;
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    expect(out).toContain('- text "Please enter your details."');
    expect(out).toContain('- text "Second paragraph"');
    // a cell's text is shown once, under it
    expect(out).toMatch(/- cell\n\s+- text "Book"/);
  });

  it("strips control and bidi characters from page text", () => {
    document.body.innerHTML = `<h2>safe\u202Etxt.exe\u0007</h2><button>ok\u2066x\u2069</button>`;
    document.title = "t\u200Fitle";
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    expect(out).toContain('heading "safetxt.exe"');
    expect(out).toContain('button "okx"');
    expect(out).toContain('page "title"');
    expect(out).not.toMatch(/[\u0000-\u0008\u202A-\u202E\u2066-\u2069\u200F]/);
  });

  it("strips the same characters as the worker does for tab titles (one class, spelled twice)", () => {
    expect(pageOp.toString()).toContain(`/${UNSAFE_TEXT.source}/g`);
  });

  it("stops at the cap and says so; refs after the cut are not given", () => {
    document.body.innerHTML = Array.from({ length: 400 }, (_, i) => `<button>button number ${i} ${"x".repeat(190)}</button>`).join("");
    const r = pageOp({ op: "snapshot", maxBytes: 64 * 1024 });
    const out = ok(r);
    expect(new TextEncoder().encode(out).length).toBeLessThanOrEqual(64 * 1024);
    expect(out).toMatch(/the outline was cut at 64 KiB; \d+ refs were given before the cut/);
    expect(r.ok && r.cut).toBe(true);
    const n = r.ok ? (r.refs ?? 0) : 0;
    expect(n).toBeGreaterThan(100);
    expect(n).toBeLessThan(400);
    expect(err(pageOp({ op: "describe", target: { ref: `e${n + 1}` } }))).toMatch(/take a new snapshot_page/);
  });
});

describe("acting on refs and selectors", () => {
  it("describes what a ref or selector points at now", () => {
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    const pw = refOf(out, /textbox "Password"/);
    const d = pageOp({ op: "describe", target: { ref: pw } });
    expect(d.ok && d.element).toEqual({ tag: "input", role: "textbox", name: "Password", inputType: "password", inForm: true });
    const help = pageOp({ op: "describe", target: { selector: "div[role=button]" } });
    expect(help.ok && help.element).toEqual({ tag: "div", role: "button", name: "Help", inForm: false });
  });

  it("a ref from before the page changed, a missing element and a bad selector all say to take a new snapshot", () => {
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    const email = refOf(out, /textbox "Email"/);
    document.body.innerHTML = FORM; // the same markup, new elements
    expect(err(pageOp({ op: "click", target: { ref: email } }))).toMatch(/ref e\d+ is not on this page any more.*take a new snapshot_page/);
    expect(err(pageOp({ op: "describe", target: { ref: "e999" } }))).toMatch(/take a new snapshot_page/);
    expect(err(pageOp({ op: "describe", target: { selector: "#nope" } }))).toMatch(/no element on this page matches the selector "#nope"; take a new snapshot_page/);
    expect(err(pageOp({ op: "describe", target: { selector: "a[" } }))).toMatch(/not a valid CSS selector; take a new snapshot_page/);
    // a new snapshot gives working refs again
    const again = refOf(ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 })), /textbox "Email"/);
    expect(pageOp({ op: "describe", target: { ref: again } }).ok).toBe(true);
  });

  it("types like a person: native setter, input and change events; a password is not echoed", () => {
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    const email = document.getElementById("email") as HTMLInputElement;
    const seen: string[] = [];
    email.addEventListener("input", (e) => seen.push(`input:${(e.target as HTMLInputElement).value}`));
    email.addEventListener("change", () => seen.push("change"));
    const r = pageOp({ op: "input", target: { ref: refOf(out, /textbox "Email"/) }, text: "bob@example.com" });
    expect(ok(r)).toBe('typed "bob@example.com" into textbox "Email"');
    expect(email.value).toBe("bob@example.com");
    expect(seen).toEqual(["input:bob@example.com", "change"]);
    expect(document.activeElement).toBe(email);
    const pw = pageOp({ op: "input", target: { ref: refOf(out, /textbox "Password"/) }, text: "n3w-pa55word" });
    expect(ok(pw)).not.toContain("n3w-pa55word");
    expect(ok(pw)).toContain("password field");
    expect(pw.ok && pw.password).toBe(true);
    expect((document.getElementById("pw") as HTMLInputElement).value).toBe("n3w-pa55word");
    // nobody types into a hidden input, and its value stays as it was
    expect(err(pageOp({ op: "input", target: { selector: "input[type=hidden]" }, text: "x" }))).toMatch(/hidden input/);
    expect((document.querySelector("input[type=hidden]") as HTMLInputElement).value).toBe("tok-0123456789");
    // a checkbox takes clicks, not text
    expect(err(pageOp({ op: "input", target: { selector: "#keep" }, text: "x" }))).toMatch(/use click_element/);
  });

  it("clicks an element and submits its form", () => {
    const out = ok(pageOp({ op: "snapshot", maxBytes: 64 * 1024 }));
    let clicks = 0;
    document.querySelector("div[role=button]")?.addEventListener("click", () => (clicks += 1));
    expect(ok(pageOp({ op: "click", target: { ref: refOf(out, /button "Help"/) } }))).toBe('clicked button "Help"');
    expect(clicks).toBe(1);
    const form = document.getElementById("f") as HTMLFormElement;
    const submitted: (string | null)[] = [];
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      submitted.push((e as SubmitEvent).submitter?.textContent ?? null);
    });
    expect(ok(pageOp({ op: "submit", target: { ref: refOf(out, /textbox "Email"/) } }))).toBe("submitted the form");
    expect(ok(pageOp({ op: "submit", target: { ref: refOf(out, /button "Sign in"/) } }))).toBe('submitted the form with button "Sign in"');
    expect(submitted).toEqual([null, "Sign in"]);
    expect(err(pageOp({ op: "submit", target: { selector: "div[role=button]" } }))).toMatch(/not in a form/);
    // an invalid form is not submitted, and the answer says which field
    (document.getElementById("email") as HTMLInputElement).required = true;
    (document.getElementById("email") as HTMLInputElement).value = "";
    expect(err(pageOp({ op: "submit", target: { selector: "#f" } }))).toMatch(/not submitted: textbox "Email"/);
    expect(submitted).toHaveLength(2);
  });
});

describe("the DOM resource", () => {
  it("is simplified markup without passwords' values or hidden inputs, capped", () => {
    const out = ok(pageOp({ op: "dom", maxBytes: 256 * 1024 }));
    expect(out).toContain('<form id="f" action="/submit" method="post">');
    expect(out).toContain('<input id="email" name="email" type="email" value="ann@example.com">');
    expect(out).toContain('<input id="pw" name="pw" type="password" value=(hidden)>');
    expect(out).not.toContain("hunter2-secret");
    expect(out).not.toContain("tok-0123456789");
    expect(out).not.toContain("csrf");
    document.body.innerHTML = `<p>${"y".repeat(1000)}</p>`.repeat(400);
    const big = ok(pageOp({ op: "dom", maxBytes: 256 * 1024 }));
    expect(new TextEncoder().encode(big).length).toBeLessThanOrEqual(256 * 1024);
    expect(big).toMatch(/the DOM text was cut at 256 KiB/);
  });
});
