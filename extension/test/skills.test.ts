// @vitest-environment jsdom
// SKILLs as data: the validator names the field that is wrong, the shipped examples validate and
// run on their fixture pages (the pages' own scripts running in jsdom), and the JSON Schema
// file describes the same format as the validator.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { checkInput, globMatches, skillMatches, STEP_KINDS, validateSkill, type Skill } from "../src/shared/skills";
import { healthProblem, runSkillTool } from "../src/content/skill-runner";

const root = join(__dirname, "..");
const examples = Object.fromEntries(
  readdirSync(join(root, "skills/examples")).map((f) => [f.replace(/\.json$/, ""), JSON.parse(readFileSync(join(root, "skills/examples", f), "utf8")) as unknown]),
);
const valid = (raw: unknown): Skill => {
  const v = validateSkill(raw);
  if (!v.ok) throw new Error(v.errors.join("\n"));
  return v.value;
};
const page = (file: string) =>
  new JSDOM(readFileSync(join(root, "test/fixtures/webmcp", file), "utf8"), { runScripts: "dangerously", url: `http://127.0.0.1:5000/skills/${file}` }).window.document;
const signal = () => new AbortController().signal;

describe("validateSkill", () => {
  const base = () => structuredClone(examples["local-shop"]) as Record<string, any>;

  it("accepts the three shipped examples", () => {
    expect(Object.keys(examples).sort()).toEqual(["local-search", "local-shop", "local-todo"]);
    for (const e of Object.values(examples)) valid(e);
  });

  it.each([
    [(s: any) => (s.tools[1].steps[0].do = "eval"), 'tools[1].steps[0].do: "eval" is not a step; use one of fill, click, select, press, waitFor, read, readAll'],
    [(s: any) => (s.tools[0].steps[0].script = "alert(1)"), "tools[0].steps[0].script: unknown field"],
    [(s: any) => (s.tools[0].code = "x"), "tools[0].code: unknown field"],
    [(s: any) => delete s.healthCheck, "healthCheck: missing; it is a list"],
    [(s: any) => (s.match = ["*://*/*"]), 'match[0]: "*://*/*" is not a URL glob'],
    [(s: any) => (s.name = "Bad Name"), 'name: "Bad Name" is not valid; use 1–64 lower-case letters'],
    [(s: any) => (s.tools[1].steps[0].selector = "#products [data-id=\"{sku}\"]"), "tools[1].steps[0].selector: uses {sku}, which is not a parameter"],
    [(s: any) => (s.tools[1].steps[0].selector = "[[x"), 'tools[1].steps[0].selector: "[[x" is not a valid CSS selector'],
    [(s: any) => (s.tools[0].annotations.readOnlyHint = "yes"), 'tools[0].annotations.readOnlyHint: "yes" is not true or false'],
    [(s: any) => (s.tools[1].name = "list_products"), 'tools[1].name: "list_products" is used by two tools'],
    [(s: any) => (s.tools[0].steps.push({ do: "waitFor", selector: "x", timeoutMs: 60000 })), "tools[0].steps[1].timeoutMs: 60000; a whole number of milliseconds up to 10000"],
    [(s: any) => (s.tools[0].steps.push({ do: "press", selector: "x", key: "F5" })), 'tools[0].steps[1].key: "F5"; use one of Enter'],
    [(s: any) => (s.format = "something-else"), 'format: "something-else"; a skill file says "format": "ground-link-skill"'],
    [(s: any) => (s.tools[1].inputSchema.required = ["nope"]), 'tools[1].inputSchema.required[0]: "nope" is not one of the properties'],
  ])("names the field: %#", (mutate, message) => {
    const s = base();
    mutate(s);
    const v = validateSkill(s);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.errors.join("\n")).toContain(message);
  });

  it("says what a non-object is", () => {
    expect(validateSkill("[]")).toEqual({ ok: false, errors: ['the skill is "[]", not a JSON object'] });
  });
});

