/**
 * Page tool names as every LLM API accepts them (`^[A-Za-z0-9_-]{1,64}$`), with a table back to
 * (frame, origin, name). A page's name may use `.` or be 128 long, and two frames may both offer
 * `search`; the mapped name stays readable where it can and gets a short hash where it must.
 */

export const API_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

export interface ToolRef {
  frameId: number;
  origin: string;
  name: string;
}

/** FNV-1a, 32 bits, as 6 base-36 digits: short, stable, not a security boundary. */
export function shortHash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36).padStart(7, "0").slice(-6);
}

export class NameTable {
  private readonly byApi = new Map<string, ToolRef>();

  /** Maps each tool; the first tool keeps the plain name when it is valid and free. */
  constructor(tools: ToolRef[]) {
    for (const t of tools) {
      const plain = t.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "tool";
      let api = plain === t.name && !this.byApi.has(plain) ? plain : `${plain.slice(0, 56)}_${shortHash(`${t.frameId}|${t.origin}|${t.name}`)}`;
      // a hash collision (or a page naming its tool like our mapped one): count up until free
      for (let n = 2; this.byApi.has(api); n++) api = `${plain.slice(0, 52)}_${shortHash(`${t.frameId}|${t.origin}|${t.name}|${n}`)}_${n}`.slice(0, 64);
      this.byApi.set(api, t);
    }
  }

  resolve(api: string): ToolRef | undefined {
    return this.byApi.get(api);
  }

  apiName(ref: ToolRef): string | undefined {
    for (const [api, r] of this.byApi) if (r.frameId === ref.frameId && r.origin === ref.origin && r.name === ref.name) return api;
    return undefined;
  }

  entries(): [string, ToolRef][] {
    return [...this.byApi.entries()];
  }
}

/** A page tool as the bridge knows it: the tab too, since its list spans every tab. */
export interface TabToolRef extends ToolRef {
  tabId: number;
}

/**
 * The name a page tool has on the native link and at the bridge (`page__<hash>__<name>`),
 * unique across tabs and stable for a (tab, frame, origin, tool) while it stays registered.
 * Unlike {@link NameTable} (one tab, the model reads the plain name) it depends on nothing but
 * the tool itself, so another tab's tools coming or going never renames it. A name that is not
 * API-safe, or too long to fit after the prefix, keeps a readable stem and gets its own hash.
 */
export function bridgeToolName(ref: TabToolRef): string {
  const where = shortHash(`${ref.tabId}|${ref.frameId}|${ref.origin}`);
  const room = 64 - `page__${where}__`.length; // 50
  const plain = ref.name.replace(/[^A-Za-z0-9_-]/g, "_");
  const name = plain === ref.name && plain.length <= room ? plain : `${plain.slice(0, room - 7)}_${shortHash(ref.name)}`;
  return `page__${where}__${name}`;
}
