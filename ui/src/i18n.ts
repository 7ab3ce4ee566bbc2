// UI text in English and Simplified Chinese. Keys are checked by the type system.
import type { Language } from "./gen/types";

const en = {
  approveTitle: "Approve a tool call?",
  from: "from",
  risk: "risk",
  reason: "The model says",
  why: "Why you are asked",
  args: "Arguments",
  parts: "Command parts",
  diff: "What would change",
  diffCut: "more lines not shown",
  ruleTitle: "Rule to remember (for the scoped answers)",
  ruleId: "id",
  ruleTool: "tool",
  rulePrefix: "command prefix",
  ruleGlob: "path glob",
  allowOnce: "Allow once",
  allowSession: "Allow for this conversation",
  allowProject: "Allow for this project",
  allowGlobal: "Allow everywhere",
  deny: "Deny",
  denyReason: "Reason for the model (optional)",
  queued: "more waiting",
  timeLeft: "denied automatically in",
  escHint: "Esc or closing this window denies.",
  general: "General",
  rules: "Rules",
  hooks: "Hooks",
  trust: "Project trust",
  pairing: "Pairing",
  audit: "Audit log",
  save: "Save",
  saved: "Saved.",
} as const;

type Key = keyof typeof en;

const zh: Record<Key, string> = {
  approveTitle: "批准这个工具调用吗？",
  from: "来自",
  risk: "风险",
  reason: "模型的理由",
  why: "为什么需要你批准",
  args: "参数",
  parts: "命令组成",
  diff: "将要发生的改动",
  diffCut: "行未显示",
  ruleTitle: "要记住的规则（用于范围批准）",
  ruleId: "编号",
  ruleTool: "工具",
  rulePrefix: "命令前缀",
  ruleGlob: "路径通配",
  allowOnce: "仅允许这一次",
  allowSession: "本次对话内允许",
  allowProject: "在此项目中允许",
  allowGlobal: "在所有地方允许",
  deny: "拒绝",
  denyReason: "给模型的理由（可选）",
  queued: "个等待中",
  timeLeft: "自动拒绝倒计时",
  escHint: "按 Esc 或关闭窗口即为拒绝。",
  general: "常规",
  rules: "规则",
  hooks: "钩子",
  trust: "项目信任",
  pairing: "配对",
  audit: "审计日志",
  save: "保存",
  saved: "已保存。",
};

let current: Language = "en";

export function setLanguage(l: Language): void {
  current = l;
}

export function t(key: Key): string {
  return current === "zh" ? zh[key] : en[key];
}
