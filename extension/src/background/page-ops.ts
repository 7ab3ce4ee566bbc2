/**
 * What browser tools do inside a page (DESIGN §8.3), as one function the worker injects with
 * `chrome.scripting.executeScript({func: pageOp, args: [request]})` into the tab's top frame, in
 * the extension's ISOLATED world (the default).
 *
 * Guarantees:
 * - the ref → element map of the last `snapshot_page` lives in the isolated world's own global,
 *   which the page's scripts can neither read nor write (no DOM attribute, no page-world
 *   global): a page cannot forge or move a ref. A new document gets a new isolated world, so a
 *   navigation drops every ref; a ref whose element left the document is stale;
 * - the values of password fields and of `type=hidden` inputs are never returned, in the
 *   outline, the DOM text or any outcome (`value=(hidden)` for passwords, hidden inputs left
 *   out); typed text is not echoed for a password field;
 * - control and bidi-override characters are stripped from all page text handed back;
 * - the outline stops at `maxBytes` (UTF-8) and the DOM text at its own cap, saying so.
 *
 * `pageOp` is serialised by Chrome (`func.toString()`), so it must not use anything from outside
 * its own body: every helper is declared inside it. It never throws: every failure is
 * `{ok:false, error}` with a sentence for the model.
 */

export type PageTarget = { ref: string } | { selector: string };

export type PageRequest =
  | { op: "snapshot"; maxBytes: number }
  | { op: "describe"; target: PageTarget }
  | { op: "click"; target: PageTarget }
  | { op: "input"; target: PageTarget; text: string }
  | { op: "submit"; target: PageTarget }
  | { op: "dom"; maxBytes: number }
  | { op: "readyState" };

export interface ElementInfo {
  tag: string;
  role: string;
  name: string;
  inputType?: string;
  inForm: boolean;
}

export type PageResult =
  | { ok: true; text: string; element?: ElementInfo; refs?: number; cut?: boolean; password?: boolean }
  | { ok: false; error: string };

/** The outline's cap (64 KiB) and the DOM resource's (256 KiB). */
export const SNAPSHOT_MAX_BYTES = 64 * 1024;
export const DOM_MAX_BYTES = 256 * 1024;

/**
 * Control and bidi-override characters, stripped from page text. `pageOp` cannot import it
 * (Chrome serialises the function alone), so it spells the same class out; a unit test checks
 * that the two agree.
 */
export const UNSAFE_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

