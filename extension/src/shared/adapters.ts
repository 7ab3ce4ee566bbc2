/**
 * Site adapters as data (DESIGN §7): for each chat site, CSS selectors for the assistant message,
 * the user message, what to leave out of a message (reasoning panes, buttons), the composer, the
 * send button and the "still streaming" signal, plus how to read the conversation id from the URL.
 *
 * Sites change their markup often, so every list is tried in order and then the generic
 * fallback's list; the user can replace any list from the options page without a new release
 * (`applyOverrides`). Nothing here touches the DOM; `content/dom.ts` does.
 */

export const SITE_IDS = [
  "deepseek",
  "chatgpt",
  "claude",
  "gemini",
  "kimi",
  "qwen",
  "doubao",
  "grok",
  "perplexity",
  "aistudio",
  "mistral",
  "openrouter",
] as const;

export type SiteId = (typeof SITE_IDS)[number];
export type AdapterId = SiteId | "generic";

/** The selector lists an adapter has; each is what the user may override. */
export const SELECTOR_FIELDS = ["assistantMessage", "userMessage", "exclude", "composer", "sendButton", "streaming"] as const;
export type SelectorField = (typeof SELECTOR_FIELDS)[number];

export type StreamDecoderId = "deepseek" | "chatgpt";

export interface SiteAdapter {
  id: AdapterId;
  name: string;
  /** Host names the adapter is for (exact match; the generic one has none). */
  hosts: string[];
  /** A whole assistant turn; its text minus `exclude` is what is parsed. */
  assistantMessage: string[];
  /** User turns: never parsed, and a candidate inside or around one is dropped. */
  userMessage: string[];
  /** Inside an assistant turn: reasoning panes, buttons, citations — left out of the text. */
  exclude: string[];
  composer: string[];
  sendButton: string[];
  /** Present anywhere in the document while a reply is still being generated. */
  streaming: string[];
  /** Regular expressions tried on `pathname + search`; group 1 is the conversation id. */
  conversation: string[];
  /** The MAIN-world decoder for the site's reply stream, where one exists. */
  decoder?: StreamDecoderId;
}

/** Left out of every message whatever the site: our own card and site chrome. */
export const ALWAYS_EXCLUDE = ["ground-link-card", "button", "svg", "style", "script", "[aria-hidden=\"true\"]"];

export const GENERIC: SiteAdapter = {
  id: "generic",
  name: "Generic",
  hosts: [],
  assistantMessage: [
    '[data-message-author-role="assistant"]',
    '[data-role="assistant"]',
    '[data-testid*="assistant" i]',
    ".assistant-message",
    ".markdown-body",
    ".markdown",
    ".prose",
  ],
  userMessage: ['[data-message-author-role="user"]', '[data-role="user"]', '[data-testid*="user-message" i]', ".user-message"],
  exclude: ['[class*="think" i]', '[class*="reasoning" i]', "details"],
  composer: [
    "textarea:not([disabled])",
    'div.ProseMirror[contenteditable="true"]',
    '[contenteditable="true"][role="textbox"]',
    '[data-lexical-editor="true"]',
    '[contenteditable="true"]',
  ],
  sendButton: [
    'button[data-testid="send-button"]',
    'button[aria-label*="send" i]',
    'button[aria-label*="发送"]',
    'button[type="submit"]',
  ],
  streaming: ['button[aria-label*="stop" i]', 'button[aria-label*="停止"]', '[data-testid*="stop" i]', '[aria-busy="true"]'],
  conversation: ["/(?:c|chat|s|app|prompts|search)/([\\w-]{6,})"],
};

