// UI text in English and Simplified Chinese. `en` is the reference: `zh` must have every one of
// its keys (the type system checks), and a `{name}` in a text is a value that `t` must be given
// (checked at compile time from the English text; i18n.test.ts checks that zh uses the same
// names). Values such as paths, rule JSON, tool names and mode names are passed in or kept
// as they are in both languages; messages from the engine are shown as they arrive.
import type { Language } from "./gen/types";

const en = {
  // ---- approval dialog
  from: "from {chat}",
  risk: "risk: {risk}",
  reason: "The model says",
  why: "Why you are asked",
  args: "Arguments",
  parts: "Command parts",
  page: "In the browser",
  diff: "What would change",
  diffCut: "{n} more lines not shown",
  ruleTitle: "Rule to remember (for the scoped answers)",
  ruleId: "id",
  ruleTool: "tool",
  rulePrefix: "command prefix",
  ruleGlob: "path glob",
  ruleOrigin: "site (browser tools)",
  allowOnce: "Allow once",
  allowSession: "Allow for this conversation",
  allowProject: "Allow for this project",
  allowGlobal: "Allow everywhere",
  deny: "Deny",
  denyReason: "Reason for the model (optional)",
  queued: "+{n} more waiting",
  timeLeft: "denied automatically in",
  escHint: "Esc or closing this window denies.",
  networkOff: "Network: off. This command cannot connect anywhere.",
  networkAllow: "Let it use the network (for the scope you allow)",
  approvalLoadFailed: "ground-link could not load the pending call: {error}",

  // ---- settings window: tabs and shell
  general: "General",
  rules: "Rules",
  hooks: "Hooks",
  trust: "Project trust",
  pairing: "Pairing",
  audit: "Audit log",
  settingsTitle: "ground-link — settings",
  settingsLoadFailed: "ground-link could not load its settings: {error}",
  save: "Save",
  saved: "Saved.",
  saving: "saving…",

  // ---- general
  statusRunning: "running on 127.0.0.1:{port}",
  extConnected: "extension connected",
  extWaiting: "waiting for the extension",
  statusPending: "{n} waiting for approval",
  statusPaused: "paused: nothing runs",
  statusStopped: "not running: {problem}",
  statusStarting: "starting",
  rootLabel: "Sandbox folder",
  choose: "Choose…",
  open: "Open",
  sandboxLabel: "Sandbox mode",
  sandboxDefault: "workspace-write (default)",
  modeLabel: "Approval mode",
  modeAsk: "ask (default)",
  modeAuto: "auto: moderate calls run without asking",
  portLabel: "Port",
  timeoutLabel: "Approval timeout (s)",
  languageLabel: "Language",
  langEn: "English",
  langZh: "简体中文",
  autostartLabel: "Start at login",
  whereThings: "Global rules: {global} · managed: {managed} · audit: {audit} · diagnostic log: {log} · version {version}",
  rootEmpty: "Pick the folder the model may work in.",
  rootUses: "uses {path}",
  rootWarning: "warning: {text}",

  // ---- rules
  rulesBroken: "This file does not load: {error}. The last good version stays in force.",
  fileMissing: " (does not exist yet)",
  fileUntrusted: " · untrusted: its allow rules and hooks are ignored",
  fileReadOnly: " · read-only",
  matchCommand: "command {prefix}",
  matchPath: "path {glob}",
  matchOrigin: "site {origin}",
  matchNote: " ({match})",
  listSep: ", ",
  edit: "edit",
  delete: "delete",
  noRules: "no rules",
  saveRule: "Save rule {id}",
  inForce: "Saved; in force now.",
  addRule: "Add rule",
  fileLabel: "File",
  layerGlobal: "global (all projects)",
  layerProject: "project (.ground-link/permissions.json)",
  layerManaged: "managed (administrator, read-only)",
  ruleFormTitle: "Add or edit a rule",
  fieldAction: "action",
  fieldTool: "tool (name, alias or *)",
  fieldIdOptional: "id (optional)",
  fieldDescription: "description",
  ruleTextLabel: "Or a shorthand / JSON rule",
  add: "Add",
  checkTitle: "Test a call",
  checkRun: "Check (runs nothing)",
  editText: "Edit the file's text",
  saveText: "Save text",
  ruleTextInvalid: "write a shorthand like {shorthand} or a JSON rule like {json}",
  decisionHead: "{verdict} (risk {risk}): {reason}",
  decisionRule: "rule {id} from the {layer} file",

  // ---- hooks
  layerManagedShort: "managed (read-only)",
  hookBefore: "{id} (before {tools}): ",
  hookAfter: "{id} (after {tools}): ",
  hookMeta: " · {ms} ms · on failure {onFailure} ",
  runNow: "run now",
  noHooks: "no hooks",
  hookFormTitle: "Add a hook",
  fieldPhase: "phase",
  phasePre: "PreToolUse (may block)",
  fieldTools: "tools (* or names joined by |)",
  fieldCommand: "command (sh -c, in the sandbox)",
  fieldTimeoutMs: "timeout (ms)",
  fieldOnFailure: "on failure",
  addHook: "Add hook",
  tryHook: "Run this one now",

  // ---- trust
  trustDo: "Trust this file as it is",
  trustExplain: "The project file's deny and ask rules always apply. Its allow rules and hooks apply only while its content is what you trusted here.",
  trustNoFile: "This project has no rule file.",
  trustYes: "Trusted: the file is as you last approved it.",
  trustNo: "Not trusted: review what changed.",
  trustBroken: " The file on disk is broken: {error}",

  // ---- pairing
  bridgeLabel: "Bridge",
  noExtension: "no extension in the last minute",
  notRunning: "not running",
  tokenLabel: "Token",
  show: "Show",
  copy: "Copy",
  regenerate: "Regenerate",
  copied: "Copied. Paste it into the extension's options.",
  rotated: "New token: pair the extension again.",
  keptIn: "Kept in {place}.",
  keptWarning: " Warning: {warning}",
  pairedTitle: "Extensions that presented the token",
  pairedSeen: "{origin} · last seen {time}",
  pairedNone: "none yet (regenerating the token un-pairs every extension)",

  // ---- audit
  filterLabel: "Filter",
  filterHint: "tool, chat, path, reason…",
  anyStatus: "any status",
  verifyChain: "Verify the chain",
  colTime: "time",
  colTool: "tool",
  colStatus: "status",
  colDecision: "decision",
  colAnswer: "answer",
  colArgs: "args",
  colChat: "chat",
  auditCount: "{shown} of {matched} matching entries, newest first ({dir})",
} as const;

