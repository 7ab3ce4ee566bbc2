/**
 * The popup: connection state, port, sandbox root and mode (shown, never changed from here —
 * the agent's token must not loosen policy), pairing, pause for this browser, and "Insert
 * instructions" into the current chat's composer.
 */

import { t } from "../shared/i18n";
import { nativeView } from "../background/native";
import { ALL_SITES, BROWSER_TOOLS_KEY } from "../shared/browser-switch";
import { reportLines } from "../shared/health";
import type { Reply, TabReply } from "../shared/protocol";
import { $, connectionLabel, localise, worker } from "../shared/ui";

let paused = false;

async function renderNative(): Promise<void> {
  const got = await chrome.storage.local.get(["native"]);
  const v = nativeView(got.native);
  $("native").hidden = !v.show;
  $("nativeMissing").hidden = !v.missing;
  $("nativeDetail").textContent = v.detail;
}

/** The browser-tools switch and, while it is on, whether Chrome granted all sites. */
async function renderBrowserTools(): Promise<void> {
  const on = (await chrome.storage.local.get([BROWSER_TOOLS_KEY]))[BROWSER_TOOLS_KEY] === true;
  ($("browserTools") as HTMLInputElement).checked = on;
  const all = on ? await chrome.permissions.contains({ origins: ALL_SITES }).catch(() => false) : false;
  $("browserToolsNote").textContent = on ? t(all ? "browserToolsAllSites" : "browserToolsSomeSites") : "";
}

function render(r: Reply): void {
  if (r.type === "failed") {
    $("message").textContent = r.message;
    return;
  }
  if (r.type !== "status") return;
  paused = r.paused;
  const c = r.connection;
  const label = connectionLabel(c);
  const state = $("state");
  state.textContent = label.text;
  state.dataset.kind = label.kind;
  $("detail").textContent = c && c.kind !== "connected" ? c.detail : "";
  $("info").hidden = !c || c.kind !== "connected";
  if (c && c.kind === "connected") {
    $("port").textContent = String(c.port);
    $("root").textContent = c.dir ?? "";
    $("sandbox").textContent = c.sandbox ?? "";
    $("mode").textContent = c.mode ?? "";
  }
  // approvals happen in ground-link, never here: the popup only says that some are waiting
  const pending = c && c.kind === "connected" ? c.pending : 0;
  $("pending").hidden = pending === 0;
  $("pending").textContent = pending > 0 ? t("popupPending", String(pending)) : "";
  $("pairing").hidden = !c || c.kind !== "notPaired";
  $("pausedNote").hidden = !paused;
  $("pause").textContent = paused ? t("btnResume") : t("btnPause");
}

async function activeChatTab(): Promise<chrome.tabs.Tab | undefined> {
  const [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  return tab;
}

/** What the health check found on the active tab's chat page (nothing shown on other pages). */
async function renderHealth(): Promise<void> {
  const tab = await activeChatTab();
  if (tab?.id === undefined) return;
  const r = await worker({ type: "tabHealth", tabId: tab.id });
  if (r.type !== "health" || !r.report) return;
  const lines = reportLines(r.report);
  const list = $("healthLines");
  list.replaceChildren();
  for (const text of lines.length > 0 ? lines : [t("healthOk", r.report.siteName)]) {
    const li = document.createElement("li");
    li.textContent = text;
    if (lines.length > 0) li.className = "warn";
    list.append(li);
  }
  $("siteHealth").hidden = false;
}

document.addEventListener("DOMContentLoaded", () => {
  localise(document);
  void worker({ type: "status" }).then(render);
  void renderHealth();
  void renderNative();
  void renderBrowserTools();
  $("browserTools").addEventListener("change", () => {
    const box = $("browserTools") as HTMLInputElement;
    // asked from the click itself (Chrome shows its prompt only during a user gesture); a "no"
    // still leaves browser tools on for the sites already granted, and the note says so
    const asked = box.checked ? chrome.permissions.request({ origins: ALL_SITES }).catch(() => false) : Promise.resolve(false);
    void asked.then(async () => {
      await chrome.storage.local.set({ [BROWSER_TOOLS_KEY]: box.checked });
      await renderBrowserTools();
    });
  });
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === "local" && changes.native) void renderNative();
    if (area === "local" && changes.connection) void worker({ type: "status" }).then(render);
  });
  $("pairNative").addEventListener("click", () => {
    $("message").textContent = t("pairNativeAsked");
    void worker({ type: "pairNative" }).then((r) => {
      render(r);
      void renderNative();
      if (r.type === "status" && r.connection?.kind === "connected") $("message").textContent = t("paired");
    });
  });
  $("pair").addEventListener("click", () => {
    const input = $("token") as HTMLInputElement;
    void worker({ type: "pair", token: input.value }).then((r) => {
      input.value = "";
      render(r);
      if (r.type === "status" && r.connection?.kind === "connected") $("message").textContent = t("paired");
    });
  });
  $("pause").addEventListener("click", () => void worker({ type: "setPaused", paused: !paused }).then(render));
  $("options").addEventListener("click", () => void chrome.runtime.openOptionsPage());
  // the page tools panel of this window (the popup's click is the gesture Chrome asks for)
  $("sidePanel").addEventListener("click", () => {
    void (async () => {
      const tab = await activeChatTab();
      if (tab?.windowId !== undefined) await chrome.sidePanel.open({ windowId: tab.windowId });
      window.close();
    })();
  });
  $("fixSite").addEventListener("click", () => {
    void (async () => {
      const tab = await activeChatTab();
      try {
        if (tab?.id === undefined) throw new Error("no tab");
        await chrome.tabs.sendMessage(tab.id, { type: "startPicker" });
        $("message").textContent = t("pickerStarted");
        // the popup would take the next click: close it so the person picks on the page
        setTimeout(() => window.close(), 600);
      } catch {
        $("message").textContent = t("noChatTab");
      }
    })();
  });
  $("insert").addEventListener("click", () => {
    void (async () => {
      const tab = await activeChatTab();
      if (tab?.id === undefined) {
        $("message").textContent = t("noChatTab");
        return;
      }
      try {
        const r = (await chrome.tabs.sendMessage(tab.id, { type: "insertPrompt" })) as TabReply | undefined;
        $("message").textContent = r?.type === "ok" ? t("insertedInstructions") : r?.type === "failed" ? r.message : t("noChatTab");
      } catch {
        $("message").textContent = t("noChatTab");
      }
    })();
  });
});