export function pageOp(req: PageRequest): PageResult {
  // ---- helpers (all local: Chrome serialises this function alone) ----
  const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
  const clean = (s: string): string => s.replace(UNSAFE, "");
  const oneLine = (s: string, max = 200): string => {
    const t = clean(s).replace(/\s+/g, " ").trim();
    return t.length > max ? `${t.slice(0, max)}…` : t;
  };
  const q = (s: string): string => JSON.stringify(s);
  const enc = new TextEncoder();
  const byteLen = (s: string): number => enc.encode(s).length;

  interface RefStore {
    map: Map<string, Element>;
  }
  const g = globalThis as unknown as { __groundLinkRefs?: RefStore };
  const store = (): RefStore => (g.__groundLinkRefs ??= { map: new Map() });

  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "IFRAME", "OBJECT", "EMBED", "CANVAS"]);
  const ACTIONABLE_ROLES = new Set([
    "link", "button", "textbox", "searchbox", "spinbutton", "checkbox", "radio", "slider", "combobox", "listbox",
    "option", "switch", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem", "file",
  ]);
  const BLOCKS = new Set(["P", "DIV", "SECTION", "ARTICLE", "BLOCKQUOTE", "PRE", "BR", "HR", "DL", "DT", "DD", "FIGURE", "FIGCAPTION", "HEADER", "FOOTER", "ADDRESS", "DETAILS"]);
  const CONTAINER_ROLES = new Set(["form", "list", "listitem", "table", "row", "cell", "columnheader", "rowheader", "navigation", "main", "banner", "contentinfo", "complementary", "dialog", "group", "region", "article"]);
  /** Roles whose name already holds their text: their descendants are not listed again. */
  const LEAF_ROLES = new Set([...ACTIONABLE_ROLES, "heading", "img"]);
  const LANDMARKS: Record<string, string> = {
    NAV: "navigation", MAIN: "main", ASIDE: "complementary", FORM: "form", TABLE: "table", UL: "list", OL: "list",
    LI: "listitem", DIALOG: "dialog", FIELDSET: "group", TR: "row", TD: "cell", TH: "columnheader",
  };

  const isInput = (el: Element): el is HTMLInputElement => el.tagName === "INPUT";
  const inputType = (el: Element): string => (isInput(el) ? (el.getAttribute("type") ?? "text").toLowerCase().trim() : "");
  const isPassword = (el: Element): boolean => isInput(el) && inputType(el) === "password";
  const isHiddenInput = (el: Element): boolean => isInput(el) && inputType(el) === "hidden";

  const roleOf = (el: Element): string => {
    const aria = (el.getAttribute("role") ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "";
    if (aria && aria !== "none" && aria !== "presentation" && aria !== "generic") return aria;
    const tag = el.tagName;
    if (tag === "A" || tag === "AREA") return el.hasAttribute("href") ? "link" : "";
    if (tag === "BUTTON" || tag === "SUMMARY") return "button";
    if (tag === "INPUT") {
      const t = inputType(el);
      if (t === "button" || t === "submit" || t === "reset" || t === "image") return "button";
      if (t === "checkbox") return "checkbox";
      if (t === "radio") return "radio";
      if (t === "range") return "slider";
      if (t === "number") return "spinbutton";
      if (t === "search") return "searchbox";
      if (t === "file") return "file";
      if (t === "hidden") return "";
      // text, email, password, tel, url, dates … and any type the browser does not know (it
      // treats those as text)
      return "textbox";
    }
    if (tag === "TEXTAREA") return "textbox";
    if (tag === "SELECT") return (el as HTMLSelectElement).multiple || (el as HTMLSelectElement).size > 1 ? "listbox" : "combobox";
    if (/^H[1-6]$/.test(tag)) return "heading";
    if (tag === "IMG") return el.getAttribute("alt") ? "img" : "";
    if (tag === "HEADER" && !el.closest("main, article, section, aside, nav")) return "banner";
    if (tag === "FOOTER" && !el.closest("main, article, section, aside, nav")) return "contentinfo";
    if (tag === "SECTION" && (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby"))) return "region";
    if ((el as HTMLElement).isContentEditable && !(el.parentElement as HTMLElement | null)?.isContentEditable) return "textbox";
    if (el.getAttribute("contenteditable") === "" || el.getAttribute("contenteditable") === "true") {
      if (el.parentElement?.closest("[contenteditable=''], [contenteditable='true']") === null) return "textbox";
    }
    return LANDMARKS[tag] ?? "";
  };

  const visible = (el: Element): boolean => {
    if ((el as HTMLElement).hidden) return false;
    if (el.getAttribute("aria-hidden") === "true") return false;
    const cv = (el as Element & { checkVisibility?: (o: object) => boolean }).checkVisibility;
    if (typeof cv === "function") {
      if (cv.call(el, { checkVisibilityCSS: true })) return true;
      // display: contents has no box of its own, yet its children show
      return getComputedStyle(el).display === "contents";
    }
    const st = getComputedStyle(el);
    return st.display !== "none" && st.visibility !== "hidden" && st.visibility !== "collapse";
  };

  /** Text a person sees in `el` (image alts included; passwords and hidden inputs never). */
  const textOf = (el: Element, depth = 0): string => {
    if (depth > 30) return "";
    let out = "";
    for (const n of Array.from(el.childNodes)) {
      if (n.nodeType === 3) out += n.nodeValue ?? "";
      else if (n.nodeType === 1) {
        const c = n as Element;
        if (SKIP.has(c.tagName) || (c as HTMLElement).hidden || c.getAttribute("aria-hidden") === "true") continue;
        if (c.tagName === "IMG") out += ` ${c.getAttribute("alt") ?? ""} `;
        else if (c.tagName === "INPUT" || c.tagName === "TEXTAREA" || c.tagName === "SELECT") continue;
        else out += ` ${textOf(c, depth + 1)} `;
      }
      if (out.length > 2000) break;
    }
    return out;
  };

  const byIds = (ids: string): string =>
    ids
      .split(/\s+/)
      .map((id) => (id ? document.getElementById(id) : null))
      .filter((x): x is HTMLElement => x !== null)
      .map((x) => textOf(x))
      .join(" ");

  const nameOf = (el: Element, role: string): string => {
    const lb = el.getAttribute("aria-labelledby");
    if (lb) {
      const n = oneLine(byIds(lb));
      if (n) return n;
    }
    const al = el.getAttribute("aria-label");
    if (al && al.trim()) return oneLine(al);
    const tag = el.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") {
      const labels = (el as HTMLInputElement).labels;
      if (labels && labels.length > 0) {
        const n = oneLine(Array.from(labels).map((l) => textOf(l)).join(" "));
        if (n) return n;
      }
      if (isInput(el)) {
        const t = inputType(el);
        if (t === "submit" || t === "button" || t === "reset") return oneLine(el.value || (t === "submit" ? "Submit" : t === "reset" ? "Reset" : ""));
        if (t === "image") return oneLine(el.getAttribute("alt") ?? "");
      }
      const ph = el.getAttribute("placeholder");
      if (ph && ph.trim()) return oneLine(ph);
      return oneLine(el.getAttribute("title") ?? el.getAttribute("name") ?? "");
    }
    if (tag === "IMG") return oneLine(el.getAttribute("alt") ?? "");
    if (tag === "FIELDSET") {
      const lg = el.querySelector(":scope > legend");
      if (lg) return oneLine(textOf(lg));
    }
    if (CONTAINER_ROLES.has(role)) {
      // their text is listed under them; a name repeating it would double the outline
      return oneLine(el.getAttribute("title") ?? "");
    }
    const text = oneLine(textOf(el));
    return text || oneLine(el.getAttribute("title") ?? "");
  };

  const inFormOf = (el: Element): boolean => el.tagName === "FORM" || !!(el as HTMLInputElement).form || el.closest("form") !== null;

  const info = (el: Element): ElementInfo => {
    const role = roleOf(el) || "generic";
    const out: ElementInfo = { tag: el.tagName.toLowerCase(), role, name: nameOf(el, role), inForm: inFormOf(el) };
    if (isInput(el)) out.inputType = inputType(el);
    return out;
  };

  const isActionable = (el: Element, role: string): boolean => ACTIONABLE_ROLES.has(role) || (el as HTMLElement).isContentEditable === true;

  /** `value=…` for a form field; passwords never show theirs. */
  const valueOf = (el: Element): string | null => {
    if (isPassword(el)) return "value=(hidden)";
    if (isInput(el)) {
      const t = inputType(el);
      if (t === "checkbox" || t === "radio") return el.checked ? "[checked]" : "";
      if (t === "submit" || t === "button" || t === "reset" || t === "image" || t === "file" || t === "hidden") return null;
      return el.value ? `value=${q(oneLine(el.value, 500))}` : null;
    }
    if (el.tagName === "TEXTAREA") {
      const v = (el as HTMLTextAreaElement).value;
      return v ? `value=${q(oneLine(v, 500))}` : null;
    }
    if (el.tagName === "SELECT") {
      const s = el as HTMLSelectElement;
      const picked = Array.from(s.selectedOptions).map((o) => oneLine(o.textContent ?? "", 100));
      return picked.length > 0 ? `value=${q(picked.join(", "))}` : null;
    }
    return null;
  };

  const resolve = (t: PageTarget): Element | string => {
    if ("ref" in t) {
      const el = store().map.get(t.ref);
      if (!el || !el.isConnected || el.ownerDocument !== document) {
        return `ref ${t.ref} is not on this page any more (the page changed or navigated since the last snapshot); take a new snapshot_page and use a ref from it`;
      }
      return el;
    }
    let el: Element | null;
    try {
      el = document.querySelector(t.selector);
    } catch {
      return `${q(t.selector)} is not a valid CSS selector; take a new snapshot_page and use a ref from it`;
    }
    if (!el) return `no element on this page matches the selector ${q(t.selector)}; take a new snapshot_page and use a ref from it`;
    return el;
  };

  /** Indented lines up to `maxBytes` (UTF-8), room kept for the note that says where it was cut. */
  const capped = (maxBytes: number, maxIndent: number, first: string[]) => {
    const w = { lines: [...first], used: first.reduce((a, l) => a + byteLen(l) + 1, 0), cut: false };
    const put = (depth: number, line: string): boolean => {
      const l = `${"  ".repeat(Math.min(depth, maxIndent))}${line}`;
      const b = byteLen(l) + 1;
      if (w.used + b > maxBytes - 200) {
        w.cut = true;
        return false;
      }
      w.used += b;
      w.lines.push(l);
      return true;
    };
    return { w, put };
  };

  const label = (i: ElementInfo): string => (i.name ? `${i.role} ${q(i.name)}` : `${i.role} <${i.tag}>`);

  // ---- the operations ----

  const snapshot = (maxBytes: number): PageResult => {
    const s = store();
    s.map = new Map();
    const { w, put } = capped(maxBytes, 20, [`page ${q(oneLine(document.title, 300))}`]);
    const emit = (depth: number, line: string): boolean => put(depth, `- ${line}`);
    let n = 0;
    // text runs at one depth (split by <b>, <span> …) become one line
    let run: { depth: number; parts: string[] } | null = null;
    const flush = (): boolean => {
      const r = run;
      run = null;
      const t = r ? oneLine(r.parts.join(""), 1000) : "";
      return r && t ? emit(r.depth, `text ${q(t)}`) : true;
    };
    /** Raw text, spaces kept: the run is collapsed once, as the page shows it. */
    const addText = (depth: number, t: string): void => {
      if (run && run.depth === depth) run.parts.push(t);
      else if (t.trim() !== "") {
        flush();
        run = { depth, parts: [t] };
      }
    };
    /** `quiet`: text here only repeats a name already shown (a field's label, a group's legend). */
    const walk = (node: Node, depth: number, quiet = false): void => {
      for (const child of Array.from(node.childNodes)) {
        if (w.cut) return;
        if (child.nodeType === 3) {
          if (!quiet) addText(depth, (child.nodeValue ?? "").slice(0, 2000));
          continue;
        }
        if (child.nodeType !== 1) continue;
        const el = child as Element;
        if (SKIP.has(el.tagName) || isHiddenInput(el)) continue;
        if (!visible(el)) continue;
        const role = roleOf(el);
        if (!role) {
          const repeats = (el.tagName === "LABEL" && !!(el as HTMLLabelElement).control) || (el.tagName === "LEGEND" && el.parentElement?.tagName === "FIELDSET");
          // a block (a paragraph, a div) ends a text run; inline elements continue it
          const block = BLOCKS.has(el.tagName);
          if (block && !flush()) return;
          walk(el, depth, quiet || repeats);
          const sr = (el as HTMLElement).shadowRoot;
          if (sr) walk(sr, depth, quiet);
          if (block && !flush()) return;
          continue;
        }
        if (!flush()) return;
        const name = nameOf(el, role);
        let line = name ? `${role} ${q(name)}` : role;
        if (role === "heading") {
          const lvl = /^H([1-6])$/.exec(el.tagName)?.[1] ?? el.getAttribute("aria-level") ?? "2";
          line += ` [level=${lvl}]`;
        }
        if (isActionable(el, role)) {
          n += 1;
          const ref = `e${n}`;
          s.map.set(ref, el);
          line += ` [ref=${ref}]`;
        }
        if (isInput(el) && inputType(el) !== "text" && role === "textbox") line += ` type=${inputType(el)}`;
        if ((el as HTMLInputElement).disabled) line += " [disabled]";
        const v = valueOf(el);
        if (v) line += ` ${v}`;
        if (role === "link") {
          const href = (el as HTMLAnchorElement).href;
          if (href) line += ` href=${q(oneLine(href, 300))}`;
        }
        if (!emit(depth, line)) return;
        if (!LEAF_ROLES.has(role)) {
          walk(el, depth + 1);
          const sr = (el as HTMLElement).shadowRoot;
          if (sr) walk(sr, depth + 1);
          if (!flush()) return;
        }
      }
    };
    if (document.body) walk(document.body, 0);
    flush();
    if (w.cut) w.lines.push(`[the outline was cut at ${Math.round(maxBytes / 1024)} KiB; ${n} refs were given before the cut — act on those, or use a CSS selector for elements further down]`);
    return { ok: true, text: w.lines.join("\n"), refs: n, cut: w.cut };
  };

  const dom = (maxBytes: number): PageResult => {
    const ATTRS = ["id", "name", "type", "role", "href", "src", "alt", "title", "placeholder", "aria-label", "action", "method", "for", "contenteditable"];
    const { w, put } = capped(maxBytes, 40, []);
    const walk = (node: Node, depth: number): void => {
      for (const child of Array.from(node.childNodes)) {
        if (w.cut) return;
        if (child.nodeType === 3) {
          const t = oneLine(child.nodeValue ?? "", 2000);
          if (t) put(depth, t);
          continue;
        }
        if (child.nodeType !== 1) continue;
        const el = child as Element;
        if (SKIP.has(el.tagName) || el.tagName === "svg" || el.tagName === "SVG" || isHiddenInput(el)) continue;
        let open = `<${el.tagName.toLowerCase()}`;
        for (const a of ATTRS) {
          const v = el.getAttribute(a);
          if (v !== null) open += ` ${a}=${q(oneLine(v, 300))}`;
        }
        if (isPassword(el)) open += " value=(hidden)";
        else if (isInput(el) || el.tagName === "TEXTAREA") {
          const t = inputType(el);
          if (t === "checkbox" || t === "radio") open += (el as HTMLInputElement).checked ? " checked" : "";
          else if ((el as HTMLInputElement).value) open += ` value=${q(oneLine((el as HTMLInputElement).value, 500))}`;
        }
        if (!put(depth, `${open}>`)) return;
        if (el.tagName === "TEXTAREA") continue;
        walk(el, depth + 1);
        const sr = (el as HTMLElement).shadowRoot;
        if (sr) walk(sr, depth + 1);
      }
    };
    put(0, `<title>${oneLine(document.title, 300)}`);
    if (document.body) walk(document.body, 0);
    if (w.cut) w.lines.push(`[the DOM text was cut at ${Math.round(maxBytes / 1024)} KiB; use snapshot_page for an outline of the page]`);
    return { ok: true, text: w.lines.join("\n"), cut: w.cut };
  };

  const click = (el: Element): PageResult => {
    const i = info(el);
    // methods from the prototypes, not the element: a form's named fields (an input called
    // "click" or "requestSubmit") shadow its methods, and a page must not be able to turn an
    // action into something else that way
    const scroll = Element.prototype.scrollIntoView as Element["scrollIntoView"] | undefined; // (jsdom has none)
    if (typeof scroll === "function") scroll.call(el, { block: "center", inline: "center" });
    if (el instanceof HTMLElement) HTMLElement.prototype.focus.call(el, { preventScroll: true });
    const opts = { bubbles: true, cancelable: true, composed: true, button: 0 };
    const Ptr = typeof PointerEvent === "function" ? PointerEvent : MouseEvent;
    el.dispatchEvent(new Ptr("pointerdown", opts));
    el.dispatchEvent(new MouseEvent("mousedown", opts));
    el.dispatchEvent(new Ptr("pointerup", opts));
    el.dispatchEvent(new MouseEvent("mouseup", opts));
    if (el instanceof HTMLElement) HTMLElement.prototype.click.call(el);
    else el.dispatchEvent(new MouseEvent("click", opts));
    return { ok: true, text: `clicked ${label(i)}`, element: i };
  };

  const input = (el: Element, text: string): PageResult => {
    const i = info(el);
    const secret = isPassword(el);
    const h = el as HTMLElement;
    if (h instanceof HTMLElement) HTMLElement.prototype.focus.call(h);
    if (isInput(el) || el.tagName === "TEXTAREA") {
      const t = inputType(el);
      if (t === "hidden") return { ok: false, error: "that is a hidden input, which nobody types into; take a new snapshot_page and pick a textbox ref" };
      if (isInput(el) && ["checkbox", "radio", "submit", "button", "reset", "image", "file", "range", "color"].includes(t)) {
        return { ok: false, error: `${label(i)} is an <input type=${t}>, which does not take typed text; use click_element for it` };
      }
      if ((el as HTMLInputElement).disabled || (el as HTMLInputElement).readOnly) {
        return { ok: false, error: `${label(i)} is ${(el as HTMLInputElement).disabled ? "disabled" : "read-only"}; nothing was typed` };
      }
      // the prototype's own setter: a framework that wraps the element's value property
      // (React's value tracker) then sees a real change on the input event
      const proto = el.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
      const setter = Object.getOwnPropertyDescriptor(proto, "value")?.set;
      if (setter) setter.call(el, text);
      else (el as HTMLInputElement).value = text;
    } else if (el.tagName === "SELECT") {
      const s = el as HTMLSelectElement;
      const want = text.trim().toLowerCase();
      const opt = Array.from(s.options).find((o) => o.value.toLowerCase() === want || oneLine(o.textContent ?? "").toLowerCase() === want);
      if (!opt) return { ok: false, error: `${label(i)} has no option ${q(text)}; its options are ${Array.from(s.options).slice(0, 30).map((o) => q(oneLine(o.textContent ?? "", 60))).join(", ")}` };
      s.value = opt.value;
    } else if (h.isContentEditable) {
      const sel = window.getSelection();
      const range = document.createRange();
      range.selectNodeContents(h);
      sel?.removeAllRanges();
      sel?.addRange(range);
      // the editor's own insert path, so editors that listen for beforeinput keep their model
      const done = typeof document.execCommand === "function" && document.execCommand("insertText", false, text);
      if (!done) h.textContent = text;
    } else {
      return { ok: false, error: `${label(i)} is not a text field; take a new snapshot_page and pick a textbox ref` };
    }
    el.dispatchEvent(new InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: secret ? null : text }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    const what = secret ? `typed ${text.length} characters into the password field ${q(i.name)} (not shown)` : `typed ${q(oneLine(text, 200))} into ${label(i)}`;
    return { ok: true, text: what, element: i, password: secret };
  };

  const submit = (el: Element): PageResult => {
    const i = info(el);
    const form = el.tagName === "FORM" ? (el as HTMLFormElement) : ((el as HTMLInputElement).form ?? el.closest("form"));
    if (!form) return { ok: false, error: `${label(i)} is not in a form; use click_element on the page's own button instead` };
    const F = HTMLFormElement.prototype;
    if (!F.checkValidity.call(form)) {
      const fields = Object.getOwnPropertyDescriptor(F, "elements")?.get?.call(form) as HTMLFormControlsCollection | undefined;
      const bad = Array.from(fields ?? [])
        .filter((f) => !(f as HTMLInputElement).validity?.valid)
        .slice(0, 5)
        .map((f) => `${label(info(f))}: ${oneLine((f as HTMLInputElement).validationMessage, 120)}`);
      return { ok: false, error: `the form was not submitted: ${bad.join("; ") || "a field is invalid"}; fill those in with input_text first` };
    }
    const isSubmitter = (e: Element): boolean =>
      (e.tagName === "BUTTON" && ((e.getAttribute("type") ?? "submit").toLowerCase() === "submit")) ||
      (isInput(e) && (inputType(e) === "submit" || inputType(e) === "image"));
    const submitter = el !== form && isSubmitter(el) ? (el as HTMLElement) : null;
    // requestSubmit, not submit(): the page's validation and submit handlers run as for a person
    if (submitter) F.requestSubmit.call(form, submitter);
    else F.requestSubmit.call(form);
    const fi = info(form);
    return { ok: true, text: `submitted ${fi.name ? `the form ${q(fi.name)}` : "the form"}${submitter ? ` with ${label(i)}` : ""}`, element: i };
  };

  try {
    switch (req.op) {
      case "snapshot":
        return snapshot(req.maxBytes);
      case "dom":
        return dom(req.maxBytes);
      case "readyState":
        return { ok: true, text: document.readyState };
      case "describe":
      case "click":
      case "input":
      case "submit": {
        const el = resolve(req.target);
        if (typeof el === "string") return { ok: false, error: el };
        if (req.op === "describe") return { ok: true, text: label(info(el)), element: info(el) };
        if (req.op === "click") return click(el);
        if (req.op === "input") return input(el, req.text);
        return submit(el);
      }
      default:
        return { ok: false, error: "unknown page operation" };
    }
  } catch (e) {
    return { ok: false, error: `the page operation failed: ${oneLine(String(e instanceof Error ? e.message : e), 300)}` };
  }
}