describe("the JSON Schema file", () => {
  const schema = JSON.parse(readFileSync(join(root, "skills/skill.schema.json"), "utf8")) as any;
  it("has the validator's top-level fields, required list and step kinds", () => {
    expect(Object.keys(schema.properties).sort()).toEqual(["description", "format", "formatVersion", "healthCheck", "match", "name", "tools", "version"]);
    expect(schema.required.sort()).toEqual(["format", "formatVersion", "healthCheck", "match", "name", "tools", "version"]);
    expect(schema.$defs.step.oneOf.map((s: any) => s.properties.do.const)).toEqual([...STEP_KINDS]);
  });
});

describe("match and input", () => {
  it("globs match any port and path but not another host", () => {
    const s = valid(examples["local-search"]);
    expect(skillMatches(s, "http://127.0.0.1:41000/skills/search.html")).toBe(true);
    expect(skillMatches(s, "http://localhost:3000/skills/search.html?q=1")).toBe(true);
    expect(skillMatches(s, "http://127.0.0.1.evil.example/skills/search.html")).toBe(false);
    expect(globMatches("https://a.example/x.y", "https://a.example/xzy")).toBe(false);
  });

  it("checks a call's input against the tool's parameters", () => {
    const tool = valid(examples["local-shop"]).tools[1]!;
    expect(checkInput(tool.inputSchema, {})).toEqual({ ok: false, error: 'missing parameter "id"' });
    expect(checkInput(tool.inputSchema, { id: 3 })).toEqual({ ok: false, error: 'parameter "id" is 3, not a string' });
    expect(checkInput(tool.inputSchema, { id: "p1", x: 1 })).toMatchObject({ ok: false, error: 'unknown parameter "x"; this tool takes id' });
  });
});

describe("the examples on their fixture pages", () => {
  it("local-search fills the form, waits for the results and reads them", async () => {
    const doc = page("search.html");
    const s = valid(examples["local-search"]);
    expect(healthProblem(doc, s)).toBeNull();
    const out = JSON.parse(await runSkillTool(doc, s.tools[0]!, { query: "rust" }, signal()));
    expect(out).toEqual({ articles: [{ title: "Rust ownership explained", url: "/a/rust-ownership" }, { title: "Rust async in practice", url: "/a/rust-async" }] });
  });

  it("local-search's health check fails on the changed page and names the selector", () => {
    expect(healthProblem(page("search-v2.html"), valid(examples["local-search"]))).toContain('"form#search" is not on this page');
  });

  it("local-shop lists products and adds one to the cart; a quote in the id stays inside the selector", async () => {
    const doc = page("shop.html");
    const s = valid(examples["local-shop"]);
    const list = JSON.parse(await runSkillTool(doc, s.tools[0]!, {}, signal()));
    expect(list.products[1]).toEqual({ id: "p2", name: "Cup", price: "4.50" });
    expect(JSON.parse(await runSkillTool(doc, s.tools[1]!, { id: "p2" }, signal()))).toEqual({ cartCount: "1" });
    await expect(runSkillTool(doc, s.tools[1]!, { id: '"], .product button.add, x["' }, signal())).rejects.toThrow(/step 1 \(click\) failed: no element matches/);
    expect(doc.getElementById("cart-count")?.textContent).toBe("1");
  });

  it("local-todo adds an item with Enter and lists it", async () => {
    const doc = page("todo.html");
    const s = valid(examples["local-todo"]);
    expect(JSON.parse(await runSkillTool(doc, s.tools[1]!, { text: "Water the plants" }, signal()))).toEqual({ todos: ["Buy milk", "Water the plants"] });
    expect(JSON.parse(await runSkillTool(doc, s.tools[0]!, {}, signal()))).toEqual({ todos: [{ text: "Buy milk", done: "true" }, { text: "Water the plants", done: "false" }] });
  });

  it("a step that finds nothing stops the run and says which step", async () => {
    const doc = page("todo.html");
    doc.getElementById("new-todo")?.remove();
    await expect(runSkillTool(doc, valid(examples["local-todo"]).tools[1]!, { text: "x" }, signal())).rejects.toThrow('add_todo: step 1 (fill) failed: no element matches "input#new-todo"');
  });
});
