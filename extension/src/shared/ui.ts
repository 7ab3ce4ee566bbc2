/**
 * Small helpers for the extension's own pages (popup, options): localising `data-i18n`
 * elements and talking to the worker.
 */

import { t, type MessageKey } from "./i18n";
import type { ConnectionState, Reply, UiRequest, ContentRequest } from "./protocol";

export function localise(root: ParentNode): void {
  root.querySelectorAll<HTMLElement>("[data-i18n]").forEach((el) => {
    el.textContent = t(el.dataset.i18n as MessageKey);
  });
  document.documentElement.lang = chrome.i18n.getUILanguage();
}

export async function worker(req: UiRequest | ContentRequest): Promise<Reply> {
  try {
    const r = (await chrome.runtime.sendMessage(req)) as Reply | undefined;
    return r ?? { type: "failed", kind: "bad", message: "no answer from the service worker" };
  } catch (e) {
    return { type: "failed", kind: "bad", message: String(e) };
  }
}

export function connectionLabel(c: ConnectionState | null): { text: string; kind: string } {
  if (!c) return { text: t("popupChecking"), kind: "checking" };
  if (c.kind === "connected") return { text: t("popupConnected"), kind: "connected" };
  if (c.kind === "notPaired") return { text: t("popupNotPaired"), kind: "notPaired" };
  if (c.kind === "impostor") return { text: t("popupImpostor", String(c.port)), kind: "impostor" };
  return { text: t("popupNoBridge"), kind: "noBridge" };
}

export function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}