export const ADAPTERS: Record<SiteId, SiteAdapter> = {
  deepseek: {
    id: "deepseek",
    name: "DeepSeek",
    hosts: ["chat.deepseek.com"],
    assistantMessage: [".ds-message:has(> .ds-markdown)", ".ds-message:has(.ds-markdown)"],
    userMessage: [".ds-message:not(:has(.ds-markdown))"],
    exclude: [".ds-think-content", ".ds-markdown-cite", "._74c0879"],
    composer: ["textarea#chat-input", 'textarea[placeholder*="DeepSeek"]'],
    sendButton: ['div[role="button"].ds-send-button', 'div[role="button"][aria-label="Send"]', 'div[role="button"]._7436101'],
    streaming: ['div[role="button"].ds-stop-button', '.ds-message .ds-markdown--streaming'],
    conversation: ["^/a/chat/s/([\\w-]+)"],
    decoder: "deepseek",
  },
  chatgpt: {
    id: "chatgpt",
    name: "ChatGPT",
    hosts: ["chatgpt.com", "chat.openai.com"],
    assistantMessage: ['[data-message-author-role="assistant"]'],
    userMessage: ['[data-message-author-role="user"]'],
    exclude: ['[data-testid="reasoning"]', ".text-token-text-secondary"],
    composer: ['#prompt-textarea[contenteditable="true"]', 'div.ProseMirror[contenteditable="true"]', 'textarea[name="prompt-textarea"]'],
    sendButton: ['button[data-testid="send-button"]', "button#composer-submit-button"],
    streaming: ['button[data-testid="stop-button"]'],
    conversation: ["^/(?:g/[\\w-]+/)?c/([\\w-]+)"],
    decoder: "chatgpt",
  },
  claude: {
    id: "claude",
    name: "Claude.ai",
    hosts: ["claude.ai"],
    assistantMessage: [".font-claude-response", ".font-claude-message"],
    userMessage: ['[data-testid="user-message"]'],
    exclude: ['[data-testid="thinking-block"]', ".thinking-block"],
    composer: ['div.ProseMirror[contenteditable="true"]', '[data-testid="chat-input"]'],
    sendButton: ['button[aria-label="Send message"]', 'button[aria-label="Send Message"]'],
    streaming: ['[data-is-streaming="true"]', 'button[aria-label="Stop response"]'],
    conversation: ["^/chat/([\\w-]+)"],
  },
  gemini: {
    id: "gemini",
    name: "Gemini",
    hosts: ["gemini.google.com"],
    assistantMessage: ["model-response"],
    userMessage: ["user-query"],
    exclude: ["model-thoughts", ".thoughts-container"],
    composer: ['rich-textarea .ql-editor[contenteditable="true"]', '.ql-editor[contenteditable="true"]'],
    sendButton: ["button.send-button:not(.stop)", 'button[aria-label="Send message"]'],
    streaming: ["button.send-button.stop", 'button[aria-label="Stop response"]'],
    conversation: ["^/(?:u/\\d+/)?(?:app|gem/[\\w-]+)/([\\w-]+)"],
  },
  kimi: {
    id: "kimi",
    name: "Kimi",
    hosts: ["www.kimi.com", "kimi.com", "kimi.moonshot.cn"],
    assistantMessage: [".chat-content-item-assistant"],
    userMessage: [".chat-content-item-user"],
    exclude: [".thinking-container", ".toolcall-container"],
    composer: ['.chat-input-editor[contenteditable="true"]', '[data-lexical-editor="true"]'],
    sendButton: [".send-button-container:not(.disabled)", ".send-button"],
    streaming: [".send-button-container.stop", ".segment-assistant-actions-loading"],
    conversation: ["^/chat/([\\w-]+)"],
  },
  qwen: {
    id: "qwen",
    name: "Qwen",
    hosts: ["chat.qwen.ai"],
    assistantMessage: [".qwen-chat-message-assistant"],
    userMessage: [".qwen-chat-message-user"],
    exclude: [".qwen-chat-thinking-tool-status-card", ".qwen-chat-thinking"],
    composer: ["textarea#chat-input"],
    sendButton: ["button#send-message-button"],
    streaming: ["button.stop-button", "#stop-message-button"],
    conversation: ["^/c/([\\w-]+)"],
  },
  doubao: {
    id: "doubao",
    name: "Doubao",
    hosts: ["www.doubao.com"],
    assistantMessage: ['[data-testid="receive_message"]'],
    userMessage: ['[data-testid="send_message"]'],
    exclude: ['[data-testid="think_block"]', '[data-testid="suggest_message_list"]'],
    composer: ['textarea[data-testid="chat_input_input"]'],
    sendButton: ['button[data-testid="chat_input_send_button"]', "button#flow-end-msg-send"],
    streaming: ['[data-testid="chat_input_local_break_button"]'],
    conversation: ["^/chat/([\\w-]+)"],
  },
  grok: {
    id: "grok",
    name: "Grok",
    hosts: ["grok.com"],
    assistantMessage: ['div[id^="response-"].items-start'],
    userMessage: ['div[id^="response-"].items-end'],
    exclude: [".thinking-container"],
    composer: ['textarea[aria-label="Ask Grok anything"]', 'div.tiptap.ProseMirror[contenteditable="true"]'],
    sendButton: ['button[type="submit"][aria-label="Submit"]'],
    streaming: ['button[aria-label="Stop model response"]'],
    conversation: ["^/c/([\\w-]+)"],
  },
  perplexity: {
    id: "perplexity",
    name: "Perplexity",
    hosts: ["www.perplexity.ai", "perplexity.ai"],
    assistantMessage: ['div[id^="markdown-content-"]'],
    userMessage: ['[data-testid="user-query"]'],
    exclude: [".citation", '[data-testid="sources"]', "details", ".reasoning"],
    composer: ['#ask-input[contenteditable="true"]', "textarea#ask-input"],
    sendButton: ['button[data-testid="submit-button"]', 'button[aria-label="Submit"]'],
    streaming: ['button[data-testid="stop-generating-response-button"]'],
    conversation: ["^/search/([\\w.-]+)"],
  },
  aistudio: {
    id: "aistudio",
    name: "Google AI Studio",
    hosts: ["aistudio.google.com"],
    assistantMessage: ["ms-chat-turn .chat-turn-container.model"],
    userMessage: ["ms-chat-turn .chat-turn-container.user"],
    exclude: ["ms-thought-chunk", ".actions-container"],
    composer: ["ms-autosize-textarea textarea", 'textarea[aria-label*="prompt" i]'],
    sendButton: ['run-button button[aria-label="Run"]', 'button[aria-label="Run"]'],
    streaming: ['run-button button[aria-label="Stop"]', "ms-chat-turn .turn-loading"],
    conversation: ["^/prompts/([\\w-]+)"],
  },
  mistral: {
    id: "mistral",
    name: "Mistral",
    hosts: ["chat.mistral.ai"],
    assistantMessage: ['div[data-message-author-role="assistant"]'],
    userMessage: ['div[data-message-author-role="user"]'],
    exclude: ['[data-message-part-type="reasoning"]'],
    composer: ['div.ProseMirror[contenteditable="true"]', 'textarea[name="message.text"]'],
    sendButton: ['button[type="submit"][aria-label="Send question"]'],
    streaming: ['button[aria-label="Stop generation"]'],
    conversation: ["^/chat/([\\w-]+)"],
  },
  openrouter: {
    id: "openrouter",
    name: "OpenRouter",
    hosts: ["openrouter.ai"],
    assistantMessage: ['[data-testid="assistant-message"]'],
    userMessage: ['[data-testid="user-message"]'],
    exclude: ['[data-testid="reasoning"]'],
    composer: ['textarea[placeholder^="Start a message"]', '[data-testid="chat-input"] textarea'],
    sendButton: ['button[aria-label="Send message"]', 'button[aria-label="Send"]'],
    streaming: ['button[aria-label="Stop generating"]', 'button[aria-label="Stop"]'],
    conversation: ["[?&]room=([\\w-]+)", "^/chat/([\\w-]+)"],
  },
};