type En = typeof en;
export type Key = keyof En;

const zh: Record<Key, string> = {
  from: "来自 {chat}",
  risk: "风险：{risk}",
  reason: "模型的理由",
  why: "为什么需要你批准",
  args: "参数",
  parts: "命令组成",
  page: "在浏览器中",
  diff: "将要发生的改动",
  diffCut: "还有 {n} 行未显示",
  ruleTitle: "要记住的规则（用于范围批准）",
  ruleId: "编号",
  ruleTool: "工具",
  rulePrefix: "命令前缀",
  ruleGlob: "路径通配",
  ruleOrigin: "网站（浏览器工具）",
  allowOnce: "仅允许这一次",
  allowSession: "本次对话内允许",
  allowProject: "在此项目中允许",
  allowGlobal: "在所有地方允许",
  deny: "拒绝",
  denyReason: "给模型的理由（可选）",
  queued: "+{n} 个等待中",
  timeLeft: "自动拒绝倒计时",
  escHint: "按 Esc 或关闭窗口即为拒绝。",
  networkOff: "网络：关闭。此命令无法连接任何地方。",
  networkAllow: "允许它联网（在你选择的范围内）",
  approvalLoadFailed: "ground-link 无法加载待批准的调用：{error}",

  general: "常规",
  rules: "规则",
  hooks: "钩子",
  trust: "项目信任",
  pairing: "配对",
  audit: "审计日志",
  settingsTitle: "ground-link — 设置",
  settingsLoadFailed: "ground-link 无法加载设置：{error}",
  save: "保存",
  saved: "已保存。",
  saving: "正在保存…",

  statusRunning: "运行于 127.0.0.1:{port}",
  extConnected: "扩展已连接",
  extWaiting: "等待扩展连接",
  statusPending: "{n} 个调用待批准",
  statusPaused: "已暂停：不执行任何调用",
  statusStopped: "未运行：{problem}",
  statusStarting: "正在启动",
  rootLabel: "沙箱目录",
  choose: "选择…",
  open: "打开",
  sandboxLabel: "沙箱模式",
  sandboxDefault: "workspace-write（默认）",
  modeLabel: "审批模式",
  modeAsk: "ask（默认）",
  modeAuto: "auto：中等风险的调用直接执行，不再询问",
  portLabel: "端口",
  timeoutLabel: "审批超时（秒）",
  languageLabel: "语言",
  langEn: "English",
  langZh: "简体中文",
  autostartLabel: "登录时启动",
  whereThings: "全局规则：{global} · 托管规则：{managed} · 审计日志：{audit} · 诊断日志：{log} · 版本 {version}",
  rootEmpty: "请选择允许模型工作的目录。",
  rootUses: "将使用 {path}",
  rootWarning: "警告：{text}",

  rulesBroken: "此文件无法加载：{error}。上一个有效版本仍然生效。",
  fileMissing: "（尚不存在）",
  fileUntrusted: " · 未信任：其中的 allow 规则和钩子不生效",
  fileReadOnly: " · 只读",
  matchCommand: "命令 {prefix}",
  matchPath: "路径 {glob}",
  matchOrigin: "网站 {origin}",
  matchNote: "（{match}）",
  listSep: "，",
  edit: "编辑",
  delete: "删除",
  noRules: "没有规则",
  saveRule: "保存规则 {id}",
  inForce: "已保存，立即生效。",
  addRule: "添加规则",
  fileLabel: "文件",
  layerGlobal: "global（所有项目）",
  layerProject: "project（.ground-link/permissions.json）",
  layerManaged: "managed（管理员设置，只读）",
  ruleFormTitle: "添加或编辑规则",
  fieldAction: "动作",
  fieldTool: "工具（名称、别名或 *）",
  fieldIdOptional: "编号（可选）",
  fieldDescription: "说明",
  ruleTextLabel: "或填写简写 / JSON 规则",
  add: "添加",
  checkTitle: "测试一个调用",
  checkRun: "检查（不会执行）",
  editText: "直接编辑文件文本",
  saveText: "保存文本",
  ruleTextInvalid: "请填写简写规则（如 {shorthand}）或 JSON 规则（如 {json}）",
  decisionHead: "{verdict}（风险 {risk}）：{reason}",
  decisionRule: "规则 {id}，来自 {layer} 文件",

  layerManagedShort: "managed（只读）",
  hookBefore: "{id}（{tools} 执行前）：",
  hookAfter: "{id}（{tools} 执行后）：",
  hookMeta: " · {ms} 毫秒 · 失败时 {onFailure} ",
  runNow: "立即运行",
  noHooks: "没有钩子",
  hookFormTitle: "添加钩子",
  fieldPhase: "阶段",
  phasePre: "PreToolUse（可拦截调用）",
  fieldTools: "工具（* 或用 | 分隔的名称）",
  fieldCommand: "命令（在沙箱中用 sh -c 运行）",
  fieldTimeoutMs: "超时（毫秒）",
  fieldOnFailure: "失败时",
  addHook: "添加钩子",
  tryHook: "立即试运行",

  trustDo: "按当前内容信任此文件",
  trustExplain: "项目文件中的 deny 和 ask 规则始终生效；其 allow 规则和钩子只在文件内容与你在此处信任的版本一致时生效。",
  trustNoFile: "此项目没有规则文件。",
  trustYes: "已信任：文件与你上次批准时一致。",
  trustNo: "未信任：请查看改动。",
  trustBroken: "磁盘上的文件已损坏：{error}",

  bridgeLabel: "桥接服务",
  noExtension: "最近一分钟内没有扩展连接",
  notRunning: "未运行",
  tokenLabel: "令牌",
  show: "显示",
  copy: "复制",
  regenerate: "重新生成",
  copied: "已复制。请粘贴到扩展的选项页中。",
  rotated: "已生成新令牌：请重新配对扩展。",
  keptIn: "保存在 {place}。",
  keptWarning: "警告：{warning}",
  pairedTitle: "出示过此令牌的扩展",
  pairedSeen: "{origin} · 最近活动：{time}",
  pairedNone: "暂无（重新生成令牌会解除所有扩展的配对）",

  filterLabel: "筛选",
  filterHint: "工具、对话、路径、理由…",
  anyStatus: "任意状态",
  verifyChain: "校验哈希链",
  colTime: "时间",
  colTool: "工具",
  colStatus: "状态",
  colDecision: "判定",
  colAnswer: "回答",
  colArgs: "参数",
  colChat: "对话",
  auditCount: "共 {matched} 条匹配，显示 {shown} 条，最新的在前（{dir}）",
};

