// Prints one closing line after Playwright's own summary, so a CI log reader finds the verdict
// and the counts in one plain place:
//   e2e-extension: PASS — 17 passed, 0 failed, 0 skipped in 150.2 s
//   e2e-extension: FAIL — 16 passed, 1 failed, 0 skipped in 151.0 s; failed: <titles>
// A run with nothing failed but something skipped (E2E_SKIP_BRIDGE=1) says PASS (PARTIAL).
import type { FullResult, Reporter, TestCase, TestResult } from "@playwright/test/reporter";

export default class SummaryReporter implements Reporter {
  private passed = 0;
  private skipped = 0;
  private readonly failed: string[] = [];

  onTestEnd(test: TestCase, result: TestResult): void {
    // with retries a test ends more than once; only its last attempt counts
    if (result.retry < test.retries && result.status !== "passed" && result.status !== "skipped") return;
    if (result.status === "skipped") this.skipped++;
    else if (result.status === test.expectedStatus) this.passed++;
    else this.failed.push(test.title);
  }

  onEnd(result: FullResult): void {
    const ok = result.status === "passed" && this.failed.length === 0;
    const verdict = ok ? (this.skipped > 0 ? "PASS (PARTIAL)" : "PASS") : "FAIL";
    const why = result.status !== "passed" && this.failed.length === 0 ? ` (run ${result.status})` : "";
    const list = this.failed.length > 0 ? `; failed: ${this.failed.join(" | ")}` : "";
    console.log(`e2e-extension: ${verdict}${why} — ${this.passed} passed, ${this.failed.length} failed, ${this.skipped} skipped in ${(result.duration / 1000).toFixed(1)} s${list}`);
  }
}
