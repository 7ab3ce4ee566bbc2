// The approval dialog. It shows the oldest pending call; Escape and closing the window deny;
// nothing is approved by default, by Enter, or by focus loss. Keystrokes meant for another
// window never approve (DESIGN §5.4): the allow buttons are disabled, and ignore activation,
// for ARM_MS after the dialog shows a call or regains focus, and focus starts in the deny
// reason, so Tab + Space/Enter typed into the chat cannot reach an allow button.
import "../style.css";
import { add, byId, clear, h } from "../dom";
import { setLanguage, t } from "../i18n";
import { approval, message } from "../ipc";
import type { ApprovalView, DialogState } from "../gen/types";
import { SCOPE_BUTTONS, allowAnswer, countdown, denyAnswer, formFromRule, ruleFromForm } from "./logic";

let shown: ApprovalView | null = null;
let busy = false;
/** How long the allow buttons stay disabled after the dialog appears or regains focus. */
export const ARM_MS = 750;
/** performance.now() from which an allow may be taken. */
let armedAt = 0;
let armTimer: number | undefined;

function allowButtons(): HTMLButtonElement[] {
  return Array.from(document.querySelectorAll<HTMLButtonElement>("button.allow"));
}

/** Disable the allow buttons for ARM_MS (again, if they were armed). */
function disarm(): void {
  armedAt = performance.now() + ARM_MS;
  for (const b of allowButtons()) b.disabled = true;
  window.clearTimeout(armTimer);
  armTimer = window.setTimeout(() => {
    for (const b of allowButtons()) b.disabled = false;
  }, ARM_MS);
}

function field(id: string, label: string, value: string): HTMLElement {
  return h("label", { class: "field" }, h("span", { text: label }), h("input", { id, value, spellcheck: "false", autocomplete: "off" }));
}

function value(id: string): string {
  return byId<HTMLInputElement>(id).value;
}

function render(state: DialogState): void {
  const root = byId("app");
  const v = state.current ?? null;
  if (v && shown && v.callId === shown.callId) {
    byId("queued").textContent = state.queued > 0 ? t("queued", { n: state.queued }) : "";
    return; // same call: keep what the person typed
  }
  shown = v;
  clear(root);
  if (!v) return;
  setLanguage(state.language);
  const pairing = v.pairing ?? null;
  document.title = `ground-link — ${v.tool ?? t("pairTitle")}`;
  const scoped = v.scopes.some((s) => s !== "once");
  const form = formFromRule(v.proposedRule);
  add(root,
    h("header", { class: "head" },
      pairing !== null
        ? h("h1", {}, h("span", { id: "tool", text: t("pairTitle") }))
        : h("h1", {}, h("span", { id: "tool", text: v.tool ?? "" }), " ", h("span", { id: "risk", class: `risk risk-${v.risk}`, text: t("risk", { risk: v.risk }) })),
      h("div", { class: "meta" },
        v.chat ? h("span", { id: "chat", text: t("from", { chat: v.chat }) }) : null,
        h("span", { id: "queued", text: state.queued > 0 ? t("queued", { n: state.queued }) : "" }),
        h("span", { class: "countdown" }, `${t("timeLeft")} `, h("b", { id: "countdown", text: countdown(v.deadlineMs, Date.now()) })),
      ),
    ),
    v.reason ? h("section", {}, h("h2", { text: t("reason") }), h("p", { id: "reason", text: v.reason })) : null,
    pairing !== null
      ? h("section", {}, h("p", { id: "why", text: t("pairQuestion", { origin: pairing }) }))
      : h("section", {}, h("h2", { text: t("why") }), h("p", { id: "why", text: v.why })),
    pairing !== null
      ? null
      : h("section", {}, h("h2", { text: t("args") }),
          h("dl", { id: "args" }, ...v.args.flatMap((a) => [h("dt", { text: a.name }), h("dd", {}, h("pre", { text: a.value }))]))),
    v.page ? h("section", {}, h("h2", { text: t("page") }), h("p", { id: "page", text: v.page })) : null,
    v.commandParts.length > 0
      ? h("section", {}, h("h2", { text: t("parts") }), h("ul", { id: "parts" }, ...v.commandParts.map((p) => h("li", {}, h("code", { text: p })))))
      : null,
    ...v.blocks.map((b) =>
      h("section", {}, h("h2", { text: b.title }),
        h("pre", { class: "block" }, ...b.lines.map((l) => h("div", { class: "block-line", text: l || " " }))),
        b.cutLines > 0 ? h("p", { class: "muted", text: t("diffCut", { n: b.cutLines }) }) : null)),
    v.diff.length > 0
      ? h("section", {}, h("h2", { text: t("diff") }),
          h("pre", { id: "diff", class: "diff" }, ...v.diff.map((l) => h("div", { class: `d-${l.kind}`, text: l.text || " " }))),
          v.diffCut > 0 ? h("p", { class: "muted", text: t("diffCut", { n: v.diffCut }) }) : null)
      : null,
    scoped
      ? h("section", { class: "rule" }, h("h2", { text: t("ruleTitle") }),
          h("div", { class: "grid" },
            field("rule-id", t("ruleId"), form.id),
            field("rule-tool", t("ruleTool"), form.tool),
            field("rule-prefix", t("rulePrefix"), form.commandPrefix),
            field("rule-glob", t("ruleGlob"), form.pathGlob),
            ...(form.origin || v.page ? [field("rule-origin", t("ruleOrigin"), form.origin)] : [])))
      : null,
    // Off unless the person switches it on; the switch itself approves nothing.
    v.networkOff
      ? h("section", { class: "network" },
          h("p", { id: "network", text: t("networkOff") }),
          h("label", { class: "switch" }, h("input", { id: "network-on", type: "checkbox" }), h("span", { text: t("networkAllow") })))
      : null,
    h("p", { id: "error", class: "error", role: "alert" }),
    h("footer", { class: "actions" },
      h("div", { class: "allow" }, ...SCOPE_BUTTONS.filter((b) => v.scopes.includes(b.scope)).map((b) =>
        h("button", { id: b.id, type: "button", class: "btn allow", disabled: true, text: pairing !== null ? t("pairAllow") : t(b.label), onclick: () => void answerAllow(b.scope) }))),
      h("div", { class: "deny" },
        h("input", { id: "deny-reason", placeholder: t("denyReason"), autocomplete: "off" }),
        h("button", { id: "deny", type: "button", class: "btn deny", text: pairing !== null ? t("pairRefuse") : t("deny"), onclick: () => void answerDeny() })),
      h("p", { class: "muted", text: t("escHint") }),
    ),
  );
  const reason = byId<HTMLInputElement>("deny-reason");
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter") void answerDeny();
  });
  // Focus starts on the way to deny, never on an approving control.
  reason.focus();
  disarm();
  void approval.rendered(v.callId).catch(() => undefined);
}

