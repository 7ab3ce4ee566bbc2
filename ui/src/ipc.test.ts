// What a rejected command call looks like to the pages: the app's `CommandError` as it comes,
// Tauri's own refusal (a bare string) as kind "ipc", and the words to show for either.
import { describe, expect, it, vi } from "vitest";
import type { CommandError } from "./gen/types";

let rejectWith: unknown = null;
vi.mock("@tauri-apps/api/core", () => ({
  Channel: class {},
  invoke: vi.fn(async () => {
    throw rejectWith;
  }),
}));

const { errorKind, invokeError, message, settings } = await import("./ipc");

describe("a rejected call", () => {
  it("keeps the app's kind and message", async () => {
    const e: CommandError = { kind: "notFound", message: 'there is no client named "x"; it may be revoked already' };
    rejectWith = e;
    const got = await settings.revokeClient("x").catch((x: unknown) => x);
    expect(got).toEqual(e);
    expect(errorKind(got)).toBe("notFound");
    expect(message(got)).toBe(e.message);
  });

  it("turns Tauri's own refusal into kind ipc, with its words", async () => {
    rejectWith = "Command client_add not allowed by ACL";
    const got = await settings.addClient("x").catch((x: unknown) => x);
    expect(got).toEqual({ kind: "ipc", message: "Command client_add not allowed by ACL" });
    expect(invokeError(new Error("boom"))).toEqual({ kind: "ipc", message: "boom" });
  });

  it("has no kind for what is not a call's rejection", () => {
    expect(errorKind("text")).toBeUndefined();
    expect(errorKind(new Error("x"))).toBeUndefined();
    expect(errorKind(null)).toBeUndefined();
    expect(message(new Error("from the UI"))).toBe("from the UI");
  });
});
