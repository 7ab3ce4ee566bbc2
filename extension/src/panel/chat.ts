/**
 * The panel's chat with the person's own model: settings (provider, address, model, key, thinking,
 * confirm mode), the conversation, and the confirmation cards for tool calls. The loop itself and
 * the key live in the service worker (background/agent.ts); this page sends the key once and never
 * gets it back.
 */

import { t } from "../shared/i18n";
import { $, worker } from "../shared/ui";
import { normaliseAgentSettings, parseBaseUrl, PRESETS, type AgentSettings, type ProviderId, type ProviderSwitches } from "../shared/providers";
import type { ChatMessage } from "../shared/chat-stream";
import type { AgentIn, AgentOut } from "../background/agent";

const AGENT_PORT = "ground-link-agent";
let history: ChatMessage[] = [];
/** This chat's id: the session of its calls in the bridge's audit log. */
const conversation = `panel:${crypto.randomUUID()}`;
let port: chrome.runtime.Port | null = null;
let current: { text: HTMLElement; reasoning: HTMLElement } | null = null;

function el(cls: string, text = ""): HTMLElement {
  const d = document.createElement("div");
  d.className = cls;
  d.textContent = text;
  $("chat").append(d);
  return d;
}

function connect(): chrome.runtime.Port {
  if (port) return port;
  const p = chrome.runtime.connect({ name: AGENT_PORT });
  p.onMessage.addListener((m: AgentOut) => onEvent(m));
  p.onDisconnect.addListener(() => (port = null));
  port = p;
  return p;
}

function send(m: AgentIn): void {
  connect().postMessage(m);
}

function onEvent(m: AgentOut): void {
  switch (m.type) {
    case "reasoning":
      if (current) current.reasoning.textContent += m.delta;
      return;
    case "text":
      if (current) current.text.textContent += m.delta;
      return;
    case "notice":
      el("msg muted small", m.message);
      return;
    case "error": {
      const e = el("msg error", m.message);
      e.dataset.kind = "error";
      return;
    }
    case "toolCall": {
      const card = el("call");
      card.dataset.call = m.id;
      card.dataset.tool = m.tool;
      card.dataset.state = m.confirm ? "waiting" : "running";
      const head = document.createElement("div");
      head.textContent = m.confirm ? t("panelConfirmCall", m.tool, m.origin, m.why) : t("panelToolRan", m.tool, m.origin, m.why);
      const args = document.createElement("pre");
      args.textContent = m.args;
      card.append(head, args);
      if (m.confirm) {
        const row = document.createElement("div");
        row.className = "row";
        for (const [label, allow] of [[t("panelAllow"), true], [t("panelDeny"), false]] as const) {
          const b = document.createElement("button");
          b.textContent = label;
          b.className = allow ? "allow" : "deny";
          b.addEventListener("click", () => {
            row.remove();
            card.dataset.state = allow ? "running" : "denied";
            send({ type: "confirm", id: m.id, allow });
          });
          row.append(b);
        }
        card.append(row);
      }
      // text after a tool call belongs to a new bubble
      current = { reasoning: el("msg reasoning"), text: el("msg assistant") };
      return;
    }
    case "toolResult": {
      const card = document.querySelector<HTMLElement>(`.call[data-call="${CSS.escape(m.id)}"]`);
      if (card) {
        card.dataset.state = m.ok ? "done" : "failed";
        const r = document.createElement("pre");
        r.className = "result";
        r.textContent = m.text.length > 2000 ? `${m.text.slice(0, 2000)}…` : m.text;
        card.append(r);
      }
      return;
    }
    case "turnDone":
      history = m.messages;
      current = null;
      ($("chatSend") as HTMLButtonElement).disabled = false;
      ($("chatStop") as HTMLButtonElement).disabled = true;
      $("chat").dataset.turns = String(Number($("chat").dataset.turns ?? "0") + 1);
      return;
  }
}

/** The per-provider switches: a preset fills them in; the person may change them. */
function showSwitches(sw: ProviderSwitches): void {
  ($("swToolChoice") as HTMLInputElement).checked = sw.toolChoice;
  ($("swParallel") as HTMLInputElement).checked = sw.parallelToolCalls;
  ($("swReplay") as HTMLInputElement).checked = sw.replayReasoning;
  ($("swThinking") as HTMLSelectElement).value = sw.thinking;
}

