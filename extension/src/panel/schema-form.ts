/**
 * A form for calling a tool by hand, built from its input schema (which comes from the page, so
 * only names and a few known keywords are read, always as text). The form and the JSON text
 * area stay in step: the text area is what gets sent, so any schema the form cannot draw can
 * still be called.
 */

type Prop = { type?: unknown; enum?: unknown; description?: unknown };

export function buildForm(form: HTMLFormElement, schema: Record<string, unknown>, onChange: (input: Record<string, unknown>) => void): void {
  form.replaceChildren();
  const props = (typeof schema.properties === "object" && schema.properties !== null ? schema.properties : {}) as Record<string, Prop>;
  const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : [];
  const doc = form.ownerDocument;
  const fields: { name: string; type: string; el: HTMLInputElement | HTMLSelectElement }[] = [];
  for (const [name, p] of Object.entries(props).slice(0, 50)) {
    const label = doc.createElement("label");
    label.textContent = `${name}${required.includes(name) ? " *" : ""}${typeof p.description === "string" ? ` — ${p.description.slice(0, 200)}` : ""}`;
    const type = typeof p.type === "string" ? p.type : "string";
    let el: HTMLInputElement | HTMLSelectElement;
    if (Array.isArray(p.enum)) {
      el = doc.createElement("select");
      el.append(doc.createElement("option"));
      for (const v of p.enum.slice(0, 100)) {
        const o = doc.createElement("option");
        o.value = String(v);
        o.textContent = String(v);
        el.append(o);
      }
    } else {
      el = doc.createElement("input");
      el.type = type === "boolean" ? "checkbox" : type === "number" || type === "integer" ? "number" : "text";
    }
    el.name = name;
    el.dataset.param = name;
    label.append(el);
    form.append(label);
    fields.push({ name, type, el });
  }
  const collect = () => {
    const input: Record<string, unknown> = {};
    for (const f of fields) {
      if (f.el instanceof HTMLInputElement && f.el.type === "checkbox") {
        if (f.el.checked) input[f.name] = true;
        continue;
      }
      if (f.el.value === "") continue;
      input[f.name] = f.type === "number" || f.type === "integer" ? Number(f.el.value) : f.el.value;
    }
    onChange(input);
  };
  form.addEventListener("input", collect);
  form.addEventListener("change", collect);
  form.addEventListener("submit", (e) => e.preventDefault());
}

/** The text area's JSON as an object, or the reason it is not one. */
export function parseInput(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  let v: unknown;
  try {
    v = JSON.parse(text.trim() === "" ? "{}" : text);
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { ok: false, message: "it must be an object, like {\"query\": \"tea\"}" };
  return { ok: true, value: v as Record<string, unknown> };
}
