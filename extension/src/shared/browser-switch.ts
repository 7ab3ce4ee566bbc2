/**
 * The browser-tools switch (DESIGN §8.3): its storage.local key, off unless the person turns it
 * on in the popup, and the optional host permissions the popup asks for when it does (listed in
 * the manifest's `optional_host_permissions`, never granted at install).
 */
export const BROWSER_TOOLS_KEY = "browserTools";
export const ALL_SITES = ["https://*/*", "http://*/*"];