export type SelectorOverrides = Partial<Record<SelectorField, string[]>>;
export type AdapterOverrides = Partial<Record<AdapterId, SelectorOverrides>>;

/** The adapter for a host name, or `null` when the host is not a supported chat site. */
export function adapterForHost(host: string): SiteAdapter | null {
  const h = host.toLowerCase();
  for (const id of SITE_IDS) {
    if (ADAPTERS[id].hosts.includes(h)) return ADAPTERS[id];
  }
  return null;
}

/** An adapter with the user's selector lists in place of the shipped ones; empty lists are ignored. */
export function applyOverrides(adapter: SiteAdapter, overrides: AdapterOverrides | undefined): SiteAdapter {
  const o = overrides?.[adapter.id];
  if (!o) return adapter;
  const out: SiteAdapter = { ...adapter };
  for (const f of SELECTOR_FIELDS) {
    const list = o[f];
    if (Array.isArray(list) && list.length > 0) out[f] = list.filter((s) => typeof s === "string" && s.trim() !== "");
  }
  return out;
}

/**
 * Checks a user's overrides before they are saved: known site ids and fields, lists of selector
 * strings that the browser can parse (`isValid` is `document.querySelector`-based in the options
 * page and injected in tests). Returns the problems, each saying what and where.
 */
export function validateOverrides(value: unknown, isValid: (selector: string) => boolean): string[] {
  const problems: string[] = [];
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return ['overrides must be a JSON object keyed by site id, e.g. {"deepseek": {"composer": ["textarea"]}}'];
  }
  for (const [site, fields] of Object.entries(value as Record<string, unknown>)) {
    if (site !== "generic" && !(SITE_IDS as readonly string[]).includes(site)) {
      problems.push(`unknown site "${site}"; use one of ${[...SITE_IDS, "generic"].join(", ")}`);
      continue;
    }
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      problems.push(`"${site}" must map field names to lists of selectors`);
      continue;
    }
    for (const [field, list] of Object.entries(fields as Record<string, unknown>)) {
      if (!(SELECTOR_FIELDS as readonly string[]).includes(field)) {
        problems.push(`"${site}.${field}" is not a selector field; use one of ${SELECTOR_FIELDS.join(", ")}`);
        continue;
      }
      if (!Array.isArray(list) || list.some((s) => typeof s !== "string")) {
        problems.push(`"${site}.${field}" must be a list of selector strings`);
        continue;
      }
      for (const s of list as string[]) {
        if (!isValid(s)) problems.push(`"${site}.${field}": ${JSON.stringify(s)} is not a valid CSS selector`);
      }
    }
  }
  return problems;
}

/** All host names with an adapter; the manifest's host permissions and content-script matches. */
export function allHosts(): string[] {
  return SITE_IDS.flatMap((id) => ADAPTERS[id].hosts);
}
