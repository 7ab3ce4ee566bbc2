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
  "qianwen",
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
  /**
   * Hosts the extension reaches only after the person grants an optional permission (Grok on
   * x.com): not in the manifest's content scripts, registered at run time instead.
   */
  optionalHosts?: string[];
  /**
   * Per host, a regular expression the path must match for the adapter to act (x.com is a
   * single-page app: the script is there on all of X, but only `/i/grok` is a chat).
   */
  pathsByHost?: Record<string, string>;
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
    '[data-message-role="assistant"]',
    '[data-role="assistant"]',
    '[data-testid*="assistant" i]',
    ".assistant-message",
    ".markdown-body",
    ".markdown",
    ".prose",
  ],
  userMessage: ['[data-message-author-role="user"]', '[data-message-role="user"]', '[data-role="user"]', '[data-testid*="user-message" i]', ".user-message"],
  exclude: ['[class*="think" i]', '[class*="reasoning" i]', "details"],
  composer: [
    "textarea:not([disabled])",
    'div.ProseMirror[contenteditable="true"]',
    '[contenteditable="true"][role="textbox"]',
    '[data-lexical-editor="true"]',
    '[data-slate-editor="true"]',
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

/**
 * Where each selector comes from is in extension/README.md's site table (peers' current code,
 * capture notes of live pages, or issue 14 where nothing confirmed it). Language-independent
 * attributes and structure come first; an English or Chinese label is only ever a last resort.
 */
export const ADAPTERS: Record<SiteId, SiteAdapter> = {
  deepseek: {
    id: "deepseek",
    name: "DeepSeek",
    hosts: ["chat.deepseek.com"],
    assistantMessage: [".ds-message:has(> .ds-markdown)", ".ds-message:has(.ds-markdown)"],
    userMessage: [".ds-message:not(:has(.ds-markdown))"],
    exclude: [".ds-think-content", ".ds-markdown-cite", "._74c0879"],
    // today: a textarea with no id, `name="search"`; the older `#chat-input` stays as a fallback
    composer: ['textarea[name="search"]', "textarea#chat-input", 'textarea[placeholder*="DeepSeek"]'],
    // today one round `div[role=button]` is send and stop at once (only its icon changes)
    sendButton: [
      'div[role="button"].ds-button--primary.ds-button--circle',
      'div[role="button"].ds-send-button',
      'div[role="button"]._7436101',
    ],
    // …so "streaming" is that control live while the composer is empty: idle, an empty composer
    // leaves it `ds-button--disabled`
    streaming: [
      'body:has(textarea[name="search"]:placeholder-shown) div[role="button"].ds-button--primary.ds-button--circle:not(.ds-button--disabled)',
      'div[role="button"].ds-stop-button',
      ".ds-message .ds-markdown--streaming",
    ],
    conversation: ["^/a/chat/s/([\\w-]+)"],
    decoder: "deepseek",
  },
  chatgpt: {
    id: "chatgpt",
    name: "ChatGPT",
    hosts: ["chatgpt.com", "chat.openai.com"],
    // two UIs at once: the ProseMirror one (`data-message-author-role`) and the rebuilt one
    // (`ol[data-conversation-transcript] > li[data-message-role]`)
    assistantMessage: ['[data-message-author-role="assistant"]', 'ol[data-conversation-transcript] li[data-message-role="assistant"]', 'li[data-message-role="assistant"]'],
    userMessage: ['[data-message-author-role="user"]', 'li[data-message-role="user"]'],
    exclude: [
      '[data-testid="reasoning"]',
      ".text-token-text-secondary",
      "h4[data-message-attribution]",
      "[data-assistant-placeholder-slot]",
      "[data-message-content-controls]",
      "[data-assistant-message-actions]",
    ],
    composer: [
      '#prompt-textarea[contenteditable="true"]',
      'div.ProseMirror[contenteditable="true"]',
      'textarea#mobile-composer-prompt',
      'textarea[name="prompt"][data-mobile-composer-prompt]',
      'textarea[name="prompt-textarea"]',
    ],
    sendButton: ['button[data-testid="send-button"]', "button#composer-submit-button", "button[data-composer-submit]:not([data-stop-generating])"],
    streaming: ['button[data-testid="stop-button"]', "button[data-composer-submit][data-stop-generating]", "li[data-message-streaming]"],
    // `/c/<id>`, `/g/<gpt>/c/<id>`, signed-out `/uc/<id>`; never the `/c/WEB:<client id>` a new
    // chat shows for a moment after its first message
    conversation: ["^/(?:g/[\\w-]+/)?u?c/([\\w-]+)(?![\\w:-])"],
    decoder: "chatgpt",
  },
  claude: {
    id: "claude",
    name: "Claude.ai",
    hosts: ["claude.ai"],
    // a reply sits in its `[data-is-streaming]` turn; the artifact viewer carries the same
    // font class but sits outside any turn
    assistantMessage: [
      "[data-is-streaming] .font-claude-response",
      '.font-claude-response:not([id*="artifact" i], [class*="artifact" i], [id*="artifact" i] *, [class*="artifact" i] *)',
      ".font-claude-message",
    ],
    userMessage: ['[data-testid="user-message"]'],
    exclude: ['[data-testid="thinking-block"]', ".thinking-block"],
    composer: ['div.ProseMirror[contenteditable="true"]', '[data-testid="chat-input"]'],
    sendButton: ['fieldset button[type="submit"]', 'button[data-testid="chat-input-send"]', 'button[aria-label="Send message"]'],
    streaming: ['[data-is-streaming="true"]'],
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
    // the page is often not in English: icon names and classes, never labels
    sendButton: ["button.send-button:not(.stop)", 'button:has(mat-icon[fonticon="send"])'],
    streaming: ["button.send-button.stop", 'button:has(mat-icon[fonticon="stop"])'],
    conversation: ["^/(?:u/\\d+/)?(?:app|gem/[\\w-]+)/([\\w-]+)"],
  },
  kimi: {
    id: "kimi",
    name: "Kimi",
    hosts: ["www.kimi.com", "kimi.com", "www.kimi.ai", "kimi.moonshot.cn"],
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
    composer: ["textarea.message-input-textarea", "textarea#chat-input"],
    sendButton: [".message-input-right-button-send button", '.message-input-right-button-send [role="button"]', "button#send-message-button"],
    streaming: ["button.stop-button", "#stop-message-button"],
    conversation: ["^/c/([\\w-]+)"],
  },
  qianwen: {
    id: "qianwen",
    name: "Qianwen (千问)",
    hosts: ["www.qianwen.com", "qianwen.com"],
    // a question card is `message-card-wrap question`; the answer card's class is hashed
    // (`message-card-xxxx`), so the answer is a message card that is not a question
    assistantMessage: ['[class*="message-card"]:not(.question):not(:has(.question))'],
    userMessage: ['[class*="message-card-wrap"].question'],
    exclude: ['[data-card_name="bar_workflow"]'],
    composer: ['[data-slate-editor="true"][contenteditable="true"]', '[data-slate-editor="true"]'],
    sendButton: ['[data-session-switch-target="send-query"]'],
    // the only known signal is the button's text ("停止回答"): quiet time instead
    streaming: [],
    conversation: ["^/chat/([\\w-]+)"],
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
    // the break button is always in the DOM; it means "streaming" only while not `!hidden`
    streaming: ['[data-testid="chat_input_local_break_button"]:not([class~="!hidden"]):not(.hidden)'],
    conversation: ["^/chat/([\\w-]+)"],
  },
  grok: {
    id: "grok",
    name: "Grok",
    hosts: ["grok.com"],
    optionalHosts: ["x.com"],
    pathsByHost: { "x.com": "^/i/grok(?:/|$)" },
    assistantMessage: ['div[id^="response-"] [data-testid="assistant-message"]', 'div[id^="response-"].items-start'],
    userMessage: ['div[id^="response-"] [data-testid="user-message"]', 'div[id^="response-"].items-end'],
    exclude: [".thinking-container"],
    composer: ['div.tiptap.ProseMirror[contenteditable="true"]', 'form [contenteditable="true"]', "form textarea"],
    sendButton: ['form button[type="submit"]'],
    streaming: ['button[aria-label="Stop model response"]'],
    conversation: ["^/c/([\\w-]+)", "[?&]conversation=(\\d+)"],
  },
  perplexity: {
    id: "perplexity",
    name: "Perplexity",
    hosts: ["www.perplexity.ai", "perplexity.ai"],
    assistantMessage: ['div[id^="markdown-content-"]'],
    userMessage: ['[class*="group/query"]', '[data-testid="user-query"]'],
    exclude: [".citation", '[data-testid="sources"]', "details", ".reasoning"],
    composer: ['#ask-input[contenteditable="true"]', "textarea#ask-input"],
    // Enter is what sends today; a submit button is used where one is there
    sendButton: ['button[data-testid="submit-button"]'],
    streaming: ['button[data-testid="stop-generating-response-button"]', 'div[id^="markdown-content-"][aria-busy="true"]'],
    conversation: ["^/search/([\\w.-]+)"],
  },
  aistudio: {
    id: "aistudio",
    name: "Google AI Studio",
    hosts: ["aistudio.google.com"],
    assistantMessage: ["ms-chat-turn .chat-turn-container.model"],
    userMessage: ["ms-chat-turn .chat-turn-container.user"],
    exclude: ["ms-thought-chunk", ".actions-container", "ms-run-button"],
    composer: ["ms-prompt-box textarea", "footer textarea", "ms-autosize-textarea textarea"],
    // every turn has its own `ms-run-button` (re-run that turn): only the prompt box's sends
    sendButton: ["ms-prompt-box ms-run-button button", "footer ms-run-button button", "ms-run-button button:not(ms-chat-turn *)", "run-button button"],
    streaming: ["ms-chat-turn .turn-loading", "ms-prompt-box ms-run-button button.stoppable", "footer ms-run-button button.stoppable"],
    // `/prompts/new_chat` is the empty new chat, not a conversation
    conversation: ["^/prompts/(?!new_chat(?:[/?#]|$))([\\w-]+)"],
  },
  mistral: {
    id: "mistral",
    name: "Mistral",
    hosts: ["chat.mistral.ai"],
    assistantMessage: ['div[data-message-author-role="assistant"]'],
    userMessage: ['div[data-message-author-role="user"]'],
    exclude: ['[data-message-part-type="reasoning"]'],
    composer: ['div.ProseMirror[contenteditable="true"]', 'textarea[name="message.text"]'],
    sendButton: ['form button[type="submit"]', 'button[type="submit"][aria-label="Send question"]'],
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
    composer: ['textarea[data-testid="composer-input"]', 'textarea[placeholder^="Start a new message"]', 'textarea[placeholder^="Start a message"]'],
    sendButton: ['button[data-testid="send-button"]', 'button[aria-label="Send message"]'],
    streaming: ['button[data-testid="stop-button"]', 'button[aria-label="Stop generating"]'],
    conversation: ["[?&]room=([\\w-]+)", "^/chat/([\\w-]+)"],
  },
};

export type SelectorOverrides = Partial<Record<SelectorField, string[]>>;
export type AdapterOverrides = Partial<Record<AdapterId, SelectorOverrides>>;

/** The adapter for a host name (optional hosts included), or `null` when it is not a chat site. */
export function adapterForHost(host: string): SiteAdapter | null {
  const h = host.toLowerCase();
  for (const id of SITE_IDS) {
    const a = ADAPTERS[id];
    if (a.hosts.includes(h) || a.optionalHosts?.includes(h)) return a;
  }
  return null;
}

/** The adapter for a page, only where it acts: on x.com, only on Grok's own paths. */
export function adapterForLocation(host: string, pathname: string): SiteAdapter | null {
  const a = adapterForHost(host);
  if (!a) return null;
  return adapterActiveAt(a, host, pathname) ? a : null;
}

/** Whether `adapter` acts on this path of this host (a host without a path rule: everywhere). */
export function adapterActiveAt(adapter: SiteAdapter, host: string, pathname: string): boolean {
  const rule = adapter.pathsByHost?.[host.toLowerCase()];
  if (rule === undefined) return true;
  try {
    return new RegExp(rule).test(pathname);
  } catch {
    return false;
  }
}

/**
 * An adapter with the user's selector lists in place of the shipped ones; empty lists are
 * ignored. User-turn selectors are the exception: an override's are added to the shipped ones,
 * never replace them, because they only ever exclude — so no override or imported pack can make
 * the person's own messages count as the model's replies.
 */
export function applyOverrides(adapter: SiteAdapter, overrides: AdapterOverrides | undefined): SiteAdapter {
  const o = overrides?.[adapter.id];
  if (!o) return adapter;
  const out: SiteAdapter = { ...adapter };
  for (const f of SELECTOR_FIELDS) {
    const list = o[f];
    if (!Array.isArray(list) || list.length === 0) continue;
    const clean = list.filter((s) => typeof s === "string" && s.trim() !== "");
    out[f] = f === "userMessage" ? [...new Set([...clean, ...adapter.userMessage])] : clean;
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

/** Hosts behind an optional permission (the manifest's `optional_host_permissions`). */
export function optionalHosts(): string[] {
  return SITE_IDS.flatMap((id) => ADAPTERS[id].optionalHosts ?? []);
}
