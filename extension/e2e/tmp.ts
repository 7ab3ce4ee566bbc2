/**
 * Temporary folders of one test (sandbox, browser profile, bridge home): made under the OS temp
 * dir and removed when the test ends, unless it failed or E2E_KEEP_TMP=1 (then they stay for a
 * look, and their paths are printed).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), `gl-e2e-${prefix}-`));
  made.push(d);
  return d;
}

export function removeTempDirs(keep: boolean): void {
  const dirs = made.splice(0);
  if (keep || process.env.E2E_KEEP_TMP === "1") {
    if (dirs.length > 0) console.log(`kept for a look: ${dirs.join(" ")}`);
    return;
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 3 });
}
