// Typed wrappers over the app's commands (src-tauri/src/commands.rs). Types come from the Rust
// types (src/gen/types.ts); nothing here is written twice.
import { Channel, invoke as tauriInvoke, type InvokeArgs } from "@tauri-apps/api/core";
import type { AppSettings, ApprovalAnswer, AuditFilter, AuditPage, ChainCheck, ClientAdded, Command, Decision, DialogState, Hook, HookRun, Layer, PairingView, RootCheck, RuleEdit, RuleFileView, SettingsView, StatusView, TrustView } from "./gen/types";

/** Only the app's own commands (generated from src-tauri/src/command_names.rs) type-check. */
const invoke = <T>(cmd: Command, args?: InvokeArgs): Promise<T> => tauriInvoke<T>(cmd, args);

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

export function message(e: unknown): string {
  return typeof e === "string" ? e : e instanceof Error ? e.message : JSON.stringify(e);
}