async function send(answer: Parameters<typeof approval.answer>[1]): Promise<void> {
  if (!shown || busy) return;
  busy = true;
  try {
    await approval.answer(shown.callId, answer);
  } catch (e) {
    const el = document.getElementById("error");
    if (el) el.textContent = message(e);
  } finally {
    busy = false;
  }
}

async function answerAllow(scope: (typeof SCOPE_BUTTONS)[number]["scope"]): Promise<void> {
  // An activation that lands before the buttons were armed was meant for something else.
  if (!shown || performance.now() < armedAt) return;
  const rule = scope === "once" ? null : ruleFromForm(shown.proposedRule, {
    id: value("rule-id"), tool: value("rule-tool"), commandPrefix: value("rule-prefix"), pathGlob: value("rule-glob"),
    // Shown for browser calls only; any other rule has no origin to keep.
    origin: document.getElementById("rule-origin") ? value("rule-origin") : "",
  });
  const network = (document.getElementById("network-on") as HTMLInputElement | null)?.checked ?? false;
  await send(allowAnswer(scope, rule, network));
}

async function answerDeny(): Promise<void> {
  const reason = document.getElementById("deny-reason") as HTMLInputElement | null;
  await send(denyAnswer(reason?.value ?? ""));
}

// Coming back to the dialog (a click on it, Alt+Tab, the window shown again) disarms anew.
window.addEventListener("focus", disarm);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") disarm();
});

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") {
    e.preventDefault();
    void answerDeny();
  }
});

// Timers here are the window's own (the same functions in a webview): they end with the
// document, so nothing runs after its page is gone (jsdom in the tests clears them on close).
window.setInterval(() => {
  const el = document.getElementById("countdown");
  if (el && shown) el.textContent = countdown(shown.deadlineMs, Date.now());
}, 500);

approval.subscribe(render).then(render).catch((e) => {
  byId("app").textContent = t("approvalLoadFailed", { error: message(e) });
});
