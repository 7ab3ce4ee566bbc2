import { defineConfig } from "@playwright/test";

// One worker: every test starts its own browser, fake site and bridge, and the machine has 2 cores.
export default defineConfig({
  testDir: "./tests",
  timeout: 90_000,
  // a safety net for CI: the whole run normally takes about 2.5 minutes
  globalTimeout: 10 * 60_000,
  workers: 1,
  fullyParallel: false,
  retries: 0,
  reporter: [["list"], ["./summary-reporter.ts"]],
  outputDir: "../test-results",
});
