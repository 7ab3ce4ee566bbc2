/**
 * The person's skills as stored in `chrome.storage.local` (key `skills`), read back through the
 * validator every time: an entry that no longer validates (edited storage, an older format) is
 * skipped, never half-run.
 */

import type { KV } from "./store";
import { skillMatches, validateSkill, type Skill } from "./skills";

export interface StoredSkill {
  skill: Skill;
  enabled: boolean;
  /** Shipped with the extension (an example) rather than imported. */
  example?: boolean;
}

export async function loadSkills(kv: KV): Promise<StoredSkill[]> {
  const raw = (await kv.get(["skills"])).skills;
  if (!Array.isArray(raw)) return [];
  const out: StoredSkill[] = [];
  for (const e of raw) {
    if (typeof e !== "object" || e === null) continue;
    const v = validateSkill((e as { skill?: unknown }).skill);
    if (v.ok) out.push({ skill: v.value, enabled: (e as { enabled?: unknown }).enabled !== false, example: (e as { example?: unknown }).example === true });
  }
  return out;
}

export async function saveSkills(kv: KV, skills: StoredSkill[]): Promise<void> {
  await kv.set({ skills });
}

/** Adds or replaces (by name) a skill that already passed `validateSkill`. */
export async function putSkill(kv: KV, skill: Skill, example = false): Promise<"added" | "replaced"> {
  const all = await loadSkills(kv);
  const i = all.findIndex((s) => s.skill.name === skill.name);
  const entry: StoredSkill = { skill, enabled: true, example };
  if (i >= 0) all[i] = entry;
  else all.push(entry);
  await saveSkills(kv, all);
  return i >= 0 ? "replaced" : "added";
}

export async function skillsForUrl(kv: KV, url: string): Promise<Skill[]> {
  return (await loadSkills(kv)).filter((s) => s.enabled && skillMatches(s.skill, url)).map((s) => s.skill);
}
