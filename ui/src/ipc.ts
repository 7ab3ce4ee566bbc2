// Typed wrappers over the app's commands (src-tauri/src/commands.rs). Types come from the Rust
// types (src/gen/types.ts); nothing here is written twice.
import { Channel, invoke as tauriInvoke, type InvokeArgs } from "@tauri-apps/api/core";
import type { AppSettings, ApprovalAnswer, AuditFilter, AuditPage, ChainCheck, ClientAdded, Command, CommandError, Decision, DialogState, Hook, HookRun, Layer, PairingView, RootCheck, RuleEdit, RuleFileView, SettingsView, StatusView, TrustView } from "./gen/types";

/**
 * What a call rejects with: the app's `CommandError` (src-tauri/src/error.rs), or, as `"ipc"`,
 * Tauri's own refusal before the command ran (a command this window may not call, arguments
 * that do not fit), which Tauri sends as a bare string.
 */
export type InvokeError = CommandError | { kind: "ipc"; message: string };

function isInvokeError(e: unknown): e is InvokeError {
  return typeof e === "object" && e !== null && typeof (e as InvokeError).kind === "string" && typeof (e as InvokeError).message === "string";
}

export function invokeError(e: unknown): InvokeError {
  return isInvokeError(e) ? e : { kind: "ipc", message: message(e) };
}

/** The kind of a rejected call, to act on (`undefined` for anything that is not one). */
export function errorKind(e: unknown): InvokeError["kind"] | undefined {
  return isInvokeError(e) ? e.kind : undefined;
}

/** Only the app's own commands (generated from src-tauri/src/command_names.rs) type-check; every rejection is an `InvokeError`. */
const invoke = <T>(cmd: Command, args?: InvokeArgs): Promise<T> =>
  tauriInvoke<T>(cmd, args).catch((e: unknown) => {
    throw invokeError(e);
  });

export const approval = {
  subscribe(onState: (s: DialogState) => void): Promise<DialogState> {
    const ch = new Channel<DialogState>();
    ch.onmessage = onState;
    return invoke<DialogState>("approval_subscribe", { channel: ch });
  },
  answer: (callId: string, answer: ApprovalAnswer) => invoke<void>("approval_answer", { callId, answer }),
  rendered: (callId: string) => invoke<number | null>("approval_rendered", { callId }),
};

export const settings = {
  get: () => invoke<SettingsView>("settings_get"),
  save: (s: AppSettings) => invoke<SettingsView>("settings_save", { settings: s }),
  status: () => invoke<StatusView>("status_get"),
  checkRoot: (path: string) => invoke<RootCheck>("root_check", { path }),
  pickRoot: () => invoke<string | null>("root_pick"),
  openRoot: () => invoke<void>("root_open"),
  rules: (layer: Layer) => invoke<RuleFileView>("rules_view", { layer }),
  applyRule: (layer: Layer, edit: RuleEdit) => invoke<RuleFileView>("rules_apply", { layer, edit }),
  checkCall: (call: string) => invoke<Decision>("rules_check_call", { call }),
  trust: () => invoke<TrustView>("trust_get"),
  /** Trust the project file only if it is still `shown` (the text whose diff was on screen). */
  trustProject: (shown: string) => invoke<TrustView>("trust_project", { shown }),
  runHook: (hook: Hook) => invoke<HookRun>("hook_run", { hook }),
  pairing: () => invoke<PairingView>("pairing_get"),
  copyToken: () => invoke<void>("token_copy"),
  rotateToken: () => invoke<PairingView>("token_rotate"),
  /** A named MCP client; its token comes back this once. */
  addClient: (name: string) => invoke<ClientAdded>("client_add", { name }),
  revokeClient: (name: string) => invoke<PairingView>("client_revoke", { name }),
  audit: (filter: AuditFilter) => invoke<AuditPage>("audit_read", { filter }),
  verifyAudit: () => invoke<ChainCheck>("audit_verify"),
};

/** The words to show for any failure: a rejected call's `message`, an `Error`'s, or the text thrown. */
export function message(e: unknown): string {
  if (typeof e === "string") return e;
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string") return (e as { message: string }).message;
  return JSON.stringify(e);
}