/** Both tables, for tests that compare what is rendered against them. */
export const TEXTS: Readonly<Record<Language, Readonly<Record<Key, string>>>> = { en, zh };

/** The `{name}`s in a text, as a union of names (`never` when there are none). */
type Params<S extends string> = S extends `${string}{${infer P}}${infer Rest}` ? P | Params<Rest> : never;

/** What `t(key, …)` takes after the key: nothing, or one value per `{name}` of the text. */
export type Vars<K extends Key> = [Params<En[K]>] extends [never] ? [] : [Record<Params<En[K]>, string | number>];

let current: Language = "en";

export function setLanguage(l: Language): void {
  current = l;
  if (typeof document !== "undefined") document.documentElement.lang = l === "zh" ? "zh-CN" : "en";
}

export function language(): Language {
  return current;
}

/** The locale for dates and numbers: zh-CN in Chinese, the system's own otherwise. */
export function locale(): string | undefined {
  return current === "zh" ? "zh-CN" : undefined;
}

/** Fills `{name}`s from `vars`; a name without a value stays visible as `{name}`. */
export function format(text: string, vars: Record<string, string | number> = {}): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (Object.hasOwn(vars, name) ? String(vars[name]) : whole));
}

export function t<K extends Key>(key: K, ...vars: Vars<K>): string {
  return format(TEXTS[current][key], vars[0]);
}
