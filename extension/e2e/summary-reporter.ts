// Prints one closing line, "e2e: N passed, N failed, N skipped", after Playwright's own summary,
// so a CI log reader finds the counts in the usual plain form.
import type { FullResult, Reporter, TestCase, TestResult } from "@playwright/test/reporter";

export default class SummaryReporter implements Reporter {
  private passed = 0;
  private failed = 0;
  private skipped = 0;

  onTestEnd(test: TestCase, result: TestResult): void {
    if (result.status === "skipped") this.skipped++;
    else if (result.status === test.expectedStatus) this.passed++;
    else this.failed++;
  }

  onEnd(_result: FullResult): void {
    console.log(`e2e: ${this.passed} passed, ${this.failed} failed, ${this.skipped} skipped`);
  }
}
