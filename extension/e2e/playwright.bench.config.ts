import { defineConfig } from "@playwright/test";

// Benchmarks with the real extension and bridge (`npm run bench`, part of `make bench`): figures
// for notes, printed, never asserted against a time.
export default defineConfig({
  testDir: "./bench",
  testMatch: "*.bench.ts",
  timeout: 180_000,
  workers: 1,
  fullyParallel: false,
  retries: 0,
  reporter: [["list"]],
  outputDir: "../test-results",
});
