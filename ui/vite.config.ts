import { resolve } from "node:path";
import { defineConfig } from "vitest/config";

// Two pages, no framework: the approval dialog must be small and fast to show.
export default defineConfig({
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    rollupOptions: {
      input: {
        approval: resolve(__dirname, "approval.html"),
        settings: resolve(__dirname, "settings.html"),
      },
    },
  },
  test: {
    environment: "jsdom",
    globals: true,
    include: ["src/**/*.test.ts"],
  },
});