function readSwitches(): ProviderSwitches {
  const th = ($("swThinking") as HTMLSelectElement).value;
  return {
    toolChoice: ($("swToolChoice") as HTMLInputElement).checked,
    parallelToolCalls: ($("swParallel") as HTMLInputElement).checked,
    replayReasoning: ($("swReplay") as HTMLInputElement).checked,
    thinking: th === "thinkingType" || th === "enableThinking" ? th : "none",
  };
}

async function loadSettings(): Promise<AgentSettings> {
  return normaliseAgentSettings((await chrome.storage.local.get("agentSettings")).agentSettings);
}

async function renderSettings(): Promise<void> {
  const s = await loadSettings();
  const sel = $("provider") as HTMLSelectElement;
  if (sel.options.length === 0) {
    for (const [id, p] of [...Object.entries(PRESETS).map(([id, p]) => [id, p.label] as const), ["custom", "Custom (OpenAI-compatible)"] as const]) {
      const o = document.createElement("option");
      o.value = id;
      o.textContent = p;
      sel.append(o);
    }
    sel.addEventListener("change", () => {
      const p = sel.value === "custom" ? null : PRESETS[sel.value as keyof typeof PRESETS];
      if (p) {
        ($("baseUrl") as HTMLInputElement).value = p.baseUrl;
        ($("model") as HTMLInputElement).value = p.model;
        showSwitches(p.switches);
      }
    });
  }
  sel.value = s.provider;
  ($("baseUrl") as HTMLInputElement).value = s.baseUrl;
  ($("model") as HTMLInputElement).value = s.model;
  ($("thinking") as HTMLInputElement).checked = s.thinking;
  showSwitches(s.switches);
  ($("confirmMode") as HTMLInputElement).checked = s.mode === "confirm";
  const k = await worker({ type: "keyStatus" });
  $("keyState").textContent = k.type === "keyStatus" && k.set[s.provider] ? t("panelKeySet") : "";
}

async function save(): Promise<void> {
  const provider = ($("provider") as HTMLSelectElement).value as ProviderId;
  const base = parseBaseUrl(($("baseUrl") as HTMLInputElement).value);
  const out = $("agentSaved");
  if (!base.ok) return void (out.textContent = base.message);
  const prev = await loadSettings();
  const switches = readSwitches();
  const next: AgentSettings = { ...prev, provider, baseUrl: base.url, model: ($("model") as HTMLInputElement).value.trim() || prev.model, switches, thinking: ($("thinking") as HTMLInputElement).checked, mode: ($("confirmMode") as HTMLInputElement).checked ? "confirm" : "auto" };
  await chrome.storage.local.set({ agentSettings: next });
  const key = ($("apiKey") as HTMLInputElement).value;
  if (key !== "") {
    const r = await worker({ type: "setProviderKey", provider, key });
    if (r.type === "failed") return void (out.textContent = r.message);
    ($("apiKey") as HTMLInputElement).value = "";
  }
  out.textContent = t("panelSaved");
  await renderSettings();
  // host access to this provider's origin only, asked on the person's click (Chrome needs the
  // gesture); already granted means no prompt
  const origins = [`${base.origin}/*`];
  if (await chrome.permissions.contains({ origins })) return;
  const granted = await chrome.permissions.request({ origins }).catch(() => false);
  if (!granted) out.textContent = `Chrome did not grant access to ${base.origin}; the model is reachable only if it allows browser requests (CORS)`;
}

export function setupChat(currentTab: () => number | null): void {
  void renderSettings();
  $("agentSave").addEventListener("click", () => void save());
  $("chatSend").addEventListener("click", () => {
    const tabId = currentTab();
    const input = $("chatInput") as HTMLTextAreaElement;
    const text = input.value.trim();
    if (tabId === null || text === "") return;
    input.value = "";
    el("msg user", text);
    current = { reasoning: el("msg reasoning"), text: el("msg assistant") };
    ($("chatSend") as HTMLButtonElement).disabled = true;
    ($("chatStop") as HTMLButtonElement).disabled = false;
    send({ type: "run", tabId, text, history, conversation });
  });
  $("chatStop").addEventListener("click", () => send({ type: "stop" }));
}
